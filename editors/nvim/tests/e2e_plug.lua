-- The keys a person maps to the plugin's <Plug> maps, as the help shows
-- (`vim.keymap.set('n', '<leader>aa', '<Plug>(AutoCodeAnswer)')`), pressed with nvim_input as
-- typed keys, with Neovim's own vim.ui.select / vim.ui.input (nothing stubbed). The plugin maps
-- nothing itself; the question waits (no prompt) until the mapped key is pressed; then the
-- numbered picker opens, the person picks "Type an answer…" and types it: sent as typed (the
-- pytest side checks the ledger records it as the person's). When the plan arrives, the key mapped
-- to <Plug>(AutoCodeReview) opens it and moves the cursor there; nothing is approved.
-- Run with `nvim -S` (the main loop running). cwd: fixtures/samples "pytest".
local real_notify = vim.notify
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
vim.notify = real_notify
local tasks = require('autocode.tasks')
local questions = require('autocode.questions')
H.record_calls()
local ANSWER = vim.env.AUTOCODE_TEST_ANSWER or 'Name each test after the behaviour it checks'

vim.g.mapleader = ' '
H.eq(vim.fn.maparg(' aa', 'n'), '', 'the plugin maps no key of the person itself')
for _, plug in ipairs({ '<Plug>(AutoCodeAnswer)', '<Plug>(AutoCodeReview)', '<Plug>(AutoCodeStatus)', '<Plug>(AutoCodeTasks)',
  '<Plug>(AutoCodeStart)' }) do
  H.check(vim.tbl_count(vim.fn.maparg(plug, 'n', false, true)) > 0, 'the plugin defines ' .. plug)
end
-- As :help <Plug>(AutoCodeAnswer) shows.
vim.keymap.set('n', '<leader>aa', '<Plug>(AutoCodeAnswer)')
vim.keymap.set('n', '<leader>ar', '<Plug>(AutoCodeReview)')

local function picker_open()
  return vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '@'
end

H.async(function()
  vim.fn.writefile({ 'my notes' }, 'notes.txt')
  vim.lsp.enable('autocode')
  vim.cmd.edit('notes.txt')
  local own_win = vim.api.nvim_get_current_win()
  H.until_(20000, function()
    local c = vim.lsp.get_clients({ name = 'autocode' })[1]
    return c ~= nil and c.initialized == true
  end, 'the client')
  vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
  H.until_(120000, function()
    return #questions.pending > 0
  end, 'the question to be announced')
  local id = tasks.current
  local question = questions.pending[1].question
  H.check(not picker_open(), 'the question did not open by itself')
  H.eq(vim.api.nvim_get_current_win(), own_win, 'the cursor stayed')

  -- The mapped key, typed.
  vim.api.nvim_input(' aa')
  H.until_(30000, picker_open, 'the numbered picker, opened by the mapped key')
  H.check(vim.fn.getcmdprompt():find('Number and Enter', 1, true), 'the numbered list asks: ' .. vim.fn.getcmdprompt())
  local labels = questions.items(question)
  local typed_at
  for i, label in ipairs(labels) do
    if label == questions.TYPE then
      typed_at = i
    end
  end
  H.check(vim.fn.getcmdline() == '', 'the picker starts empty')
  vim.api.nvim_input(tostring(typed_at) .. '<CR>')
  H.until_(30000, function()
    return picker_open() and vim.fn.getcmdprompt():find('(proposed: ', 1, true) ~= nil
  end, 'the answer field')
  H.eq(vim.fn.getcmdline(), '', 'the answer field starts empty')
  vim.api.nvim_input(ANSWER .. '<CR>')
  H.until_(30000, function()
    return #H.sent('autocode.task.answer') > 0
  end, 'the answer to be sent')
  local sent = H.sent('autocode.task.answer')[1].args
  H.eq({ sent.text, sent.how }, { ANSWER, 'typed' }, 'the typed answer, sent as typed')
  H.log('ok answered through the mapped key')

  H.until_(120000, function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_plan'
  end, 'the plan')
  H.until_(5000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end, 'normal mode')
  H.eq(require('autocode.ui').find('plan/' .. id), nil, 'the plan did not open by itself')
  vim.api.nvim_input(' ar')
  H.until_(30000, function()
    local buf = require('autocode.ui').find('plan/' .. id)
    return buf ~= nil and vim.api.nvim_get_current_buf() == buf
  end, 'the plan, opened by the mapped key, with the cursor in it')
  H.eq(#H.sent('autocode.task.approvePlan'), 0, 'nothing approved')
  H.log('ok plan opened by the mapped key')
  H.done()
end)
