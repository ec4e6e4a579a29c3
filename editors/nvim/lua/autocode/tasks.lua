-- Task flows from the editor: start, answer, plan review, completion, cancel,
-- status and the task list. Keeps the newest snapshot of each task seen (from
-- command results and autocode/task/didChange) and notifies on changes.
local client = require('autocode.client')
local config = require('autocode.config')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local C = protocol.commands
local NEEDS = protocol.needs
local M = {}

--- task id -> newest snapshot; `current` is the task commands act on by default.
M.snapshots = {}
M.current = nil
--- Progress per "<client id>:<token>": {title, message, percentage}.
M.progress = {}
--- Plan reviews the server is waiting on (autocode/task/reviewPlan): task id -> {plan_revision, resolve}.
M.reviews = {}

local field = require('autocode.util').field

--- The snapshot inside a command result or a didChange notification.
function M.unwrap(result)
  if type(result) ~= 'table' then
    return nil
  end
  local task = field(result, 'task')
  if type(task) == 'table' then
    return task
  end
  return result
end

function M.id_of(snap)
  return field(snap, 'id', 'taskId')
end

--- The needs object of a snapshot (empty table when it needs nothing).
function M.needs(snap)
  local needs = field(snap, 'needs')
  return type(needs) == 'table' and needs or {}
end

function M.needs_kind(snap)
  local kind = field(M.needs(snap), 'kind')
  if kind == 'answer_questions' then
    return NEEDS.question
  end
  return kind
end

--- The plan revision a snapshot asks approval for.
function M.plan_revision(snap)
  return field(M.needs(snap), 'planRevision', 'plan_revision') or field(snap, 'planRevision', 'plan_revision')
end

--- Records a snapshot if it is not older than the one held. Notifies when
--- its state changed and opens the diff when it starts waiting for completion.
--- Returns true when it was kept.
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
  local changed = not old or field(old, 'state') ~= state
  if changed and not quiet then
    local kind = M.needs_kind(snap)
    local msg = ('task %s is %s'):format(id, tostring(state))
    if kind == NEEDS.approve_completion then
      msg = msg .. ': review the diff, then a (or :AutoCode complete) to accept it'
    elseif kind == NEEDS.question then
      msg = msg .. ': it has a question for you (:AutoCode answer)'
    end
    local err = field(snap, 'error')
    if type(err) == 'table' and field(err, 'message') then
      msg = msg .. ': ' .. tostring(field(err, 'message'))
    end
    ui.notify(msg, err and vim.log.levels.WARN or vim.log.levels.INFO)
    if kind == NEEDS.approve_completion and config.options.open_diff then
      M.open_diff(snap)
    end
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

--- Fetches and remembers a task's snapshot (inside client.run); nil after reporting an error.
local function fetch(id, what)
  local err, result = client.await(C.task_get, { taskId = id })
  if failed(err, what) then
    return nil
  end
  local snap = M.unwrap(result)
  M.remember(snap, true)
  return snap
end

--- Adds the workspace folder of the current buffer (or cwd) to `args`.
function M.with_workspace(args)
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
  if M.needs_kind(snap) ~= NEEDS.question then
    return out
  end
  for _, q in ipairs(field(M.needs(snap), 'questions') or {}) do
    table.insert(out, {
      id = field(q, 'id'),
      text = field(q, 'text') or '?',
      choices = field(q, 'choices'),
      default = field(q, 'default'),
    })
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
    '- done: ' .. tostring(field(snap, 'done') == true),
  }
  local brief = field(snap, 'brief')
  if brief then
    vim.list_extend(out, { '', '## Brief', '' })
    vim.list_extend(out, ui.lines(brief))
  end
  local kind = M.needs_kind(snap)
  if kind then
    vim.list_extend(out, { '', '## Waiting for you: ' .. kind, '' })
    local message = field(M.needs(snap), 'message')
    if message then
      vim.list_extend(out, ui.lines(message))
    end
    for _, q in ipairs(M.questions(snap)) do
      table.insert(out, ('- %s (%s)'):format(q.text, tostring(q.id)))
    end
    if kind == NEEDS.approve_plan then
      table.insert(out, ('- plan revision %s: :AutoCode approve or :AutoCode reject'):format(tostring(M.plan_revision(snap))))
    end
  end
  local result = field(snap, 'result')
  if result then
    vim.list_extend(out, { '', '## Result', '' })
    ui.render_value(result, out)
  end
  return out
end

-- Flows ----------------------------------------------------------------------

--- Asks the person one question: several choices through vim.ui.select (with
--- a last entry to type something else), otherwise vim.ui.input prefilled with
--- the proposed default. Returns the text, or nil when dismissed. Runs in a coroutine.
function M.prompt_answer(question)
  local choices = type(question.choices) == 'table' and question.choices or {}
  if #choices > 1 then
    local labels = {}
    for i, ch in ipairs(choices) do
      labels[i] = tostring(ch)
    end
    local other = 'Something else...'
    table.insert(labels, other)
    local item = ui.select(labels, question.text)
    if item ~= other then
      return item
    end
  end
  local default = question.default or choices[1]
  return ui.input(question.text .. ' ', default and tostring(default) or nil)
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
    local err, result = client.await(C.task_start, M.with_workspace({ brief = brief }))
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
    local snap = fetch(id, 'answer')
    if not snap then
      return
    end
    local questions = M.questions(snap)
    if #questions == 0 then
      ui.warn(('task %s has no open question (it is %s)'):format(id, tostring(field(snap, 'state'))))
      return
    end
    for _, q in ipairs(questions) do
      local reply = text or M.prompt_answer(q)
      text = nil
      if not reply or reply == '' then
        ui.warn('question left open: ' .. q.text)
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

