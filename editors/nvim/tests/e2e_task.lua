-- The whole task flow in Neovim against the real server: start a task on a
-- sample repository, answer its convention question by typing (through a
-- replaced vim.ui.select and vim.ui.input) after :AutoCode answer, approve the plan
-- with `a` in its buffer and apply the change with `a` in the diff buffer (each
-- opened by :AutoCode review and confirmed Yes), then :AutoCode doctor shows the learned convention. cwd: fixtures/samples "pytest" (declares patches/add-tax.patch).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')

H.strict = true
local ANSWER = vim.env.AUTOCODE_TEST_ANSWER or 'Name each test after the behaviour it checks'
-- The first prompt is dismissed (the question stays open), the plan is
-- rejected once with feedback; everything else gets scripted answers.
local FEEDBACK = 'Also mention the tax rate in the docstring'
local TYPE = require('autocode.questions').TYPE
local dismissed = false
H.script_ui(function(prompt)
  if prompt:find('What should change', 1, true) then
    return FEEDBACK
  end
  return ANSWER
end, function(_, items)
  if vim.tbl_contains(items, 'Yes') then
    return 'Yes'
  end
  if not dismissed then
    dismissed = true
    return nil
  end
  return TYPE
end)

local progress = {}
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local v = ev.data.params.value
    table.insert(progress, v.kind)
  end,
})
local statuslines = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutoCodeTaskChanged',
  callback = function()
    table.insert(statuslines, require('autocode').statusline())
  end,
})

vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
H.client()

vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait(60000, function()
  return tasks.current ~= nil
end, 'the task to start')
local id = tasks.current
H.log('started ' .. id)

-- The question arrives as autocode/task/askQuestion: announced, never opened by itself.
-- :AutoCode answer asks it through vim.ui.select with every way to answer, the proposed
-- default first. Dismissed, it stays open.
H.wait_note(60000, 'asks:')
H.eq(#H.prompts, 0, 'nothing opened by itself')
vim.cmd('AutoCode answer')
H.wait(30000, function()
  return #H.prompts > 0
end, 'the question')
local q = H.prompts[1]
H.eq(q.kind, 'select', 'question asked through vim.ui.select')
H.check(q.items[1]:find('accept the proposed default (not remembered)', 1, true), 'the default is offered first, marked')
H.check(vim.tbl_contains(q.items, TYPE) and vim.tbl_contains(q.items, 'Let AutoCode decide'), 'typing and delegating offered')
H.log('asked: ' .. q.prompt)
H.wait_note(30000, 'question left open')
H.wait(30000, function()
  local s = tasks.snapshots[id]
  return s and s.state == 'WAITING_FOR_USER'
end, 'the task to wait for the person')
vim.cmd('AutoCode answer')
H.wait(30000, function()
  return #H.prompts > 1
end, 'the question asked again')
H.eq(H.prompts[2].prompt, q.prompt, 'same question')
H.wait(30000, function()
  return #H.prompts > 2
end, 'the typed answer')
H.eq({ H.prompts[3].kind, H.prompts[3].default }, { 'input', nil }, 'typed into an empty field')
H.log('answered through :AutoCode answer')

-- The plan arrives as autocode/task/reviewPlan: announced; :AutoCode review opens its buffer.
local function plan_waits()
  local s = tasks.snapshots[id]
  return s and tasks.needs_kind(s) == 'approve_plan'
end
H.wait(60000, plan_waits, 'the plan')
H.wait_note(30000, 'the plan of task')
H.eq(require('autocode.ui').find('plan/' .. id), nil, 'the plan did not open by itself')
vim.cmd('AutoCode review')
H.wait(30000, function()
  return require('autocode.ui').find('plan/' .. id) ~= nil
end, 'the plan buffer')
local plan_buf = require('autocode.ui').find('plan/' .. id)
H.eq(vim.api.nvim_get_current_buf(), plan_buf, ':AutoCode review enters the plan')
H.eq(vim.bo[plan_buf].filetype, 'markdown', 'plan is markdown')
H.check(#table.concat(vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false), '\n') > 20, 'plan has text')
local first_plan_rev = vim.b[plan_buf].autocode_plan_revision
vim.cmd.normal('r')
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return plan_waits() and tasks.plan_revision(s) ~= first_plan_rev
end, 'a revised plan')
H.log('plan rejected from its buffer, revised')
-- q closes the buffer; the plan waits, and `a` in the reopened buffer approves it
-- through autocode.task.approvePlan.
vim.cmd('AutoCode review')
H.wait(30000, function()
  local buf = require('autocode.ui').find('plan/' .. id)
  return buf and vim.b[buf].autocode_plan_revision ~= first_plan_rev
end, 'the revised plan buffer')
plan_buf = require('autocode.ui').find('plan/' .. id)
vim.cmd.normal('q')
H.eq(vim.fn.bufwinid(plan_buf), -1, 'q closed the plan')
vim.cmd('sbuffer ' .. plan_buf)
vim.cmd.normal('a')
H.log('plan approved from its buffer')

-- Verified change: announced; :AutoCode review opens the diff; `a` accepts it.
H.wait(120000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
end, 'the verified change')
H.eq(require('autocode.ui').find('diff/' .. id), nil, 'the diff did not open by itself')
vim.cmd('AutoCode review')
H.wait(30000, function()
  return require('autocode.ui').find('diff/' .. id) ~= nil
end, 'the diff buffer')
local diff_buf = require('autocode.ui').find('diff/' .. id)
H.eq(vim.bo[diff_buf].filetype, 'diff', 'diff buffer')
local diff = table.concat(vim.api.nvim_buf_get_lines(diff_buf, 0, -1, false), '\n')
H.check(diff:find('total_with_tax', 1, true), 'the diff shows the change')
vim.api.nvim_set_current_win(vim.fn.bufwinid(diff_buf))
vim.cmd.normal('a')
H.wait(120000, function()
  local s = tasks.snapshots[id]
  return s and s.done == true
end, 'the task to end')
H.eq(tasks.snapshots[id].state, 'COMPLETED', 'task completed')
H.check(H.note('task ' .. id .. ' is COMPLETED'), 'completion notified')
H.check(vim.tbl_contains(progress, 'begin') and vim.tbl_contains(progress, 'end'), 'progress reported: ' .. vim.inspect(progress))
H.check(#vim.tbl_filter(function(s)
  return s:find('^AutoCode ') ~= nil
end, statuslines) > 0, 'statusline followed the task')
H.log('ok completed')

