-- Finding or starting the AutoCode language server client, and calling its
-- commands. Every call either gets the server's answer or an error; a server
-- that exits while a call is pending turns into an error, never a hang.
local config = require('autocode.config')
local protocol = require('autocode.protocol')

local M = {}

local NAME = 'autocode'

--- A live AutoCode client for the current buffer (or cwd), if one runs.
--- @return vim.lsp.Client|nil
function M.get()
  local buf = vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ name = NAME, bufnr = buf })
  if #attached > 0 then
    return attached[1]
  end
  local all = vim.lsp.get_clients({ name = NAME })
  if #all == 0 then
    return nil
  end
  local root = M.workspace_for(buf)
  for _, c in ipairs(all) do
    if root and c.root_dir == root then
      return c
    end
  end
  if root == nil then
    for _, c in ipairs(all) do
      if not c.root_dir then
        return c
      end
    end
  end
  return all[1]
end

--- The resolved LSP config (rtp lsp/autocode.lua merged with setup{} and vim.lsp.config calls).
function M.resolved_config()
  local ok, cfg = pcall(function()
    return vim.lsp.config[NAME]
  end)
  if ok and cfg then
    return vim.deepcopy(cfg)
  end
  return config.lsp_config()
end

--- The workspace folder for a buffer: its root marker, else the cwd's; nil when neither is in a repository.
--- @param buf integer|nil
--- @return string|nil
function M.workspace_for(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local cfg = M.resolved_config()
  local markers = cfg.root_markers or { '.git' }
  local name = vim.api.nvim_buf_get_name(buf)
  if vim.bo[buf].buftype == '' and name ~= '' then
    local root = vim.fs.root(buf, markers)
    if root then
      return root
    end
  end
  return vim.fs.root(vim.fn.getcwd(), markers)
end

--- Returns a running client, starting one for the current buffer or cwd if none runs.
--- @return vim.lsp.Client|nil client, string|nil err
function M.ensure()
  local c = M.get()
  if c and not c:is_stopped() then
    return c
  end
  local cfg = M.resolved_config()
  local buf = vim.api.nvim_get_current_buf()
  local is_file = vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) ~= ''
  if type(cfg.root_dir) ~= 'string' then
    cfg.root_dir = M.workspace_for(buf)
  end
  cfg.workspace_required = false
  local exe = type(cfg.cmd) == 'table' and cfg.cmd[1] or config.cmd()[1]
  if exe and vim.fn.executable(exe) ~= 1 then
    return nil,
      ('cannot start the AutoCode server: %q is not an executable on PATH. '
        .. 'Install it with: %s; or point setup{ command = ... } at autocode-lsp.'):format(exe, config.install_hint())
  end
  local ok, id = pcall(
    vim.lsp.start,
    cfg,
    { bufnr = buf, attach = is_file, silent = true, reuse_client = cfg.reuse_client }
  )
  if not ok or not id then
    return nil,
      ('cannot start the AutoCode server (%s): %s'):format(
        table.concat(type(cfg.cmd) == 'table' and cfg.cmd or { tostring(cfg.cmd) }, ' '),
        ok and 'see :LspLog' or tostring(id)
      )
  end
  return vim.lsp.get_client_by_id(id)
end

--- The error of a call whose server went away. `message` is what the plugin says of that exit
--- (handlers.on_exit), so a caller's one line carries it; without one, a generic text.
--- @param client_id integer
--- @param message string|nil
function M.stopped_error(client_id, message)
  return {
    code = -32099,
    message = message
      or ('the AutoCode server (client %d) has stopped; see :LspLog, then run the command again to restart it'):format(
        client_id
      ),
    data = { kind = 'serverStopped' },
  }
end

--- The calls waiting on each client: client id -> { [finish] = true }.
local pending = {}

--- Ends every call still waiting on a client that exited, with `err`; returns how many there were.
--- Called from the plugin's on_exit, before Neovim forgets the client.
--- @param client_id integer
--- @param err table
--- @return integer
function M.abandon(client_id, err)
  local waiting = vim.tbl_keys(pending[client_id] or {})
  pending[client_id] = nil
  for _, finish in ipairs(waiting) do
    -- One caller's failing callback must not keep the others waiting: its error is raised later.
    local ok, e = pcall(finish, err, nil)
    if not ok then
      vim.schedule(function()
        error(e, 0)
      end)
    end
  end
  return #waiting
end

