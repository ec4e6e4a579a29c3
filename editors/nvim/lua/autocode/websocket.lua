-- The LSP client over WebSocket, for `autocode-lsp --ws HOST:PORT`
-- (setup{ remote = { ws = 'ws://127.0.0.1:8766', token_file = ... } }).
--
-- Neovim's RPC client speaks Content-Length framed streams only. So that all of
-- it (requests, server requests, exit handling) stays Neovim's own, this module
-- relays: Neovim connects to a unix socket in its own private temporary folder
-- (0700, and the socket is removed after the one connection it takes), and each
-- framed message is carried as one WebSocket text message to the server and
-- back. The token goes in the handshake's X-AutoCode-Token header
-- (docs/security.md); a refused handshake closes the relay before anything is
-- sent, and autocode.remote says what to fix.
local uv = vim.uv or vim.loop
local bit = require('bit')

local M = {}

M.TOKEN_HEADER = 'X-AutoCode-Token'

--- Why the last connection failed when it was not the token (autocode.remote says that one).
--- @type string|nil
local failure

--- Returns and clears the last failure that was not about the token.
--- @return string|nil
function M.take_failure()
  local f = failure
  failure = nil
  return f
end

--- 'ws://HOST:PORT[/PATH]' or 'HOST:PORT' -> host, port, path; nil when malformed.
--- @param address string
--- @return string|nil, integer|nil, string|nil
function M.parse(address)
  local rest = address:gsub('^ws://', '')
  local host, port, path = rest:match('^%[([^%]%s]+)%]:(%d+)(.*)$')
  if not host then
    host, port, path = rest:match('^([^:/%s%[%]]+):(%d+)(.*)$')
  end
  port = tonumber(port)
  if not host or not port or port < 1 or port > 65535 or (path ~= '' and not path:match('^/%S*$')) then
    return nil
  end
  return host, port, path == '' and '/' or path
end

local function xor_mask(payload, key)
  local k = { key:byte(1, 4) }
  local out = {}
  for i = 1, #payload do
    out[i] = string.char(bit.bxor(payload:byte(i), k[(i - 1) % 4 + 1]))
  end
  return table.concat(out)
end

--- One client frame (clients mask every frame, RFC 6455 5.3).
local function frame(opcode, payload)
  local n = #payload
  local head
  if n < 126 then
    head = string.char(0x80 + opcode, 0x80 + n)
  elseif n < 65536 then
    head = string.char(0x80 + opcode, 0x80 + 126, bit.rshift(n, 8), bit.band(n, 0xff))
  else
    head = string.char(0x80 + opcode, 0x80 + 127, 0, 0, 0, 0)
      .. string.char(bit.band(bit.rshift(n, 24), 0xff), bit.band(bit.rshift(n, 16), 0xff))
      .. string.char(bit.band(bit.rshift(n, 8), 0xff), bit.band(n, 0xff))
  end
  local key = uv.random(4)
  return head .. key .. xor_mask(payload, key)
end
M._frame = frame

--- The first whole frame in `buf`: fin, opcode, payload, rest; nil while incomplete.
local function next_frame(buf)
  if #buf < 2 then
    return nil
  end
  local b1, b2 = buf:byte(1, 2)
  local n, pos = bit.band(b2, 0x7f), 3
  if n == 126 then
    if #buf < 4 then
      return nil
    end
    local a, b = buf:byte(3, 4)
    n, pos = a * 256 + b, 5
  elseif n == 127 then
    if #buf < 10 then
      return nil
    end
    n = 0
    for i = 3, 10 do
      n = n * 256 + buf:byte(i)
    end
    pos = 11
  end
  local key
  if bit.band(b2, 0x80) ~= 0 then
    if #buf < pos + 3 then
      return nil
    end
    key, pos = buf:sub(pos, pos + 3), pos + 4
  end
  if #buf < pos + n - 1 then
    return nil
  end
  local payload = buf:sub(pos, pos + n - 1)
  if key then
    payload = xor_mask(payload, key)
  end
  return bit.band(b1, 0x80) ~= 0, bit.band(b1, 0x0f), payload, buf:sub(pos + n)
end
M._next_frame = next_frame

--- The first whole Content-Length framed body in `buf`: body, rest; nil while incomplete.
local function next_body(buf)
  local stop = buf:find('\r\n\r\n', 1, true)
  if not stop then
    return nil
  end
  local n = tonumber(buf:sub(1, stop):match('[Cc]ontent%-[Ll]ength:%s*(%d+)'))
  if not n or #buf < stop + 3 + n then
    return nil
  end
  return buf:sub(stop + 4, stop + 3 + n), buf:sub(stop + 4 + n)
end

