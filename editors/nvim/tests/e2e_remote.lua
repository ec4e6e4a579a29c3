-- setup{ remote = ... }: the plugin connects to a server that is already
-- listening (TCP, a unix socket or WebSocket) and sends the token of remote.token_file;
-- without it, or with a stale one, it says which option to fix.
-- cwd: a repository. AUTOCODE_TEST_REMOTE: "tcp=HOST:PORT", "socket=PATH" or "ws=HOST:PORT";
-- AUTOCODE_TEST_TOKEN_FILE: the token file (empty: none); AUTOCODE_TEST_EXPECT:
-- "ok", "refused" or "unreachable" (ws only: nothing listens).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local kind, where = assert(vim.env.AUTOCODE_TEST_REMOTE):match('^(%w+)=(.+)$')
local token_file = vim.env.AUTOCODE_TEST_TOKEN_FILE
local remote = { [kind] = where, token_file = (token_file ~= '' and token_file) or nil }
require('autocode').setup({ remote = remote })
H.eq(type(vim.lsp.config.autocode.cmd), 'function', 'cmd connects instead of spawning')
H.eq(#H.children(), 0, 'no server process of our own')

local exited -- the data of the plugin's AutoCodeServerExit event, once it fired
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutoCodeServerExit',
  callback = function(ev)
    exited = ev.data
  end,
})
vim.cmd.edit('README.md')
if vim.env.AUTOCODE_TEST_EXPECT == 'ok' then
  H.client()
  local info = H.call('autocode.protocol.info')
  H.eq(info.workspaces, { vim.fn.getcwd() }, 'the listening server sees our folder')
  H.eq(#H.children(), 0, 'still no server process of our own')
  H.log('ok connected with the token')
elseif vim.env.AUTOCODE_TEST_EXPECT == 'unreachable' then
  -- Nothing listens there: the reason and the command, not a word about the token. The relay
  -- ends the client; AutoCodeServerExit comes once the plugin and Neovim have said all they say
  -- of that end (and a warning that Neovim's side could not reach the relay would have come
  -- before it: that side never ends the client).
  H.wait(20000, function()
    return exited ~= nil
  end, 'the client to end')
  local n = H.note('could not connect', vim.log.levels.ERROR)
  H.check(n and n.msg:find('autocode-lsp --ws', 1, true), 'says how to start the server: ' .. vim.inspect(H.notes))
  H.check(H.note('token') == nil, 'no token explanation: ' .. vim.inspect(H.notes))
  H.check(H.note('Could not connect to') == nil, 'no warning about the relay: ' .. vim.inspect(H.notes))
  H.log('ok unreachable explained')
else
  local n = H.wait_note(20000, remote.token_file and 'refused the token' or 'asks for its token', vim.log.levels.ERROR)
  H.check(n.msg:find('remote.token_file', 1, true), 'names the option: ' .. n.msg)
  H.log('ok refusal explained')
end

-- A bad remote option is refused with the fix.
local ok, err = pcall(require('autocode').setup, { remote = { tcp = '8765' } })
H.check(not ok and tostring(err):find('HOST:PORT', 1, true), 'bad tcp address: ' .. tostring(err))
ok, err = pcall(require('autocode').setup, { remote = { token_file = 'x' } })
H.check(not ok and tostring(err):find('exactly one of', 1, true), 'no address: ' .. tostring(err))
ok, err = pcall(require('autocode').setup, { remote = { ws = 'http://127.0.0.1:1' } })
H.check(not ok and tostring(err):find('ws://HOST:PORT', 1, true), 'bad ws address: ' .. tostring(err))
ok, err = pcall(require('autocode').setup, { remote = { ws = '127.0.0.1:1', tcp = '127.0.0.1:1' } })
H.check(not ok and tostring(err):find('exactly one of', 1, true), 'two addresses: ' .. tostring(err))
H.log('ok bad options')
H.done()