--- Opens a plan in a markdown buffer: a approves, r rejects, q closes.
--- @param params table reviewPlan params or a snapshot waiting for plan approval
function M.open_plan(params)
  local id = M.id_of(params)
  local plan = field(params, 'plan')
  if type(plan) ~= 'string' then
    plan = field(M.needs(params), 'markdown', 'plan')
  end
  if type(plan) ~= 'string' then
    plan = nil
  end
  local revision = field(params, 'planRevision') or M.plan_revision(params)
  local lines = ui.lines(plan)
  if #lines == 0 then
    local uri = field(params, 'planUri') or field(M.needs(params), 'planUri')
    lines = { '# Plan of task ' .. tostring(id), '', uri and ('The plan is at ' .. uri) or '(no plan text was sent)' }
  end
  local buf = ui.scratch('plan/' .. tostring(id), lines, 'markdown', {
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
  }, { task = id, plan_revision = revision })
  return buf
end

--- Answers a pending reviewPlan request for `id`, if there is one. Returns true if so.
local function resolve_review(id, result)
  local review = M.reviews[id]
  if not review then
    return false
  end
  M.reviews[id] = nil
  review.resolve(result)
  return true
end

function M.approve(id, revision)
  id = target(id)
  if not id then
    return
  end
  if resolve_review(id, { decision = 'approve' }) then
    ui.close_named('plan/' .. tostring(id))
    return
  end
  client.run(function()
    if not revision then
      local snap = fetch(id, 'approve')
      if not snap then
        return
      end
      if M.needs_kind(snap) ~= NEEDS.approve_plan then
        ui.warn(('task %s has no plan waiting for approval (it is %s)'):format(id, tostring(field(snap, 'state'))))
        return
      end
      revision = M.plan_revision(snap)
    end
    local err, result = client.await(C.task_approve_plan, { taskId = id, revision = revision })
    if failed(err, 'approve') then
      return
    end
    M.remember(M.unwrap(result))
    ui.close_named('plan/' .. tostring(id))
  end)
end

function M.reject(id, feedback)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    feedback = feedback or ui.input('What should change in the plan? ')
    if not feedback or vim.trim(feedback) == '' then
      ui.warn('plan not rejected: say what should change so the task can plan again')
      return
    end
    if resolve_review(id, { decision = 'reject', feedback = feedback }) then
      ui.close_named('plan/' .. tostring(id))
      return
    end
    local err, result = client.await(C.task_reject_plan, { taskId = id, feedback = feedback })
    if not failed(err, 'reject') then
      M.remember(M.unwrap(result))
      ui.close_named('plan/' .. tostring(id))
    end
  end)
end

--- Opens a task's diff with keys to approve completion (a) or cancel (x).
function M.open_diff(snap)
  local id = M.id_of(snap)
  local needs = M.needs(snap)
  local diff = field(needs, 'diff', 'patch') or field(field(snap, 'result') or {}, 'diff')
  local lines = ui.lines(type(diff) == 'string' and diff or nil)
  if #lines == 0 then
    lines = { '# task ' .. tostring(id) .. ': no diff was sent' }
    for _, l in ipairs(ui.lines(field(needs, 'message'))) do
      table.insert(lines, '# ' .. l)
    end
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
    ui.close_named('diff/' .. tostring(id))
  end)
end

function M.cancel(id)
  id = target(id)
  if not id then
    return
  end
  resolve_review(id, { decision = 'later' })
  client.run(function()
    local err, result = client.await(C.task_cancel, { taskId = id })
    if not failed(err, 'cancel') then
      M.remember(M.unwrap(result))
      ui.close_named('plan/' .. tostring(id))
      ui.close_named('diff/' .. tostring(id))
    end
  end)
end

--- Continues a task whose server stopped while it was working.
function M.resume(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local err, result = client.await(C.task_resume, { taskId = id })
    if not failed(err, 'resume') then
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
    local snap = fetch(id, 'status')
    if not snap then
      return
    end
    ui.scratch('task/' .. id, M.render(snap), 'markdown', {}, { task = id })
  end)
end

--- Lists the workspace's tasks and lets the person pick one as current.
function M.list()
  client.run(function()
    local err, result = client.await(C.task_list, M.with_workspace({}))
    if failed(err, 'tasks') then
      return
    end
    local items = field(result, 'tasks') or {}
    if #items == 0 then
      ui.notify('no tasks in this workspace yet')
      return
    end
    local labels = {}
    for i, snap in ipairs(items) do
      M.remember(snap, true)
      labels[i] = ('%s  %s  %s'):format(M.id_of(snap), tostring(field(snap, 'state')), tostring(field(snap, 'brief') or ''))
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
  table.sort(parts)
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
