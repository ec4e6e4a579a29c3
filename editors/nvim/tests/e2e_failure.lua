-- Every failure offers its way out. The repository's tests are slow (a conftest sleeps) and the
-- change's new test fails. The server is killed while the task verifies: the task is said to
-- be interrupted, with :AutoCode resume, in the notification, the statusline and the task view.
-- Resumed, it fails on its tests: the failing test is named, the task view lists the ways on
-- (:AutoCode output, retry only when the server offers it, start), and :AutoCode output opens
-- the whole test output. cwd: fixtures/samples "pytest" with that conftest committed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local client = require('autocode.client')
local FAILING = 'test_total_with_tax_applies_the_rate'
H.script_ui(function()
  return 'Name each test after the behaviour it checks'
end, { require('autocode.questions').TYPE })

vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
H.client()
vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait_note(60000, 'asks:')
local id = tasks.current
vim.cmd('AutoCode answer')
H.wait(60000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_plan'
end, 'the plan')
vim.cmd('AutoCode approve')
H.wait(120000, function()
  return (tasks.snapshots[id] or {}).state == 'VERIFYING'
end, 'the task to verify')
for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
-- The approve waits for the run: it is the one to say that the plan was approved, and how to go on.
H.wait_note(10000, 'plan approved; the server stopped during the run (while VERIFYING): :AutoCode resume continues task ' .. id)
H.check(
  require('autocode').statusline():find('(interrupted: :AutoCode resume)', 1, true),
  'the statusline says so: ' .. require('autocode').statusline()
)
H.log('ok interrupted offers resume')

vim.cmd('AutoCode resume')
H.wait(240000, function()
  return (tasks.snapshots[id] or {}).state == 'FAILED'
end, 'the resumed task to fail on its tests')
local note = H.wait_note(10000, 'task ' .. id .. ' is FAILED')
H.check(note.msg:find(FAILING, 1, true), 'the failing test by name: ' .. note.msg)
H.check(note.msg:find(':AutoCode output', 1, true), 'the output one command away: ' .. note.msg)
H.log('ok failure names the test')

vim.cmd('AutoCode status')
H.wait(30000, function()
  return H.scratch_lines('task/' .. id) ~= nil
end, 'the task view')
local view = table.concat(H.scratch_lines('task/' .. id), '\n')
H.check(view:find('## Tests', 1, true) and view:find('failing (1): ', 1, true) and view:find(FAILING, 1, true), view)
H.check(view:find('- :AutoCode output shows the test output', 1, true), 'output offered:\n' .. view)
H.check(view:find('- :AutoCode start begins again', 1, true), 'start offered:\n' .. view)
local offers_retry = client.features(client.get()).commands['autocode.task.retryVerification'] == true
H.eq(view:find(':AutoCode retry', 1, true) ~= nil, offers_retry, 'retry is offered exactly when the server has it')
H.log('ok task view lists the ways out (retry ' .. (offers_retry and 'offered' or 'not offered by this server') .. ')')

vim.cmd('AutoCode output')
H.wait(10000, function()
  return vim.api.nvim_buf_get_name(0):find('evidence/test-output.txt', 1, true) ~= nil
end, 'the test output to open')
local output = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
H.check(output:find(FAILING, 1, true), 'the output names the failing test')
H.check(vim.bo.readonly, 'opened read-only')
H.log('ok output opens')

H.notes = {}
if offers_retry then
  -- The server runs the proof again on the same change: here it fails again, said again.
  H.record_calls()
  local before = tasks.snapshots[id].revision
  vim.cmd('AutoCode retry')
  H.wait(240000, function()
    local s = tasks.snapshots[id]
    return #H.sent('autocode.task.retryVerification') == 1 and s.revision > before and s.state == 'FAILED'
  end, 'the retried verification to end')
  H.eq(H.sent('autocode.task.retryVerification')[1].args.taskId, id, 'retry names the task')
  H.log('ok retry runs the tests again')
else
  vim.cmd('AutoCode retry')
  H.wait_note(30000, 'cannot retry a verification', vim.log.levels.ERROR)
  H.log('ok retry said unavailable')
end
H.done()
