-- Task flows from the editor: start, answer, plan review, completion, cancel,
-- status and the task list. Keeps the newest snapshot of each task seen (from
-- command results and autocode/task/didChange) and notifies on changes.
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local C = protocol.commands
local M = {}

--- task id -> newest snapshot; `current` is the task commands act on by default.
M.snapshots = {}
M.current = nil
--- Progress per client token: {title, message, percentage}.
M.progress = {}

local function field(t, ...)
  for _, k in ipairs({ ... }) do
    if type(t) == 'table' and t[k] ~= nil and t[k] ~= vim.NIL then
      return t[k]
    end
  end
end

--- The snapshot inside a command result or notification (they may wrap it).
function M.unwrap(result)
  if type(result) ~= 'table' then
    return nil
  end
  return field(result, 'task', 'snapshot') or result
end

function M.id_of(snap)
  return field(snap, 'id', 'taskId', 'task_id')
end

--- Records a snapshot if it is newer than the one held; notifies when its state changed.
--- Returns true when it was newer.
function M.remember(snap, quiet)
  local id = M.id_of(snap)
  if not id then
    return false
  end
  local old = M.snapshots[id]
  local rev = tonumber(field(snap, 'revision')) or 0
  if old and (tonumber(field(old, 'revision')) or 0) > rev then
    return false
  end
  M.snapshots[id] = snap
  M.current = M.current or id
  local state = field(snap, 'state')
  if not quiet and (not old or field(old, 'state') ~= state) then
    ui.notify(('task %s is %s'):format(id, tostring(state)))
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'AutoCodeTaskChanged', data = snap, modeline = false })
  pcall(vim.cmd.redrawstatus)
  return true
end

--- The task id a command acts on: the argument, else the current task.
local function target(id)
  id = (id and id ~= '') and id or M.current
  if not id then
    ui.error('no task yet: start one with :AutoCode start, or pick one with :AutoCode tasks')
  end
  return id
end

--- Reports a command error; returns true when there was one.
local function failed(err, what)
  if err then
    ui.error(what .. ' failed: ' .. client.describe(err))
    return true
  end
  return false
end

local function workspace_args(args)
  local root = client.workspace_for()
  if root then
    args.workspace = root
  end
  return args
end

-- Rendering ----------------------------------------------------------------

--- The open questions of a snapshot: list of {id, text, choices}.
function M.questions(snap)
  local out = {}
  for _, need in ipairs(field(snap, 'needs') or {}) do
    local kind = field(need, 'kind', 'type')
    local qid = field(need, 'questionId', 'question_id', 'id')
    local text = field(need, 'question', 'text', 'prompt')
    if (kind == nil or kind == 'question' or kind == 'answer') and text then
      table.insert(out, { id = qid, text = text, choices = field(need, 'choices', 'options') })
    end
  end
  return out
end

--- Markdown lines describing a task snapshot.
function M.render(snap)
  local id = M.id_of(snap) or '?'
  local out = {
    '# AutoCode task ' .. id,
    '',
    '- state: ' .. tostring(field(snap, 'state') or '?'),
    '- phase: ' .. tostring(field(snap, 'phase') or '?'),
    '- revision: ' .. tostring(field(snap, 'revision') or '?'),
  }
  local brief = field(snap, 'brief')
  if brief then
    vim.list_extend(out, { '', '## Brief', '' })
    vim.list_extend(out, ui.lines(brief))
  end
  local needs = field(snap, 'needs')
  if needs and #needs > 0 then
    vim.list_extend(out, { '', '## Waiting for you', '' })
    ui.render_value(needs, out)
  end
  local result = field(snap, 'result')
  if result then
    vim.list_extend(out, { '', '## Result', '' })
    ui.render_value(result, out)
  end
  return out
end

-- Flows ----------------------------------------------------------------------

--- Answers one question of a task by asking the person. Returns the text or nil.
function M.prompt_answer(question)
  local choices = question.choices
  if type(choices) == 'table' and #choices > 0 then
    local labels = {}
    for i, ch in ipairs(choices) do
      labels[i] = type(ch) == 'table' and tostring(field(ch, 'label', 'title', 'text', 'value')) or tostring(ch)
    end
    local item = ui.select(labels, question.text)
    return item
  end
  return ui.input(question.text .. ' ')
end

function M.start(brief)
  client.run(function()
    if not brief or brief == '' then
      brief = ui.input('AutoCode task brief: ')
    end
    if not brief or vim.trim(brief) == '' then
      ui.warn('no brief given; nothing started')
      return
    end
    local err, result = client.await(C.task_start, workspace_args({ brief = brief }))
    if failed(err, 'start') then
      return
    end
    local snap = M.unwrap(result)
    M.current = M.id_of(snap) or M.current
    M.remember(snap)
  end)
end

--- Asks the person the open questions of a task and sends the answers.
--- `text` answers the first question without asking.
function M.answer(id, text)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local err, result = client.await(C.task_get, { taskId = id })
    if failed(err, 'answer') then
      return
    end
    local snap = M.unwrap(result)
    M.remember(snap, true)
    local questions = M.questions(snap)
    if #questions == 0 then
      ui.warn(('task %s has no open question'):format(id))
      return
    end
    for _, q in ipairs(questions) do
      local reply = text or M.prompt_answer(q)
      text = nil
      if not reply or reply == '' then
        ui.warn('question left unanswered: ' .. q.text)
        return
      end
      local aerr, r = client.await(C.task_answer, { taskId = id, questionId = q.id, text = reply })
      if failed(aerr, 'answer') then
        return
      end
      M.remember(M.unwrap(r))
    end
  end)