--- The `cmd` of the LSP config for a WebSocket server.
--- @param address string 'ws://HOST:PORT[/PATH]' or 'HOST:PORT'
--- @param token fun(): string|nil read at each connection (the token file may change between starts)
--- @return fun(dispatchers: vim.lsp.rpc.Dispatchers): vim.lsp.rpc.PublicClient
function M.cmd(address, token)
  return function(dispatchers)
    local host, port, path = assert(M.parse(address))
    local url = ('ws://%s:%d%s'):format(host:find(':', 1, true) and '[' .. host .. ']' or host, port, path)
    failure = nil
    -- tempname() is a name inside Neovim's own temporary folder, which only this user can enter.
    local relay = vim.fn.tempname()
    local listener = assert(uv.new_pipe(false))
    assert(listener:bind(relay))
    local tcp = assert(uv.new_tcp())
    local peer ---@type uv.uv_pipe_t|nil
    local state = 'handshake' -- then 'open', then 'closed'
    local to_server, to_editor = {}, {}
    local from_server, from_editor, parts = '', '', {}

    -- Ends Neovim's side with an end-of-stream (not a reset, which it would report as a read
    -- error instead of an exit); the pipe closes once that side closed it, or after 5 s.
    local function end_peer()
      if not peer or peer:is_closing() then
        return
      end
      local p = peer
      p:shutdown(function()
        local timer = assert(uv.new_timer())
        timer:start(5000, 0, function()
          timer:close()
          if not p:is_closing() then
            p:close()
          end
        end)
      end)
    end

    local function close_all()
      if state == 'closed' then
        return
      end
      state = 'closed'
      if not tcp:is_closing() then
        tcp:close()
      end
      -- Until Neovim's side has connected, the relay stays open so that side sees the end
      -- (an unanswered connect would only warn, and never end the client): see listen below.
      if peer then
        pcall(os.remove, relay)
        end_peer()
      end
    end

    local function fail(text)
      if state ~= 'closed' then
        failure = text
      end
      close_all()
    end

    local function to_peer(body)
      local framed = ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
      if peer then
        peer:write(framed)
      else
        table.insert(to_editor, framed)
      end
    end

    local function on_frames()
      while state == 'open' do
        local fin, opcode, payload, rest = next_frame(from_server)
        if fin == nil then
          return
        end
        from_server = rest
        if opcode == 0 or opcode == 1 or opcode == 2 then
          table.insert(parts, payload)
          if fin then
            to_peer(table.concat(parts))
            parts = {}
          end
        elseif opcode == 9 then
          tcp:write(frame(10, payload))
        elseif opcode == 8 then
          tcp:write(frame(8, payload:sub(1, 2)))
          close_all()
        end
      end
    end

    local function on_server(err, chunk)
      if err or not chunk then
        if state == 'handshake' then
          fail(('autocode: the server at %s closed the connection during the WebSocket handshake (%s)'):format(url, err or 'end of stream'))
        else
          close_all()
        end
        return
      end
      from_server = from_server .. chunk
      if state == 'handshake' then
        local stop = from_server:find('\r\n\r\n', 1, true)
        if not stop then
          return
        end
        local head = from_server:sub(1, stop - 1)
        local status = tonumber(head:match('^HTTP/1%.%d (%d%d%d)'))
        if status ~= 101 then
          local n = tonumber(head:match('\r\n[Cc]ontent%-[Ll]ength:%s*(%d+)')) or 0
          if #from_server < stop + 3 + n then
            return -- the server's reason is still coming
          end
          local reason = vim.trim(from_server:sub(stop + 4, stop + 3 + n))
          if status == 401 then
            close_all() -- the token: autocode.remote explains which option to fix
          else
            fail(('autocode: the server at %s refused the WebSocket handshake (HTTP %s): %s'):format(url, tostring(status), reason))
          end
          return
        end
        from_server = from_server:sub(stop + 4)
        state = 'open'
        for _, body in ipairs(to_server) do
          tcp:write(frame(1, body))
        end
        to_server = {}
      end
      on_frames()
    end

    assert(listener:listen(1, function(err)
      if err then
        return
      end
      peer = assert(uv.new_pipe(false))
      listener:accept(peer)
      listener:close() -- one connection only
      pcall(os.remove, relay)
      if state == 'closed' then
        end_peer()
      end
      for _, framed in ipairs(to_editor) do
        peer:write(framed)
      end
      to_editor = {}
      peer:read_start(function(rerr, chunk)
        if rerr or not chunk then
          if state == 'open' then
            tcp:write(frame(8, string.char(0x03, 0xe8))) -- 1000: normal closure
          end
          close_all()
          if not peer:is_closing() then
            peer:close()
          end
          return
        end
        if state == 'closed' then
          return -- what Neovim still sends after the end goes nowhere
        end
        from_editor = from_editor .. chunk
        while true do
          local body, rest = next_body(from_editor)
          if not body then
            return
          end
          from_editor = rest
          if state == 'open' then
            tcp:write(frame(1, body))
          elseif state == 'handshake' then
            table.insert(to_server, body)
          end
        end
      end)
    end))

    local addresses = uv.getaddrinfo(host, nil, { socktype = 'stream' }) or {}
    local ip = addresses[1] and addresses[1].addr or host
    local secret = token()
    tcp:connect(ip, port, function(err)
      if err then
        fail(('autocode: could not connect to %s (%s). Start the server with: autocode-lsp --ws %s:%d, or fix remote.ws.'):format(url, err, host, port))
        return
      end
      local lines = {
        ('GET %s HTTP/1.1'):format(path),
        ('Host: %s:%d'):format(host:find(':', 1, true) and '[' .. host .. ']' or host, port),
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Key: ' .. vim.base64.encode(uv.random(16)),
        'Sec-WebSocket-Version: 13',
      }
      if secret then
        table.insert(lines, ('%s: %s'):format(M.TOKEN_HEADER, secret))
      end
      tcp:write(table.concat(lines, '\r\n') .. '\r\n\r\n')
      tcp:read_start(on_server)
    end)

    return vim.lsp.rpc.connect(relay)(dispatchers)
  end
end

return M
