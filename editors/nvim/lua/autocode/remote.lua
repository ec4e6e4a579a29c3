-- Connecting to a server that is already listening (setup{ remote = ... }):
-- `autocode-lsp --tcp HOST:PORT`, `--socket PATH` or `--ws HOST:PORT`, with the
-- token the server printed the file of. See docs/security.md.
--
--   require('autocode').setup({
--     remote = { tcp = '127.0.0.1:8765', token_file = vim.env.XDG_RUNTIME_DIR .. '/autocode/lsp-tcp-42.token' },
--     -- or: remote = { socket = '~/.autocode-sock/lsp.sock', token_file = ... },
--     -- or: remote = { ws = 'ws://127.0.0.1:8766', token_file = ... },
--   })
--
-- Over TCP and the socket the token goes in initialize; over WebSocket in the
-- handshake's X-AutoCode-Token header (lua/autocode/websocket.lua).
local M = {}

--- Validates the `remote` option; raises a message naming what to fix.
--- @param remote table|nil
function M.validate(remote)
  if remote == nil then
    return
  end
  vim.validate('remote', remote, 'table')
  vim.validate('remote.tcp', remote.tcp, 'string', true)
  vim.validate('remote.socket', remote.socket, 'string', true)
  vim.validate('remote.ws', remote.ws, 'string', true)
  vim.validate('remote.token_file', remote.token_file, 'string', true)
  local given = (remote.tcp and 1 or 0) + (remote.socket and 1 or 0) + (remote.ws and 1 or 0)
  if given ~= 1 then
    error('autocode: remote needs exactly one of tcp = "HOST:PORT", socket = "PATH" or ws = "ws://HOST:PORT"', 0)
  end
  if remote.ws and not require('autocode.websocket').parse(remote.ws) then
    error(('autocode: remote.ws must be ws://HOST:PORT such as ws://127.0.0.1:8766 (got %q)'):format(remote.ws), 0)
  end
  if remote.tcp and not remote.tcp:match('^%[?[^%s%]]+%]?:%d+$') then
    error(('autocode: remote.tcp must be HOST:PORT such as 127.0.0.1:8765 (got %q)'):format(remote.tcp), 0)
  end
end

--- Where the server listens, for messages.
function M.where(remote)
  if remote.ws then
    return remote.ws:find('^ws://') and remote.ws or 'ws://' .. remote.ws
  end
  return remote.tcp or vim.fs.normalize(remote.socket)
end

--- The `cmd` of the LSP config: a connection instead of a process.
--- @param remote table
function M.cmd(remote)
  if remote.ws then
    return require('autocode.websocket').cmd(remote.ws, function()
      if not remote.token_file then
        return nil
      end
      local token, err = M.read_token(remote.token_file)
      if not token then
        vim.schedule(function()
          vim.notify(err, vim.log.levels.ERROR)
        end)
      end
      return token
    end)
  end
  if remote.socket then
    return vim.lsp.rpc.connect(vim.fs.normalize(remote.socket))
  end
  local host, port = remote.tcp:match('^%[?([^%]]+)%]?:(%d+)$')
  return vim.lsp.rpc.connect(host, tonumber(port))
end

--- The token in `path`, or nil and a message saying what to fix.
--- @param path string
--- @return string|nil, string|nil
function M.read_token(path)
  local file = vim.fs.normalize(path)
  local fd = io.open(file, 'r')
  if not fd then
    return nil,
      ('autocode: cannot read the token file %s. Set remote.token_file to the file the server printed when it started ("token file: PATH"); a new one is made at every start unless the server was given --token-file.'):format(
        file
      )
  end
  local token = vim.trim(fd:read('*a') or '')
  fd:close()
  if token == '' then
    return nil, ('autocode: the token file %s is empty'):format(file)
  end
  return token
end

--- `before_init` of the LSP config: puts the token into initializationOptions.autocode.token.
function M.before_init(params, _)
  local remote = require('autocode.config').options.remote
  if not remote or not remote.token_file or remote.ws then
    return -- over WebSocket the token went in the handshake
  end
  local token, err = M.read_token(remote.token_file)
  if not token then
    vim.notify(err, vim.log.levels.ERROR)
    return
  end
  params.initializationOptions = vim.tbl_deep_extend(
    'force',
    type(params.initializationOptions) == 'table' and params.initializationOptions or {},
    { autocode = { token = token } }
  )
end

--- Tells the person which option to fix when the server refused the token.
local function explain(remote)
  local msg
  if remote.token_file then
    msg = ('autocode: the server at %s refused the token of %s. It makes a new token at every start: point remote.token_file at the file it printed this time, or start it with --token-file.'):format(
      M.where(remote),
      remote.token_file
    )
  else
    msg = ('autocode: the server at %s asks for its token. Set remote.token_file to the token file it printed when it started ("token file: PATH").'):format(
      M.where(remote)
    )
  end
  vim.notify(msg, vim.log.levels.ERROR)
end

--- `on_error` of the LSP config: a refused token gets the option to fix.
function M.on_error(_, err)
  local remote = require('autocode.config').options.remote
  local text = type(err) == 'table' and tostring(err.message or vim.inspect(err)) or tostring(err)
  if remote and (text:find('needs its token', 1, true) or text:find('unauthorized', 1, true)) then
    explain(remote)
  end
end

--- Called from the plugin's on_exit: a listening server that closed the connection before
--- `initialize` finished refused us (Neovim reports the server's error itself, without the fix).
--- @return boolean true when it explained the exit
function M.on_exit(client_id)
  local remote = require('autocode.config').options.remote
  local c = vim.lsp.get_client_by_id(client_id)
  if not remote or not c or c.initialized then
    return false
  end
  -- A WebSocket connection that failed for another reason than the token says that reason.
  local other = remote.ws and require('autocode.websocket').take_failure()
  vim.schedule(function()
    if other then
      vim.notify(other, vim.log.levels.ERROR)
    else
      explain(remote)
    end
  end)
  return true
end

return M
