-- A real model set up from setup{}: the provider, model and base URL of a scripted
-- OpenAI-compatible endpoint (served by the test) and the key from a function, handed to the
-- server with autocode.session.configure. :AutoCode model shows each value and where it came
-- from; :AutoCode model check names the endpoint, the model and whether the key is set, in a
-- buffer and in :checkhealth autocode; after the server is killed, the next one gets the
-- settings and the key again, and a whole task runs on that model.
-- cwd: the calc repository (its committed settings name only the test command).
-- env: AUTOCODE_TEST_URL (the endpoint), AUTOCODE_TEST_SECRET (the key; not a name any
-- provider reads, so only the plugin can bring it to the endpoint).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local model = require('autocode.model')
local secret = vim.env.AUTOCODE_TEST_SECRET
H.check(secret and #secret > 8, 'the test gives a key')
H.script_ui({}, {})
-- The LSP log at its most talkative: the configure request must still leave no key in it.
vim.lsp.log.set_level('debug')

require('autocode').setup({
  model = {
    provider = 'openai',
    model = 'scripted',
    base_url = vim.env.AUTOCODE_TEST_URL,
    key = function()
      return vim.env.AUTOCODE_TEST_SECRET
    end,
  },
})
vim.cmd.edit('README.md')
local first = H.client()
H.wait(20000, function()
  local held = model.last[first.id]
  return held and not held.pending
end, 'the server to take the model settings')
H.eq(model.last[first.id].apiKeySet, true, 'the server holds the key')
H.eq(model.last[first.id].apiKeyEnv, 'OPENAI_API_KEY', "under the provider's usual variable")
H.eq(model.last[first.id].settings, { provider = 'openai', model = 'scripted', baseUrl = vim.env.AUTOCODE_TEST_URL }, 'the settings')
H.log('ok configured on start')

-- :AutoCode model: each value and where it came from.
vim.cmd('AutoCode model')
H.wait(30000, function()
  return H.scratch_lines('model') ~= nil
end, 'the model buffer')
local page = table.concat(H.scratch_lines('model'), '\n')
io.stdout:write('--- model buffer\n' .. page .. '\n---\n')
H.check(page:find('provider%s+openai%s+from setup{ model } %(this Neovim%)'), 'the provider and its origin:\n' .. page)
H.check(page:find('model%s+scripted%s+from setup{ model }'), 'the model and its origin:\n' .. page)
H.check(page:find(vim.env.AUTOCODE_TEST_URL, 1, true), 'the base URL:\n' .. page)
H.check(page:find('engine%s+%S+%s+from '), 'the engine row:\n' .. page)
H.check(page:find('Key: from setup{ model.key } (a function, called when a server starts); held by the server (in memory only) as OPENAI_API_KEY', 1, true), 'the key row:\n' .. page)
H.log('ok model shows origins')

-- :AutoCode model check: one request to the endpoint, shown in a buffer beside the person's.
local here = vim.api.nvim_get_current_win()
vim.cmd('AutoCode model check')
H.wait(60000, function()
  return H.scratch_lines('provider-check') ~= nil
end, 'the provider check')
H.eq(vim.api.nvim_get_current_win(), here, 'the cursor stays in the person\'s window')
local check = table.concat(H.scratch_lines('provider-check'), '\n')
io.stdout:write('--- provider check\n' .. check .. '\n---\n')
H.check(check:find(vim.env.AUTOCODE_TEST_URL, 1, true), 'the check names the endpoint:\n' .. check)
H.check(check:find('model%s+scripted'), 'the check names the model:\n' .. check)
H.check(check:find('OPENAI_API_KEY is set', 1, true), 'the check says the key is set:\n' .. check)
H.check(check:find('answered', 1, true), 'the endpoint answered:\n' .. check)
H.check(H.note('the openai provider scripted at ' .. vim.env.AUTOCODE_TEST_URL .. ' answered.'), 'the summary was said')
H.log('ok provider check')

-- :checkhealth autocode shows the model and the last check (and sends nothing itself).
vim.cmd('checkhealth autocode')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
io.stdout:write('--- checkhealth model\n' .. (health:match('Model.-\n\n') or health) .. '\n---\n')
H.check(health:find('provider openai (setup{})', 1, true), 'checkhealth names the provider:\n' .. health)
H.check(health:find('key from setup{ model.key }', 1, true), 'checkhealth names the key source:\n' .. health)
H.check(health:find('provider check: the openai provider scripted at', 1, true), 'checkhealth shows the check:\n' .. health)
vim.cmd('bwipeout!')
H.log('ok checkhealth model')

-- The server dies; the next command starts another, which gets the settings and key again.
vim.cmd.edit('README.md')
for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
H.wait(10000, function()
  return #vim.lsp.get_clients({ name = 'autocode' }) == 0
end, 'the killed client to go')
vim.cmd('AutoCode start add(2, 3) gives -1; fix it.')
local second
H.wait(30000, function()
  second = vim.lsp.get_clients({ name = 'autocode' })[1]
  return second ~= nil and second.id ~= first.id and model.last[second.id] ~= nil and not model.last[second.id].pending
end, 'the new server to take the model settings')
H.eq(model.last[second.id].apiKeySet, true, 'the new server holds the key')
H.log('ok configured after a restart')

-- A whole task on that model (the endpoint's script has its every step).
H.wait(120000, function()
  return tasks.current ~= nil and tasks.needs_kind(tasks.snapshots[tasks.current] or {}) == 'approve_plan'
end, 'the plan')
local id = tasks.current
vim.cmd('AutoCode approve')
H.wait(180000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
end, 'the verified change')
vim.cmd('AutoCode apply')
H.wait(60000, function()
  local snap = tasks.snapshots[id] or {}
  return snap.state == 'COMPLETED'
end, 'the task to complete')
H.log('ok task completed on the model')

-- The key is in no message Neovim kept.
local messages = vim.fn.execute('messages')
H.check(not messages:find(secret, 1, true), 'the key is not in :messages')
for _, n in ipairs(H.notes) do
  H.check(not n.msg:find(secret, 1, true), 'the key is not in a notification')
end
for _, name in ipairs({ 'model', 'provider-check' }) do
  H.check(not table.concat(H.scratch_lines(name) or {}, '\n'):find(secret, 1, true), 'the key is not in ' .. name)
end
H.log('ok key in no message')
H.done()