--- Calls `command` with one argument object. `cb(err, result)` runs exactly once,
--- on the main loop: err is nil or {code, message, data}.
--- @param command string
--- @param args table|nil
--- @param cb fun(err: table|nil, result: any)
--- @param client vim.lsp.Client|nil
function M.call(command, args, cb, client)
  local err
  if not client then
    client, err = M.ensure()
  end
  if not client then
    vim.schedule(function()
      cb({ code = -32099, message = err, data = { kind = 'serverUnavailable' } }, nil)
    end)
    return
  end
  local finished = false
  local timer = assert(vim.uv.new_timer())
  local function finish(e, r)
    if finished then
      return
    end
    finished = true
    if pending[client.id] then
      pending[client.id][finish] = nil
    end
    timer:stop()
    if not timer:is_closing() then
      timer:close()
    end
    cb(e, r)
  end
  pending[client.id] = pending[client.id] or {}
  pending[client.id][finish] = true
  local sent = false
  local function send()
    sent = true
    -- A config whose on_init is not the plugin's still gives each server the model first.
    local model = require('autocode.model')
    if model.last[client.id] == nil and command ~= protocol.commands.session_configure then
      model.send(client)
    end
    -- An empty Lua table would encode as a JSON list; the server wants an object.
    if args == nil or next(args) == nil then
      args = vim.empty_dict()
    end
    local params = { command = command, arguments = { args } }
    local ok = client:request('workspace/executeCommand', params, function(e, r)
      finish(e, r)
    end)
    if not ok then
      finish(M.stopped_error(client.id), nil)
    end
  end
  -- Waits for initialization before sending. A server that goes away ends the call from the
  -- plugin's on_exit (M.abandon, with what it says of the exit); this check only ends the calls
  -- of a client Neovim has forgotten without it (a config whose on_exit is not the plugin's).
  timer:start(
    0,
    50,
    vim.schedule_wrap(function()
      if finished then
        return
      end
      if vim.lsp.get_client_by_id(client.id) == nil then
        finish(M.stopped_error(client.id), nil)
      elseif not sent and client.initialized then
        send()
      end
    end)
  )
end

--- Calls `command` and waits (processing events) for its answer.
--- @return table|nil err, any result
function M.call_sync(command, args, timeout_ms, client)
  local done, err, result = false, nil, nil
  M.call(command, args, function(e, r)
    done, err, result = true, e, r
  end, client)
  local ok = vim.wait(timeout_ms or config.options.timeout_ms, function()
    return done
  end, 20)
  if not ok then
    return {
      code = -32098,
      message = ('the AutoCode server did not answer %s within %d ms'):format(
        command,
        timeout_ms or config.options.timeout_ms
      ),
      data = { kind = 'timeout' },
    },
      nil
  end
  return err, result
end

--- Calls `command` from inside a coroutine (yielding until the answer) or,
--- outside one, like call_sync. Returns err, result.
function M.await(command, args, client)
  local co = coroutine.running()
  if co and coroutine.isyieldable() then
    M.call(command, args, function(e, r)
      M.resume(co, e, r)
    end, client)
    return coroutine.yield()
  end
  return M.call_sync(command, args, nil, client)
end

--- Resumes a coroutine, reporting (not swallowing) an error raised inside it.
function M.resume(co, ...)
  local ok, e = coroutine.resume(co, ...)
  if not ok then
    vim.schedule(function()
      vim.notify('AutoCode: internal error: ' .. tostring(e), vim.log.levels.ERROR)
    end)
  end
end

--- Runs `fn` in a new coroutine so it can await prompts and calls.
function M.run(fn, ...)
  M.resume(coroutine.create(fn), ...)
end

--- What a running server supports beyond protocol 1.0, asked once per client
--- (autocode.protocol.info): the commands it serves. Runs inside a coroutine
--- or blocks briefly.
--- @param c vim.lsp.Client|nil
--- @return {commands: table<string, boolean>}
local features_by_client = {}
function M.features(c)
  c = c or M.get()
  if not c then
    return { commands = {} }
  end
  local known = features_by_client[c.id]
  if known then
    return known
  end
  local err, info = M.await(protocol.commands.protocol_info, {}, c)
  local commands = {}
  if not err and type(info) == 'table' then
    for _, name in ipairs(info.commands or {}) do
      commands[name] = true
    end
  end
  known = { commands = commands }
  if not err then
    features_by_client[c.id] = known
  end
  return known
end

--- What `features` already learned of a client, without asking (nil before the first ask).
--- @param c vim.lsp.Client
function M.known_features(c)
  return features_by_client[c.id]
end

--- The `data.kind` of an error, if it has one.
function M.kind(err)
  return type(err) == 'table' and type(err.data) == 'table' and err.data.kind or nil
end

--- A message a person can act on, for an error from `call`.
function M.describe(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local msg = err.message or vim.inspect(err)
  if M.kind(err) == protocol.kinds.no_repository then
    msg = msg
      .. ' (task commands, doctor and forget need a workspace folder: open a file inside a git repository'
      .. ' or :cd into one; memory commands still work, on global memory)'
  end
  return msg
end

return M