end

--- Opens the plan of a task in a markdown buffer with keys to approve or reject it.
--- @param snap table task snapshot or reviewPlan params (taskId, revision, plan)
function M.open_plan(snap)
  local id = M.id_of(snap)
  local plan = field(snap, 'plan', 'markdown', 'text')
  if type(plan) == 'table' then
    plan = field(plan, 'markdown', 'text', 'content')
  end
  local revision = field(snap, 'planRevision', 'revision')
  local lines = ui.lines(plan)
  if #lines == 0 then
    lines = { '(the server sent no plan text)' }
  end
  return ui.scratch('plan/' .. tostring(id), lines, 'markdown', {
    a = {
      function()
        M.approve(id, revision)
      end,
      'approve plan',
    },
    r = {
      function()
        M.reject(id)
      end,
      'reject plan',
    },
  }, { task = id, revision = revision })
end

function M.approve(id, revision)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    if not revision then
      local snap = M.snapshots[id]
      revision = snap and field(snap, 'planRevision', 'revision')
    end
    local err, result = client.await(C.task_approve_plan, { taskId = id, revision = revision })
    if failed(err, 'approve') then
      return
    end
    M.remember(M.unwrap(result))
    local buf = ui.find('plan/' .. tostring(id))
    if buf then
      ui.close(buf)
    end
  end)
end

function M.reject(id, feedback)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    feedback = feedback or ui.input('What should change in the plan? ')
    if not feedback or feedback == '' then
      ui.warn('plan not rejected: feedback is needed to revise it')
      return
    end
    local err, result = client.await(C.task_reject_plan, { taskId = id, feedback = feedback })
    if not failed(err, 'reject') then
      M.remember(M.unwrap(result))
    end
  end)
end

--- Opens a task's diff (if it has one) with keys to approve completion or cancel.
function M.open_diff(snap)
  local id = M.id_of(snap)
  local result = field(snap, 'result') or {}
  local diff = field(result, 'diff', 'patch') or field(snap, 'diff')
  local lines = ui.lines(diff)
  if #lines == 0 then
    lines = { '# no changes recorded for task ' .. tostring(id) }
  end
  return ui.scratch('diff/' .. tostring(id), lines, 'diff', {
    a = {
      function()
        M.complete(id)
      end,
      'approve completion',
    },
    x = {
      function()
        M.cancel(id)
      end,
      'cancel task',
    },
  }, { task = id })
end

function M.complete(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local err, result = client.await(C.task_approve_completion, { taskId = id })
    if failed(err, 'complete') then
      return
    end
    M.remember(M.unwrap(result))
    local buf = ui.find('diff/' .. tostring(id))
    if buf then
      ui.close(buf)
    end
  end)
end

function M.cancel(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local err, result = client.await(C.task_cancel, { taskId = id })
    if not failed(err, 'cancel') then
      M.remember(M.unwrap(result))
    end
  end)
end

function M.status(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local err, result = client.await(C.task_get, { taskId = id })
    if failed(err, 'status') then
      return
    end
    local snap = M.unwrap(result)
    M.remember(snap, true)
    ui.scratch('task/' .. id, M.render(snap), 'markdown', {}, { task = id })
  end)
end

--- Lists the workspace's tasks and lets the person pick one as current.
function M.list()
  client.run(function()
    local err, result = client.await(C.task_list, workspace_args({}))
    if failed(err, 'tasks') then
      return
    end
    local items = type(result) == 'table' and (field(result, 'tasks', 'items') or result) or {}
    if #items == 0 then
      ui.notify('no tasks in this workspace yet')
      return
    end
    local labels = {}
    for i, snap in ipairs(items) do
      M.remember(snap, true)
      labels[i] = ('%s  %s  %s'):format(
        M.id_of(snap),
        tostring(field(snap, 'state')),
        tostring(field(snap, 'brief') or '')
      )
    end
    local _, idx = ui.select(labels, 'AutoCode tasks')
    if idx then
      M.current = M.id_of(items[idx])
      M.status(M.current)
    end
  end)
end

--- The statusline text: the current task's state and any AutoCode progress.
function M.statusline()
  local parts = {}
  for _, p in pairs(M.progress) do
    local s = p.title or ''
    if p.message and p.message ~= '' then
      s = s .. ': ' .. p.message
    end
    if p.percentage then
      s = s .. (' %d%%'):format(p.percentage)
    end
    table.insert(parts, s)
  end
  local snap = M.current and M.snapshots[M.current]
  if #parts == 0 and not snap then
    return ''
  end
  local head = 'AutoCode'
  if snap then
    head = head .. ' ' .. tostring(field(snap, 'state') or '')
  end
  if #parts > 0 then
    head = head .. ' [' .. table.concat(parts, ', ') .. ']'
  end
  return head
end

return M