-- Learning runs after the completed checkpoint; the snapshot says when it is done.
local last_poll = 0
H.wait(60000, function()
  local s = tasks.snapshots[id]
  if s and type(s.learning) == 'table' and s.learning.status ~= 'pending' then
    return true
  end
  if vim.uv.now() - last_poll > 500 then
    last_poll = vim.uv.now()
    tasks.remember(H.call('autocode.task.get', { taskId = id }), true)
  end
  return false
end, 'learning to finish')
H.eq(tasks.snapshots[id].learning.status, 'done', 'learning worked: ' .. vim.inspect(tasks.snapshots[id].learning))

-- The learned convention shows in the doctor buffer.
vim.cmd('AutoCode doctor')
H.wait(60000, function()
  return H.scratch_lines('doctor') ~= nil
end, 'the doctor buffer')
local doctor = table.concat(H.scratch_lines('doctor'), '\n')
H.check(doctor:find(ANSWER, 1, true), 'the doctor buffer shows the learned answer:\n' .. doctor)
H.check(doctor:find(vim.trim(q.prompt), 1, true), 'the question is shown with it')
local capture = vim.env.AUTOCODE_DOCTOR_CAPTURE
if capture and capture ~= '' then
  vim.fn.writefile(H.scratch_lines('doctor'), capture)
end
H.log('ok doctor shows the convention')

-- :AutoCode tasks lists it; picking it opens its status.
H.prompts = {}
H.script_ui({}, function(_, items)
  return items[1]
end)
vim.cmd('AutoCode tasks')
H.wait(30000, function()
  local lines = H.scratch_lines('task/' .. id)
  return lines and table.concat(lines, '\n'):find('state: COMPLETED', 1, true) ~= nil
end, 'the status buffer of the picked task')
H.check(H.prompts[1].items[1]:find(id, 1, true), 'the list names the task')
H.log('ok tasks list')
H.done()
