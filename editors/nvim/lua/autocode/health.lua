-- :checkhealth autocode: Neovim version, the server and its version, the
-- protocol version, the workspace's learned record, the model (lua/autocode/model.lua) and where
-- memories live.
local M = {}

local field = require('autocode.util').field

--- The oldest Neovim with every API below: vim.lsp.config and vim.lsp.enable,
--- the function form of root_dir (bufnr, on_dir), reuse_client in a config,
--- Client methods called with `:` (client:request, client:notify) and the
--- vim.validate(name, value, types, optional) form all came with 0.11.0.
M.minimum = '0.11.0'

M.api_names = { 'vim.lsp.config', 'vim.lsp.enable', 'vim.lsp.start', 'vim.fs.root', 'vim.fs.joinpath', 'vim.uv' }

--- The APIs of `api_names` this Neovim lacks (empty when it has them all).
--- @return string[]
function M.missing_api()
  local missing = {}
  if vim.fn.has('nvim-' .. M.minimum) ~= 1 then
    table.insert(missing, 'Neovim ' .. M.minimum)
  end
  for _, name in ipairs(M.api_names) do
    local value = _G
    for part in name:gmatch('[^.]+') do
      value = type(value) == 'table' and value[part] or nil
    end
    if value == nil then
      table.insert(missing, name)
    end
  end
  return missing
end

function M.check()
  local health = vim.health
  local client = require('autocode.client')
  local config = require('autocode.config')
  local protocol = require('autocode.protocol')

  health.start('Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  local missing = M.missing_api()
  if #missing == 0 then
    health.ok(('Neovim %s has every API the plugin uses (%s)'):format(version, table.concat(M.api_names, ', ')))
  else
    health.error(('Neovim %s lacks %s'):format(version, table.concat(missing, ', ')), {
      'Install Neovim ' .. M.minimum .. ' or newer.',
    })
    return
  end

  health.start('AutoCode language server')
  local cfg = client.resolved_config()
  local cmd = type(cfg.cmd) == 'table' and cfg.cmd or config.cmd()
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    health.error(('%q is not an executable on PATH'):format(cmd[1]), {
      'Install the server: ' .. config.install_hint(),
      "Or point the plugin at it: require('autocode').setup{ command = { '/path/to/autocode-lsp' } }",
    })
    return
  end
  health.ok(('server command: %s (%s)'):format(table.concat(cmd, ' '), exe))
  if vim.lsp.is_enabled and not vim.lsp.is_enabled('autocode') then
    health.info("the autocode config is not enabled: call vim.lsp.enable('autocode') or require('autocode').setup{}")
  end

  local c, err = client.ensure()
  if not c then
    health.error(err)
    return
  end
  local ierr, info = client.call_sync(protocol.commands.protocol_info, {}, config.options.timeout_ms, c)
  if ierr then
    health.error('the server did not answer autocode.protocol.info: ' .. client.describe(ierr), {
      'See :LspLog and the server log file.',
    })
    return
  end
  health.ok('server version ' .. tostring(field(info, 'serverVersion') or '?'))
  local pv = tostring(field(info, 'protocolVersion') or '?')
  if pv:match('^(%d+)') == protocol.version:match('^(%d+)') then
    health.ok('protocol version ' .. pv)
  else
    health.warn(('protocol version %s, but this plugin speaks %s'):format(pv, protocol.version), {
      'Update the plugin and AutoCode together.',
    })
  end
  if field(info, 'clientOptedIn') == false then
    health.warn('the server did not take this client\'s experimental.autocode opt-in; questions and plans arrive as plain LSP messages')
  end

  health.start('Workspace')
  local folders = field(info, 'workspaces') or {}
  local root = client.workspace_for()
  if #folders == 0 then
    health.info(
      'no workspace folder: memory is global only; task commands, doctor and forget need a folder (open a file inside a git repository)'
    )
  else
    health.ok('workspace folders: ' .. table.concat(folders, ', '))
  end
  local derr, doctor = client.call_sync(protocol.commands.doctor, root and { workspace = root } or {}, config.options.timeout_ms, c)
  if client.kind(derr) == protocol.kinds.no_repository then
    return
  elseif derr then
    health.error('autocode.doctor failed: ' .. client.describe(derr))
    return
  end
  local report = field(doctor, 'report') or {}
  local record = field(report, 'record') or {}
  local status = tostring(field(record, 'status') or 'unknown')
  if status == 'valid' or status == 'missing' then
    health.ok(('learned record: %s (%s)'):format(status, tostring(field(record, 'path') or '.autocode/project.json')))
  else
    health.warn('learned record: ' .. status, {
      'It is ignored until fixed. :AutoCode doctor shows the problems; :AutoCode forget removes it.',
    })
  end
  require('autocode.model').health(c, report, root)
  health.start('Memory')
  local mem = field(report, 'memory')
  local where = field(mem, 'location', 'path')
  if where then
    local details = {}
    for _, k in ipairs({ 'store', 'search_mode', 'status' }) do
      if field(mem, k) then
        table.insert(details, tostring(mem[k]))
      end
    end
    local line = 'memories live in ' .. tostring(where)
    if #details > 0 then
      line = line .. ' (' .. table.concat(details, ', ') .. ')'
    end
    if field(mem, 'ok') == false then
      health.warn(line, { 'Run :AutoCode doctor for the memory store problem.' })
    else
      health.ok(line)
    end
  else
    health.info('the server did not say where memories live (no memory section in doctor)')
  end
end

return M
