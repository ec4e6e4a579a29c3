-- Handlers for what the server sends on its own: task change notifications,
-- the two server-to-client requests (questions, plan review) and the end of
-- the server process.
local protocol = require('autocode.protocol')

local M = {}

local function field(t, ...)
  for _, k in ipairs({ ... }) do
    if type(t) == 'table' and t[k] ~= nil and t[k] ~= vim.NIL then
      return t[k]
    end
  end
end

--- autocode/task/didChange: a full snapshot with its revision.
function M.did_change(_, params, _)
  local tasks = require('autocode.tasks')
  local snap = tasks.unwrap(params)
  if snap and params and params.revision and snap.revision == nil then
    snap.revision = params.revision
  end
  tasks.remember(snap)
end

--- autocode/task/askQuestion: asks the person through vim.ui.select (choices)
--- or vim.ui.input (free text). Runs in the RPC coroutine, so the picker may
--- answer later; a dismissed prompt is reported back as unanswered.
function M.ask_question(_, params, _)
  local tasks = require('autocode.tasks')
  local question = {
    id = field(params, 'questionId', 'id'),
    text = field(params, 'question', 'text', 'prompt') or '(question without text)',
    choices = field(params, 'choices', 'options'),
  }
  local task_id = field(params, 'taskId', 'task_id')
  if task_id then
    tasks.current = task_id
  end
  local reply = tasks.prompt_answer(question)
  if reply == nil or reply == '' then
    require('autocode.ui').warn(
      'question left unanswered; answer it later with :AutoCode answer'
    )
    return { answered = false }
  end
  return { answered = true, text = reply }
end

--- autocode/task/reviewPlan: opens the plan buffer (a / r approve or reject).
function M.review_plan(_, params, _)
  local tasks = require('autocode.tasks')
  local task_id = field(params, 'taskId', 'task_id', 'id')
  if task_id then
    tasks.current = task_id
  end
  if require('autocode.config').options.open_plan then
    tasks.open_plan(params)
  end
  require('autocode.ui').notify(
    ('the plan for task %s is ready: a approves, r rejects (or :AutoCode approve / reject)'):format(
      tostring(task_id)
    )
  )
  return { shown = true }
end

--- Reports a server that went away on its own.
function M.on_exit(code, signal, client_id)
  local tasks = require('autocode.tasks')
  for token in pairs(tasks.progress) do
    if token:find('^' .. client_id .. ':') then
      tasks.progress[token] = nil
    end
  end
  if code ~= 0 or (signal ~= nil and signal ~= 0) then
    vim.schedule(function()
      require('autocode.ui').error(
        ('the language server exited unexpectedly (exit code %s, signal %s). '
          .. 'Pending AutoCode commands were abandoned; see :LspLog, then run any :AutoCode command to start it again.'):format(
          tostring(code),
          tostring(signal)
        )
      )
      pcall(vim.cmd.redrawstatus)
    end)
  end
end

--- Tracks $/progress from the AutoCode client for the statusline (LspProgress autocmd).
function M.on_progress(ev)
  local c = vim.lsp.get_client_by_id(ev.data.client_id)
  if not c or c.name ~= 'autocode' then
    return
  end
  local tasks = require('autocode.tasks')
  local params = ev.data.params or {}
  local value = params.value or {}
  local key = ev.data.client_id .. ':' .. tostring(params.token)
  if value.kind == 'end' then
    tasks.progress[key] = nil
  else
    local old = tasks.progress[key] or {}
    tasks.progress[key] = {
      title = value.title or old.title,
      message = value.message or old.message,
      percentage = value.percentage or old.percentage,
    }
  end
  pcall(vim.cmd.redrawstatus)
end

function M.all()
  return {
    [protocol.methods.task_did_change] = M.did_change,
    [protocol.methods.ask_question] = M.ask_question,
    [protocol.methods.review_plan] = M.review_plan,
  }
end

return M
