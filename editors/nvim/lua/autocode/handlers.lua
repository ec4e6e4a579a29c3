-- Handlers for what the server sends on its own: task change notifications,
-- the two server-to-client requests (questions, plan review) and the end of
-- the server process.
local protocol = require('autocode.protocol')

local M = {}

--- autocode/task/didChange: a full snapshot with its revision.
---@param params autocode.TaskDidChangeParams
function M.did_change(_, params, ctx)
  require('autocode.tasks').remember(params.task, false, ctx and ctx.client_id)
end

--- autocode/task/askQuestion: answered at once with "left open" (null); the
--- question goes to the person's queue and is asked in normal mode (never
--- while they type), and the answer goes back as autocode.task.answer with
--- how it was given.
---@param params autocode.AskQuestionParams
function M.ask_question(_, params, ctx)
  local tasks = require('autocode.tasks')
  local q = params.question
  local task_id = params.taskId
  if task_id then
    tasks.current = task_id
    if ctx and ctx.client_id then
      tasks.owners[task_id] = ctx.client_id
    end
  end
  local snap = task_id and tasks.snapshots[task_id]
  require('autocode.questions').offer({
    task_id = task_id,
    question = {
      id = q.id,
      text = q.text,
      choices = q.choices,
      default = q.default,
    },
    client = ctx and ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or nil,
    workspace = snap and snap.workspace or nil,
  })
  return { answer = vim.NIL }
end

--- autocode/task/reviewPlan: answered at once with "later" (the plan stays waiting for
--- :AutoCode approve / reject); the plan is announced, and shown only on :AutoCode review
--- (or, with setup{ open_plan = true }, in a split the cursor does not move to).
---@param params autocode.ReviewPlanParams
function M.review_plan(_, params, ctx)
  local tasks = require('autocode.tasks')
  local id = params.taskId
  if id then
    tasks.current = id
    if ctx and ctx.client_id then
      tasks.owners[id] = ctx.client_id
    end
  end
  if require('autocode.config').options.open_plan then
    tasks.open_plan(params)
  end
  require('autocode.ui').notify(
    ('the plan of task %s is ready: :AutoCode review shows it, :AutoCode approve or :AutoCode reject decides'):format(
      tostring(id)
    )
  )
  return { decision = 'later' }
end

local broken_said = false

--- For a server that exited before it finished starting (a broken or half-installed server, or
--- a `command` that is not the server): the exact install command, said once per session.
--- A server that ran and then died, or a remote one, gets nothing: reinstalling is not the fix.
--- @param c vim.lsp.Client|nil
--- @return string
function M.broken_server_hint(c)
  local config = require('autocode.config')
  if broken_said or not c or c.initialized or type(config.cmd()) ~= 'table' then
    return ''
  end
  broken_said = true
  return (' It stopped before it had started, so it may be missing or broken: install it with %s'):format(
    config.install_hint()
  )
end

--- From now until Neovim's own exit work for the client is done, Neovim's notice of a client
--- that quit ("Client autocode quit with exit code … Check log for errors: …", a long warning
--- that stops at a "Press ENTER" prompt) is left out: the plugin says it in one line. Neovim has
--- no option for that notice. It comes from Neovim's exit callback, which runs after the
--- plugin's (a client's on_exit callbacks run in order, the config's first) and schedules its
--- work before the step this is called from ran; `after` runs once that work is done. A Neovim
--- whose notice reads otherwise simply shows it, as before.
local function without_neovim_notice(name, after)
  local notify = vim.notify
  local prefix = ('Client %s quit with exit code'):format(name)
  local function quiet(msg, ...)
    if type(msg) == 'string' and vim.startswith(msg, prefix) then
      return
    end
    return notify(msg, ...)
  end
  vim.notify = quiet
  vim.schedule(function()
    if vim.notify == quiet then
      vim.notify = notify
    end
    after()
  end)
end

