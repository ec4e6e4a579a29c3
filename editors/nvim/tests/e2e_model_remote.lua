-- setup{ remote = { tcp = ... }, model = { ..., key = function } } against a server listening on
-- TCP without --allow-client-overrides: the server refuses an endpoint and a key from an editor,
-- so the plugin says how to give them and still gives it the rest of the model settings.
-- cwd: a repository. env: AUTOCODE_TEST_REMOTE ("HOST:PORT"), AUTOCODE_TEST_TOKEN_FILE.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local model = require('autocode.model')
require('autocode').setup({
  remote = { tcp = vim.env.AUTOCODE_TEST_REMOTE, token_file = vim.env.AUTOCODE_TEST_TOKEN_FILE },
  model = {
    provider = 'openai',
    model = 'scripted',
    base_url = 'http://127.0.0.1:9/v1',
    key = function()
      return 'sk-never-taken-' .. ('x'):rep(8)
    end,
  },
})
vim.cmd.edit('README.md')
local c = H.client()
H.wait(20000, function()
  local held = model.last[c.id]
  return held and not held.pending
end, 'the server to answer the model settings')
local held = model.last[c.id]
H.check(not held.error, 'the settings were taken: ' .. vim.inspect(held))
H.eq(held.apiKeySet, false, 'no key is held')
H.eq(held.settings, { provider = 'openai', model = 'scripted' }, 'the rest was given, without the URL and the key')
local n = H.wait_note(5000, 'takes no baseUrl or apiKey from an editor', vim.log.levels.WARN)
H.check(n.msg:find('--allow-client-overrides', 1, true), 'says how: ' .. n.msg)
H.log('ok key refused over the network, settings kept')
H.done()
