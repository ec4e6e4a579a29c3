-- setup{ model = { key_env = ... } }: the key read from Neovim's environment is held by the server
-- under that name; with health_check = true, :checkhealth autocode runs the provider check itself;
-- setup{} called again without a key makes the running server forget it.
-- cwd: the calc repository. env: AUTOCODE_TEST_URL (the endpoint), AUTOCODE_TEST_KEY (the key).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local model = require('autocode.model')
local url = vim.env.AUTOCODE_TEST_URL
H.script_ui({}, {})

require('autocode').setup({
  model = { provider = 'openai', model = 'scripted', base_url = url, key_env = 'AUTOCODE_TEST_KEY', health_check = true },
})
vim.cmd.edit('README.md')
local c = H.client()
H.wait(20000, function()
  local held = model.last[c.id]
  return held and not held.pending
end, 'the server to take the model settings')
H.eq(model.last[c.id].apiKeyEnv, 'AUTOCODE_TEST_KEY', 'held under the variable named in setup{}')
H.eq(model.last[c.id].apiKeySet, true, 'the key is held')
H.log('ok key from the environment')

vim.cmd('checkhealth autocode')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
H.check(health:find('key from setup{ model.key_env }: $AUTOCODE_TEST_KEY', 1, true), 'the key source:\n' .. health)
H.check(health:find('OK provider check: the openai provider scripted at ' .. url .. ' answered. Key AUTOCODE_TEST_KEY: set.', 1, true), 'checkhealth ran the check:\n' .. health)
vim.cmd('bwipeout!')
H.log('ok checkhealth runs the check when asked')

-- setup{} again, without a key: the running server forgets it at once.
require('autocode').setup({ model = { provider = 'openai', model = 'scripted', base_url = url } })
H.wait(20000, function()
  local held = model.last[c.id]
  return held and not held.pending and held.apiKeySet == false
end, 'the server to forget the key')
vim.cmd('AutoCode model check')
H.wait(60000, function()
  return H.scratch_lines('provider-check') ~= nil
end, 'the provider check')
local check = table.concat(H.scratch_lines('provider-check'), '\n')
H.check(check:find('answered. No key is sent.', 1, true), 'the check says no key is sent:\n' .. check)
H.log('ok setup again forgets the key')
H.done()
