-- Cancelling a task that waits for an answer: the question is dismissed,
-- :AutoCode cancel ends the task, and the work tree is untouched.
-- cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
H.script_ui(function()
  return nil
end, {})

vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait_note(60000, 'asks:')
local id = tasks.current
vim.cmd('AutoCode answer')
H.wait_note(30000, 'question left open')
-- Cancel asks first: No keeps the task.
H.script_ui({}, { 'No', 'Yes, cancel it' })
vim.cmd('AutoCode cancel')
H.wait_note(30000, 'was not cancelled')
H.eq(tasks.snapshots[id].state, 'WAITING_FOR_USER', 'No cancelled nothing')
vim.cmd('AutoCode cancel')
H.wait(30000, function()
  local s = tasks.snapshots[id]
  return s and s.state == 'CANCELLED'
end, 'the task to be cancelled')
H.check(H.note('task ' .. id .. ' is CANCELLED'), 'cancel notified')
H.eq(require('autocode').statusline(), 'AutoCode ' .. vim.fs.basename(vim.fn.getcwd()) .. ': CANCELLED', 'statusline shows the end state with the repository')
H.log('ok cancelled')
H.done()
