-- The person's trust in what a repository's settings files ask for (model
-- endpoints, key variables, memory stores): the one prompt that names them and
-- :AutoCode trust. The prompt only ever answers the person's own command
-- (:AutoCode start, :AutoCode trust); trust is recorded only on an explicit yes.
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local C = protocol.commands
local K = protocol.kinds
local M = {}

M.yes_label = 'Yes, trust these values'

--- True for an error that a yes to the repository's values could clear.
function M.needed(err)
  local kind = client.kind(err)
  return kind == K.trust_required or kind == K.trust_changed
end

--- The prompt's text: what the repository asks for, one sentence a line.
--- @param says string[] the sentences of a trustRequired error or a TrustResult
--- @param changed boolean the values changed since they were last shown or trusted
function M.prompt_text(says, changed)
  local lines = {
    changed and "This repository's settings changed since you last saw them. They now ask AutoCode to:"
      or "This repository's settings ask AutoCode to:",
  }
  for _, sentence in ipairs(says or {}) do
    table.insert(lines, '  - ' .. sentence)
  end
  table.insert(lines, 'Trust exactly these values for this repository?')
  return table.concat(lines, '\n')
end

--- Asks the person (inside a coroutine) about `data` (a trustRequired/trustChanged error's data or
--- a TrustResult) and, on their yes, records trust in exactly the values shown. When the files
--- changed in between, the new values are shown and asked about again. True when trust was recorded.
--- @param data {says: string[], digest: string, status?: string}
--- @param workspace string|nil
--- @param c vim.lsp.Client|nil
function M.ask(data, workspace, c)
  local changed = data.status == 'changed'
  while true do
    if not ui.confirm(M.prompt_text(data.says, changed), M.yes_label) then
      return false
    end
    local err = client.await(C.project_trust, { workspace = workspace, confirm = true, digest = data.digest }, c)
    if not err then
      return true
    end
    if client.kind(err) ~= K.trust_changed or type(err.data) ~= 'table' then
      ui.error('trust failed: ' .. client.describe(err))
      return false
    end
    data, changed = err.data, true
  end
end

--- `:AutoCode start`'s answer to a trustRequired error (inside a coroutine): the prompt, then
--- trust on a yes. True when the command may be sent again.
function M.resolve(err, workspace, c)
  local data = type(err.data) == 'table' and err.data or {}
  if M.ask(data, workspace or data.workspace, c) then
    ui.notify("trusted this repository's values")
    return true
  end
  ui.notify("not trusted: nothing was started, and the repository's values stay ignored (:AutoCode trust asks again)")
  return false
end

--- :AutoCode trust [revoke]: shows what the workspace's settings ask for and asks; `revoke`
--- forgets the trust instead.
function M.run(args)
  client.run(function()
    local root = client.workspace_for()
    if not root then
      ui.error('trust needs a workspace folder: open a file inside a git repository or :cd into one')
      return
    end
    local revoke = args and args[1] == 'revoke'
    if args and args[1] and not revoke then
      ui.error(('unknown argument %q: use :AutoCode trust or :AutoCode trust revoke'):format(args[1]))
      return
    end
    local c = client.ensure()
    local err, result = client.await(C.project_trust, { workspace = root, revoke = revoke or nil }, c)
    if err then
      ui.error('trust failed: ' .. client.describe(err))
      return
    end
    if revoke then
      ui.notify(result.recorded and "trust revoked: the repository's values are ignored again"
        or 'this repository was not trusted; nothing to revoke')
    elseif result.status == 'nothing-asked' then
      ui.notify("this repository's settings name no endpoint, key variable or memory store; nothing to trust")
    elseif result.trusted then
      ui.notify("already trusted: this repository's settings ask to " .. table.concat(result.says or {}, '; '))
    elseif M.ask(result, root, c) then
      ui.notify("trusted this repository's values")
    else
      ui.notify("not trusted; the repository's values stay ignored")
    end
  end)
end

return M
