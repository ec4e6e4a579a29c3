-- :AutoCode key: the model's key typed at run time, at Neovim's own inputsecret() prompt (keys
-- sent with nvim_input, as a person types them). setup{} names the provider, model and base URL
-- of a scripted endpoint and no key. Enter alone at the prompt, or <Esc>, changes nothing and says
-- so in one line. The key typed is given to the running server (the configure request setup{} uses), and
-- :AutoCode model says it came from :AutoCode key; :AutoCode model check reaches the endpoint with
-- it. After the server is killed, the next one gets it again from this Neovim's memory. It is in
-- no message, history, register or buffer, nor in the ShaDa file this Neovim writes.
-- Run with `nvim -S` (typed keys handled by the main loop). cwd: the calc repository.
-- env: AUTOCODE_TEST_URL (the endpoint), AUTOCODE_TEST_SECRET (the key to type; no provider reads
-- that name, so only the typing brings it to the endpoint).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local model = require('autocode.model')
local url = vim.env.AUTOCODE_TEST_URL
local secret = vim.env.AUTOCODE_TEST_SECRET
H.check(secret and #secret > 8 and not secret:find('[<%s]'), 'the test gives a key that types as itself')
-- The LSP log at its most talkative: the configure request must still leave no key in it.
vim.lsp.log.set_level('debug')
require('autocode').setup({ model = { provider = 'openai', model = 'scripted', base_url = url } })

--- inputsecret()'s prompt is open (its command-line type is '-': a secret prompt has no history).
local function at_the_prompt()
  return vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '-'
    and vim.fn.getcmdprompt():find('Model key for AutoCode', 1, true) ~= nil
end

local function settled(c)
  local held = c and model.last[c.id]
  return held ~= nil and not held.pending and held
end

H.async(function()
  vim.cmd.edit('README.md')
  local first
  H.until_(30000, function()
    first = vim.lsp.get_clients({ name = 'autocode' })[1]
    return first ~= nil and first.initialized and settled(first)
  end, 'the server to take the model settings')
  H.eq(model.last[first.id].apiKeySet, false, 'no key yet')
  local root = require('autocode.client').workspace_for()

  -- Enter alone at the prompt: nothing is kept or sent, and one line says so.
  local before = model.last[first.id]
  vim.api.nvim_input(':AutoCode key<CR>')
  H.until_(10000, at_the_prompt, 'the key prompt')
  H.check(vim.fn.getcmdprompt():find('Model key for AutoCode (not shown', 1, true), 'the prompt: ' .. vim.fn.getcmdprompt())
  vim.api.nvim_input('<CR>')
  H.until_(10000, function()
    return H.note('no key typed: nothing changed') ~= nil
  end, 'the empty answer to be said')
  H.check(not H.note('no key typed: nothing changed').msg:find('\n'), 'said in one line')
  -- Some characters, then <Esc>: the same.
  vim.api.nvim_input(':AutoCode key<CR>')
  H.until_(10000, at_the_prompt, 'the key prompt')
  vim.api.nvim_input('abandoned<Esc>')
  H.until_(10000, function()
    return #vim.tbl_filter(function(n)
      return n.msg:find('no key typed: nothing changed', 1, true) ~= nil
    end, H.notes) == 2
  end, 'the abandoned prompt to be said')
  H.eq(model.last[first.id], before, 'nothing was sent to the server')
  H.check(not model.key_typed(), 'no key kept')
  H.log('ok an empty answer changes nothing')

  -- The key, typed at the prompt.
  vim.api.nvim_input(':AutoCode key<CR>')
  H.until_(10000, at_the_prompt, 'the key prompt again')
  vim.api.nvim_input(secret .. '<CR>')
  H.until_(30000, function()
    local held = settled(first)
    return held and held ~= before and held.apiKeySet == true
  end, 'the server to hold the typed key')
  H.eq(model.last[first.id].apiKeyEnv, 'OPENAI_API_KEY', "held under the provider's usual variable")
  H.eq(model.last[first.id].settings, { provider = 'openai', model = 'scripted', baseUrl = url }, 'the settings of setup{} went with it')
  H.until_(10000, function()
    return H.note('key typed: held by the server (in memory only) as OPENAI_API_KEY') ~= nil
  end, 'the key to be said held')
  H.eq(vim.api.nvim_get_mode().mode, 'n', 'the prompt is closed')
  H.log('ok the typed key is held by the server')

  -- :AutoCode model says where the key came from.
  vim.cmd('AutoCode model')
  H.until_(30000, function()
    return H.scratch_lines('model') ~= nil
  end, 'the model buffer')
  local page = table.concat(H.scratch_lines('model'), '\n')
  H.check(page:find('Key: from :AutoCode key (typed in this Neovim, kept in its memory only); held by the server (in memory only) as OPENAI_API_KEY', 1, true),
    'the key row:\n' .. page)
  H.log('ok model says the key came from :AutoCode key')

  -- :AutoCode model check: one request to the endpoint, with the key.
  vim.cmd('AutoCode model check')
  H.until_(60000, function()
    return model.checks[root] ~= nil
  end, 'the provider check')
  H.check(model.checks[root].ok, 'the endpoint answered: ' .. model.checks[root].text)
  H.check(model.checks[root].text:find('Key OPENAI_API_KEY: set.', 1, true), 'the key is set: ' .. model.checks[root].text)
  H.log('ok the check reaches the endpoint with the typed key')

  -- The server dies; the next one gets the key again from this Neovim's memory.
  for _, pid in ipairs(H.children()) do
    vim.uv.kill(pid, 'sigkill')
  end
  H.until_(10000, function()
    return #vim.lsp.get_clients({ name = 'autocode' }) == 0
  end, 'the killed client to go')
  local checked = model.checks[root]
  vim.cmd('AutoCode model check')
  H.until_(60000, function()
    return model.checks[root] ~= checked
  end, 'the check on a new server')
  local second = vim.lsp.get_clients({ name = 'autocode' })[1]
  H.check(second and second.id ~= first.id, 'a new server')
  H.eq(model.last[second.id].apiKeySet, true, 'the new server holds the typed key')
  H.check(model.checks[root].ok, 'the endpoint answered again: ' .. model.checks[root].text)
  H.log('ok a restarted server gets the typed key again')

  -- The key is nowhere this Neovim keeps or writes.
  local messages = vim.fn.execute('messages')
  H.check(not messages:find(secret, 1, true), 'the key is not in :messages')
  for _, n in ipairs(H.notes) do
    H.check(not n.msg:find(secret, 1, true), 'the key is not in a notification')
  end
  local typed_command = false
  for _, kind in ipairs({ 'cmd', 'search', 'expr', 'input', 'debug' }) do
    for i = 1, vim.fn.histnr(kind) do
      local entry = vim.fn.histget(kind, i)
      H.check(not entry:find(secret, 1, true), 'the key is not in the ' .. kind .. ' history')
      typed_command = typed_command or (kind == 'cmd' and entry == 'AutoCode key')
    end
  end
  H.check(typed_command, 'the typed command is in the history (so the ShaDa below holds what was typed)')
  for _, reg in ipairs(vim.split('"0123456789abcdefghijklmnopqrstuvwxyz-:./', '')) do
    H.check(not vim.fn.getreg(reg):find(secret, 1, true), 'the key is not in register ' .. reg)
  end
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      H.check(not table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'):find(secret, 1, true),
        'the key is not in buffer ' .. vim.api.nvim_buf_get_name(b))
    end
  end
  -- The ShaDa file (histories, registers, marks) as Neovim writes it; the Python side reads it too.
  local shada = vim.fs.joinpath(vim.fn.stdpath('state'), 'shada', 'key-test.shada')
  vim.fn.mkdir(vim.fs.dirname(shada), 'p')
  vim.cmd('wshada! ' .. vim.fn.fnameescape(shada))
  local written = table.concat(vim.fn.readfile(shada, 'b'), '\n')
  H.check(written:find('AutoCode key', 1, true), 'the ShaDa file holds the command history')
  H.check(not written:find(secret, 1, true), 'the key is not in the ShaDa file')
  H.log('ok key in no message, history, register, buffer or ShaDa')
  H.done()
end)