--- What became of a server that went away: one line, and the `User AutoCodeServerExit` event
--- (`ev.data`: client_id, code, signal, message) once the plugin and Neovim are done with it.
--- Calls still waiting on it end with that line (client.abandon), and a command that waited
--- says it in its own words; the line goes out on its own only when none said anything.
function M.on_exit(code, signal, client_id)
  -- A fast context: only plain Lua until the scheduled step.
  local tasks = require('autocode.tasks')
  local evidence = require('autocode.evidence')
  local stopped = {}
  for id, owner in pairs(tasks.owners) do
    local snap = tasks.snapshots[id]
    if owner == client_id and snap and evidence.WORKING[snap.state] then
      evidence.interrupted[id] = snap.state
      table.insert(stopped, ('task %s was %s'):format(id, snap.state))
    end
  end
  for token in pairs(tasks.progress) do
    if token:find('^' .. client_id .. ':') then
      tasks.progress[token] = nil
    end
  end
  local c = vim.lsp.get_client_by_id(client_id)
  local name = c and c.name or 'autocode'
  -- A listening server that refused us says so itself (see remote.lua); a stop that Neovim asked
  -- for (:lsp stop, quitting) is not a crash.
  local refused = require('autocode.remote').on_exit(client_id)
  local requested = c and rawget(c, '_is_stopping') == true
  local crashed = not refused and not requested and (code ~= 0 or (signal ~= nil and signal ~= 0))
  vim.schedule(function()
    local message
    if crashed then
      local how = ('exit code %s, signal %s'):format(tostring(code), tostring(signal))
      if #stopped > 0 then
        message = ('the server stopped while %s (%s): :AutoCode resume continues it'):format(
          table.concat(stopped, ', '),
          how
        )
      else
        -- The hint checks files, which a fast context may not do: so it is made here.
        message = ('the server stopped (%s); any :AutoCode command starts it again, :LspLog says why.%s'):format(
          how,
          M.broken_server_hint(c)
        )
      end
    end
    local client = require('autocode.client')
    local ui = require('autocode.ui')
    local before = ui.said
    client.abandon(client_id, client.stopped_error(client_id, message))
    if message and ui.said == before then
      ui.error(message)
    end
    require('autocode.statusline').redraw()
    local function done()
      vim.api.nvim_exec_autocmds('User', {
        pattern = 'AutoCodeServerExit',
        modeline = false,
        data = { client_id = client_id, code = code, signal = signal, message = message },
      })
    end
    if crashed then
      without_neovim_notice(name, done)
    else
      vim.schedule(done)
    end
  end)
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
  require('autocode.statusline').redraw()
end

--- The loaded buffers a workspace edit changes (none are created here).
local function edited_buffers(edit)
  local uris = {}
  for uri in pairs(type(edit) == 'table' and type(edit.changes) == 'table' and edit.changes or {}) do
    table.insert(uris, uri)
  end
  for _, change in ipairs(type(edit) == 'table' and type(edit.documentChanges) == 'table' and edit.documentChanges or {}) do
    if type(change) == 'table' and type(change.textDocument) == 'table' and change.textDocument.uri then
      table.insert(uris, change.textDocument.uri)
    end
  end
  local bufs = {}
  for _, uri in ipairs(uris) do
    local ok, fname = pcall(vim.uri_to_fname, uri)
    local buf = ok and vim.fn.bufnr(fname) or -1
    if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
      bufs[buf] = true
    end
  end
  return vim.tbl_keys(bufs)
end

--- Closes the current undo block of `buf` (:help undo-break), so the next change starts its own.
local function break_undo(buf)
  pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('let &g:undolevels = &g:undolevels')
  end)
end

--- workspace/applyEdit: Neovim's own handler, with the change as one undo step of its own in
--- each open buffer. A buffer the person edited without a pause for typed keys (a script, a
--- plugin, another buffer's window) would otherwise join that edit and the task's change in
--- one undo step, and `u` would take back both.
function M.apply_edit(err, params, ctx)
  local bufs = edited_buffers(params and params.edit)
  for _, buf in ipairs(bufs) do
    break_undo(buf)
  end
  local result = vim.lsp.handlers['workspace/applyEdit'](err, params, ctx)
  for _, buf in ipairs(bufs) do
    break_undo(buf)
  end
  return result
end

--- autocode/task/saveDocuments: after an apply, the server asks to save the buffers that held no
--- unsaved edits before it (so the change is on disk); a buffer with the person's own unsaved
--- edits is never among them. Answers with the URIs written.
function M.save_documents(_, params, _)
  local saved = {}
  for _, uri in ipairs(params and params.uris or {}) do
    local buf = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(buf) then
      -- `write!`: the server asks only for buffers whose text equalled the file on disk right
      -- before the apply, so Neovim's "changed since reading" check has nothing of the
      -- person's to protect here (a file touched outside Neovim with the same text trips it).
      local ok = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent keepalt noautocmd write!')
      end)
      if ok and not vim.bo[buf].modified then
        table.insert(saved, uri)
      end
    end
  end
  return { saved = saved }
end

function M.all()
  return {
    ['workspace/applyEdit'] = M.apply_edit,
    [protocol.methods.task_did_change] = M.did_change,
    [protocol.methods.task_ask_question] = M.ask_question,
    [protocol.methods.task_review_plan] = M.review_plan,
    [protocol.methods.task_save_documents] = M.save_documents,
  }
end

return M
