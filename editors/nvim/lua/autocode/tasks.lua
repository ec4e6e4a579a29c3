-- Task flows from the editor: start, answer, plan review, completion, cancel,
-- status and the task list. Keeps the newest snapshot of each task seen (from
-- command results and autocode/task/didChange) and notifies on changes.
local client = require('autocode.client')
local config = require('autocode.config')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

-- The shapes below (autocode.TaskSnapshot, autocode.Needs, ...) are LuaLS classes generated
-- from the protocol's schema into protocol_types.lua (scripts/gen_protocol_types.py). The wire
-- has one spelling (camelCase): each field is read by exactly its schema name, and `needs`
-- carries only the fields of its `kind`.

local C = protocol.commands
local NEEDS = protocol.needs
local M = {}

--- task id -> newest snapshot; `current` is the task commands act on by default.
M.snapshots = {}
M.current = nil
--- Progress per "<client id>:<token>": {title, message, percentage}.
M.progress = {}
--- task id -> id of the LSP client (server) the task was seen from: its commands go there.
M.owners = {}

--- The snapshot inside a command result or a didChange notification.
---@param result autocode.TaskSnapshot|autocode.TaskDidChangeParams|any
---@return autocode.TaskSnapshot|nil
function M.unwrap(result)
  if type(result) ~= 'table' then
    return nil
  end
  return type(result.task) == 'table' and result.task or result
end

---@param snap autocode.TaskSnapshot
---@return string|nil
function M.id_of(snap)
  return snap and snap.id
end

--- The needs object of a snapshot (empty table when it needs nothing).
---@param snap autocode.TaskSnapshot
---@return autocode.Needs|table
function M.needs(snap)
  return snap.needs or {}
end

---@param snap autocode.TaskSnapshot
---@return string|nil
function M.needs_kind(snap)
  local kind = M.needs(snap).kind
  if kind == 'answer_questions' then
    return NEEDS.question
  end
  return kind
end

--- The plan revision a snapshot asks approval for.
---@param snap autocode.TaskSnapshot
---@return integer|nil
function M.plan_revision(snap)
  return M.needs(snap).planRevision
end

--- What a notification says a task waits for, by needs kind.
local waiting_text = {
  [NEEDS.question] = 'it has a question for you (:AutoCode answer)',
  [NEEDS.approve_plan] = 'its plan waits for you: :AutoCode review shows it, then :AutoCode approve or :AutoCode reject',
  [NEEDS.approve_completion] = 'its change waits for you: :AutoCode review shows the diff and the verdict, :AutoCode apply applies it, :AutoCode cancel drops it',
  [NEEDS.resolve_conflicts] = 'some files overlap your own edits: :AutoCode review lists them, :AutoCode resolve chooses per file (nothing was written yet)',
  [NEEDS.save_files] = 'the change is merged into buffers that hold your unsaved edits: :w them to complete it',
}

--- What a task waiting for a save says: the files to :w, and those of them that hold conflict markers.
---@param snap autocode.TaskSnapshot
local function save_text(snap)
  local needs = M.needs(snap)
  local paths = needs.paths or {}
  if #paths == 0 then
    return waiting_text[NEEDS.save_files]
  end
  local choices = needs.apply and needs.apply.choices or {}
  local marked = vim.tbl_filter(function(p)
    return choices[p] == 'markers'
  end, paths)
  local text = ('the change is merged into buffers that hold your unsaved edits: :w %s to complete it'):format(
    table.concat(paths, ', ')
  )
  if #marked > 0 then
    text = text
      .. ('; %s %s conflict markers: resolve them before or after you :w'):format(
        table.concat(marked, ', '),
        #marked == 1 and 'holds' or 'hold'
      )
  end
  return text
end

--- The workspace-relative files a snapshot's change touches.
---@param snap autocode.TaskSnapshot
function M.files(snap)
  local needs = M.needs(snap)
  local out = vim.list_extend({}, needs.files or {})
  for _, c in ipairs(needs.conflicts or {}) do
    table.insert(out, c.path)
  end
  if #out == 0 and snap.result then
    vim.list_extend(out, snap.result.files)
  end
  return out
end

--- Records a snapshot if it is not older than the one held. Notifies when
--- its state changed and shows (without entering) the diff when it starts
--- waiting for completion. `client_id` is the server it came from.
--- Returns true when it was kept.
---@param snap autocode.TaskSnapshot|nil
function M.remember(snap, quiet, client_id)
  local id = M.id_of(snap)
  if not id then
    return false
  end
  if client_id then
    M.owners[id] = client_id
  end
  local old = M.snapshots[id]
  if old and old.revision > snap.revision then
    return false
  end
  M.snapshots[id] = snap
  M.current = M.current or id
  if old and old.revision ~= snap.revision then
    require('autocode.evidence').interrupted[id] = nil
  end
  local state = snap.state
  local changed = not old or old.state ~= state
  if changed and not quiet then
    local kind = M.needs_kind(snap)
    local msg = ('task %s is %s'):format(id, tostring(state))
    if kind == NEEDS.save_files then
      msg = msg .. ': ' .. save_text(snap)
    elseif waiting_text[kind] then
      msg = msg .. ': ' .. waiting_text[kind]
    end
    local written = M.written(snap)
    if written then
      msg = msg .. (#written > 0 and (': written ' .. table.concat(written, ', ')) or ': nothing was written')
    end
    local err = snap.error
    if err then
      msg = msg .. ': ' .. err.message
    end
    local way_out = require('autocode.evidence').failure_note(snap)
    if way_out ~= '' then
      msg = msg .. '; ' .. way_out
    end
    ui.notify(msg, err and vim.log.levels.WARN or vim.log.levels.INFO)
    if kind == NEEDS.approve_completion and config.options.open_diff then
      M.open_diff(snap, false)
    elseif kind == NEEDS.resolve_conflicts and config.options.open_diff then
      M.open_conflicts(snap, false)
    end
    if snap.done == true or (kind ~= NEEDS.question and old and M.needs_kind(old) == NEEDS.question) then
      require('autocode.questions').drop(id)
    end
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'AutoCodeTaskChanged', data = snap, modeline = false })
  require('autocode.statusline').redraw()
  require('autocode.signs').refresh()
  return true
end

--- The files an apply wrote (result.apply.written), or nil when the task has not applied.
---@param snap autocode.TaskSnapshot
---@return string[]|nil
function M.written(snap)
  local apply = snap.result and snap.result.apply
  return apply and apply.written or nil
end

--- The server (LSP client) that owns a task: the one it was seen from, else
--- the one whose root is the task's workspace; nil lets client.ensure pick
--- the current buffer's.
--- @return vim.lsp.Client|nil
function M.client_for(id)
  local cid = id and M.owners[id]
  local c = cid and vim.lsp.get_client_by_id(cid)
  if c and not c:is_stopped() then
    return c
  end
  local snap = id and M.snapshots[id]
  local ws = snap and snap.workspace
  if type(ws) == 'string' and ws ~= '' then
    ws = vim.fs.normalize(ws)
    for _, other in ipairs(vim.lsp.get_clients({ name = 'autocode' })) do
      if other.root_dir and vim.fs.normalize(other.root_dir) == ws then
        return other
      end
      for _, folder in ipairs(other.workspace_folders or {}) do
        if vim.fs.normalize(vim.uri_to_fname(folder.uri)) == ws then
          return other
        end
      end
    end
  end
  return nil
end

--- Arguments naming a task and, when known, its workspace (so any server finds it).
function M.task_args(id, extra)
  local args = vim.tbl_extend('force', { taskId = id }, extra or {})
  local snap = M.snapshots[id]
  local ws = snap and snap.workspace
  if type(ws) == 'string' and ws ~= '' then
    args.workspace = ws
  end
  return args
end

--- Calls a task command on the task's own server; returns err, result.
local function task_call(command, id, extra)
  local c = M.client_for(id)
  local err, result = client.await(command, M.task_args(id, extra), c)
  if not err and c then
    local snap = M.unwrap(result)
    if snap and M.id_of(snap) then
      M.owners[M.id_of(snap)] = c.id
    end
  end
  return err, result
end
M.task_call = task_call

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
  if err and client.kind(err) == protocol.kinds.already_decided then
    -- A duplicate or late decision (another client, or a retry after a reconnect): nothing is lost.
    ui.warn(what .. ': ' .. client.describe(err))
    return true
  elseif err then
    ui.error(what .. ' failed: ' .. client.describe(err))
    return true
  end
  return false
end

--- Fetches and remembers a task's snapshot (inside client.run); nil after reporting an error.
local function fetch(id, what)
  local err, result = task_call(C.task_get, id)
  if failed(err, what) then
    return nil
  end
  local snap = M.unwrap(result)
  M.remember(snap, true)
  return snap
end

--- The task's snapshot when it waits for `kind`; otherwise a warning saying it
--- has `missing` (and what it is instead), and nil.
local function fetch_waiting(id, what, kind, missing)
  local snap = fetch(id, what)
  if snap and M.needs_kind(snap) ~= kind then
    ui.warn(('task %s has %s (it is %s)'):format(id, missing, tostring(snap.state)))
    return nil
  end
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
---@param snap autocode.TaskSnapshot
function M.questions(snap)
  local out = {}
  if M.needs_kind(snap) ~= NEEDS.question then
    return out
  end
  for _, q in ipairs(M.needs(snap).questions or {}) do
    table.insert(out, { id = q.id, text = q.text, choices = q.choices, default = q.default })
  end
  return out
end

--- Markdown lines describing a task snapshot (`commands`: the server's, for the ways out).
---@param snap autocode.TaskSnapshot
---@param commands table<string, boolean>|nil
function M.render(snap, commands)
  local id = M.id_of(snap) or '?'
  local out = {
    '# AutoCode task ' .. id,
    '',
    '- state: ' .. tostring(snap.state or '?'),
    '- phase: ' .. tostring(snap.phase or '?'),
    '- revision: ' .. tostring(snap.revision or '?'),
    '- done: ' .. tostring(snap.done == true),
  }
  local brief = snap.brief
  if brief then
    vim.list_extend(out, { '', '## Brief', '' })
    vim.list_extend(out, ui.lines(brief))
  end
  local kind = M.needs_kind(snap)
  if kind then
    vim.list_extend(out, { '', '## Waiting for you: ' .. kind, '' })
    local message = M.needs(snap).message
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
  local evidence = require('autocode.evidence')
  local tests = evidence.test_lines(snap)
  if #tests > 0 then
    vim.list_extend(out, { '', '## Tests', '' })
    vim.list_extend(out, tests)
  end
  local agent = evidence.agent_lines(snap)
  if #agent > 0 then
    vim.list_extend(out, { '', '## Agent', '' })
    vim.list_extend(out, agent)
  end
  local ways = evidence.ways_out(snap, commands)
  if #ways > 0 then
    vim.list_extend(out, { '', '## Next', '' })
    for _, w in ipairs(ways) do
      table.insert(out, '- ' .. w)
    end
  end
  local result = snap.result
  if result then
    vim.list_extend(out, { '', '## Result', '' })
    ui.render_value(result, out)
  end
  return out
end

-- Flows ----------------------------------------------------------------------

--- Asks one question (inside a coroutine); returns {text, how} or nil. See autocode.questions.
function M.prompt_answer(question)
  return require('autocode.questions').prompt(question)
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
    local c = client.ensure()
    local args = M.with_workspace({ brief = brief })
    local err, result = client.await(C.task_start, args, c)
    if err and require('autocode.trust').needed(err) then
      -- The answer to the person's own :AutoCode start: one prompt, then one retry on their yes.
      if not require('autocode.trust').resolve(err, args.workspace, c) then
        return
      end
      err, result = client.await(C.task_start, args, c)
    end
    if failed(err, 'start') then
      return
    end
    local snap = M.unwrap(result)
    M.current = M.id_of(snap) or M.current
    M.remember(snap, false, c and c.id)
  end)
end

--- Asks the person the open questions of a task now (whatever was queued) and
--- sends the answers. `text` answers the first question as typed, without asking.
function M.answer(id, text)
  id = target(id)
  if not id then
    return
  end
  local questions = require('autocode.questions')
  client.run(function()
    local snap = fetch(id, 'answer')
    if not snap then
      return
    end
    local open = M.questions(snap)
    if #open == 0 then
      ui.warn(('task %s has no open question (it is %s)'):format(id, tostring(snap.state)))
      return
    end
    for _, q in ipairs(open) do
      local entry = { task_id = id, question = q, client = M.client_for(id), workspace = snap.workspace }
      questions.drop_question(entry)
      local sent
      if text then
        sent = questions.send(entry, { text = text, how = protocol.how.typed })
        text = nil
      else
        sent = questions.ask(entry)
      end
      if not sent then
        return
      end
    end
  end)
end

--- The plan a buffer shows, from reviewPlan params (which name the task `taskId` and carry
--- the Markdown as `plan`) or from a snapshot waiting for plan approval (its `needs`).
---@param source autocode.ReviewPlanParams|autocode.TaskSnapshot
---@return {id: string|nil, revision: integer|nil, markdown: string|nil, uri: string|nil}
local function plan_of(source)
  if source.taskId then
    return {
      id = source.taskId,
      revision = source.planRevision,
      markdown = source.plan,
      uri = source.planUri,
    }
  end
  local needs = M.needs(source)
  return {
    id = M.id_of(source),
    revision = needs.planRevision,
    markdown = needs.markdown,
    uri = needs.planUri,
  }
end

local function plan_lines(plan)
  local lines = ui.lines(type(plan.markdown) == 'string' and plan.markdown or nil)
  if #lines == 0 then
    lines = { '# Plan of task ' .. tostring(plan.id), '', plan.uri and ('The plan is at ' .. plan.uri) or '(no plan text was sent)' }
  end
  return lines
end

--- Shows a plan in a markdown buffer, by default without entering it. In the
--- buffer `a` approves and `r` requests changes, each after asking.
--- @param params autocode.ReviewPlanParams|autocode.TaskSnapshot
--- @param enter boolean|nil
function M.open_plan(params, enter)
  local plan = plan_of(params)
  local id, revision = plan.id, plan.revision
  return ui.scratch('plan/' .. tostring(id), plan_lines(plan), 'markdown', {
    a = {
      function()
        M.approve(id, revision)
      end,
      'approve plan',
      confirm = ('Approve plan revision %s of task %s?'):format(tostring(revision), tostring(id)),
    },
    r = {
      function()
        M.reject(id)
      end,
      'request changes',
    },
  }, { task = id, plan_revision = revision }, { enter = enter == true })
end

function M.approve(id, revision)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    if not revision then
      local snap = fetch_waiting(id, 'approve', NEEDS.approve_plan, 'no plan waiting for approval')
      if not snap then
        return
      end
      revision = M.plan_revision(snap)
    end
    local err, result = task_call(C.task_approve_plan, id, { revision = revision })
    -- The approval is recorded before the task goes on (and the call waits for the whole run):
    -- a task that was working when its server stopped had its plan approved.
    local was = require('autocode.evidence').interrupted[id]
    if client.kind(err) == 'serverStopped' and was then
      ui.warn(('plan approved; the server stopped during the run (while %s): :AutoCode resume continues task %s'):format(
        was,
        tostring(id)
      ))
      return
    end
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
    local err, result = task_call(C.task_reject_plan, id, { feedback = feedback })
    if not failed(err, 'reject') then
      M.remember(M.unwrap(result))
      ui.close_named('plan/' .. tostring(id))
    end
  end)
end

--- Shows a task's diff, by default without entering it. In the buffer `a`
--- applies and `x` cancels the task, each after asking.
---@param snap autocode.TaskSnapshot
--- The verdict on a change as lines: its summary, each concern, the failing tests.
---@param proof autocode.Proof|nil
---@return string[]
function M.verdict_lines(proof)
  if proof == nil or proof == vim.NIL then
    return { 'Verdict: unproven (the tests did not run through the proof)' }
  end
  local out = { 'Verdict: ' .. tostring(proof.summary or proof.status) }
  for _, concern in ipairs(proof.concerns or {}) do
    table.insert(out, 'concern: ' .. tostring(concern.sentence))
  end
  if proof.status ~= 'verified' then
    table.insert(out, ':AutoCode apply asks you to type "unproven" to apply it anyway')
  end
  return out
end

--- The lines of the diff buffer of a change waiting for its apply. `overlaps` (review.overlapping
--- of a preview against the person's buffers) puts `# OVERLAP` lines first.
function M.diff_lines(snap, overlaps)
  local id = M.id_of(snap)
  local needs = M.needs(snap)
  local diff = needs.diff
  local lines = ui.lines(type(diff) == 'string' and diff or nil)
  if #lines == 0 then
    lines = { '# task ' .. tostring(id) .. ': no diff was sent' }
    for _, l in ipairs(ui.lines(needs.apply and needs.apply.message)) do
      table.insert(lines, '# ' .. l)
    end
  end
  -- The verdict first: what proves the change (or why nothing does), then each concern, the
  -- tests, the agent's own summary and the reviewer's.
  local evidence = require('autocode.evidence')
  local header = vim.list_extend(M.verdict_lines(needs.proof), evidence.test_lines(snap))
  vim.list_extend(header, evidence.agent_lines(snap))
  for i = #header, 1, -1 do
    table.insert(lines, 1, '# ' .. header[i])
  end
  local moved = needs.headMoved
  if moved then
    table.insert(lines, 1, ('# HEAD moved while the task ran (%s -> %s): the change is merged onto your work as it is now'):format(
      tostring(moved.from),
      tostring(moved.to)
    ))
  end
  local review = require('autocode.review')
  local said = review.overlap_lines(overlaps or {})
  for i = #said, 1, -1 do
    table.insert(lines, 1, '# ' .. said[i])
  end
  return lines
end

--- Opens the diff buffer of a change waiting for its apply. `overlaps` (review.overlapping of a
--- preview against the person's buffers, when :AutoCode review made one) puts `# OVERLAP` lines
--- first and marks each overlapping file's `+++` line with a sign.
function M.open_diff(snap, enter, overlaps)
  local id = M.id_of(snap)
  local review = require('autocode.review')
  local buf = ui.scratch('diff/' .. tostring(id), M.diff_lines(snap, overlaps), 'diff', {
    a = {
      function()
        M.complete(id)
      end,
      'apply the change',
      confirm = ('Apply the change of task %s to your files?'):format(tostring(id)),
    },
    x = {
      function()
        M.cancel(id, true)
      end,
      'cancel task',
      confirm = ('Cancel task %s? Its change is dropped (the run folder stays).'):format(tostring(id)),
    },
  }, { task = id }, { enter = enter == true })
  review.mark_diff(buf, overlaps or {})
  return buf
end

--- Absolute path of a workspace-relative file of a task.
local function absolute(snap, rel)
  local ws = snap.workspace
  if type(ws) == 'string' and ws ~= '' and not vim.startswith(rel, '/') then
    return vim.fs.normalize(vim.fs.joinpath(ws, rel))
  end
  return vim.fs.normalize(rel)
end

--- Reloads the buffers of files written behind Neovim's back (:checktime).
--- Buffers with unsaved edits are left alone: the server changed those
--- through workspace/applyEdit (they stay unsaved for the person to :w), and
--- :checktime would only ask whether to drop them.
function M.checktime(snap, files)
  for _, rel in ipairs(files or M.files(snap)) do
    local buf = vim.fn.bufnr(absolute(snap, rel))
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
      pcall(vim.cmd.checktime, buf)
    end
  end
end

--- Reloads the task's buffers that hold no unsaved edit but an older text than
--- their file (written by another program, a git command, a shell since they
--- were read): the merge must start from what is on disk, never from a stale
--- buffer whose later :w would throw that work away. Buffers with unsaved
--- edits are left as they are: those edits are the person's.
function M.reload_stale(snap)
  for _, rel in ipairs(M.files(snap)) do
    local path = absolute(snap, rel)
    local buf = vim.fn.bufnr(path)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified and vim.fn.filereadable(path) == 1 then
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      if not vim.deep_equal(lines, vim.fn.readfile(path)) then
        vim.api.nvim_buf_call(buf, function()
          vim.cmd('silent! edit!')
        end)
      end
    end
  end
end

--- Attaches the loaded buffers of a task's files to its server, so it merges
--- into them (unsaved edits included) through workspace/applyEdit instead of
--- writing the files under them.
function M.sync_buffers(snap, c)
  if not c then
    return
  end
  for _, rel in ipairs(M.files(snap)) do
    local buf = vim.fn.bufnr(absolute(snap, rel))
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and not vim.lsp.buf_is_attached(buf, c.id) then
      pcall(vim.lsp.buf_attach_client, buf, c.id)
    end
  end
end

--- Says what an apply did, or why it did not go through (needs.apply of a task back at approve_completion).
---@param after autocode.TaskSnapshot
local function report_apply(after)
  local needs = M.needs(after)
  local attempt = needs.apply
  if M.needs_kind(after) == NEEDS.approve_completion and attempt then
    ui.error(('the change was not applied: %s (:AutoCode apply tries again)'):format(attempt.message))
    return
  end
  local apply = after.result and after.result.apply
  if apply and #apply.writtenByEditor > 0 then
    local files = table.concat(apply.writtenByEditor, ', ')
    if after.state == 'COMPLETED' then
      ui.notify(('changed in your open buffers and written to disk (u undoes): %s'):format(files))
    else
      ui.notify(('changed in your open buffers, kept unsaved with your edits (:w to keep; u undoes): %s'):format(files))
    end
  end
end

--- Applies a verified change. A server that merges on disk (older than the
--- three-way apply through the editor) would leave an unsaved buffer of a
--- touched file stale, and a later :w would overwrite the change: then the
--- apply is refused with the reason. Afterwards the touched buffers are reloaded.
function M.complete(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local snap = fetch_waiting(id, 'apply', NEEDS.approve_completion, 'no change waiting to be applied')
    if not snap then
      return
    end
    local c = M.client_for(id) or client.ensure()
    M.reload_stale(snap)
    -- The server merges into the buffers through workspace/applyEdit and never writes a file
    -- behind an unsaved buffer: it only needs their current text.
    M.sync_buffers(snap, c)
    local extra = nil
    -- The hunks kept in :AutoCode hunks (nil when none was undone: the whole change).
    local keep = require('autocode.review').keep(id)
    if keep then
      extra = { keep = keep }
    end
    local needed = M.needs(snap).confirmation
    if needed and needed ~= vim.NIL then
      -- Nothing proves this change: apply it only on the word typed by the person.
      local proof = M.needs(snap).proof
      local summary = (proof and proof ~= vim.NIL and proof.summary) or 'the tests did not prove it'
      local typed = ui.input(('Nothing proves this change (%s). Type %s to apply it anyway: '):format(summary, needed))
      if typed ~= needed then
        ui.notify('not applied: the change is ' .. tostring(proof and proof ~= vim.NIL and proof.status or 'unproven'))
        return
      end
      extra = vim.tbl_extend('force', extra or {}, { confirm = needed })
    end
    local err, result = task_call(C.task_approve_completion, id, extra)
    if failed(err, 'apply') then
      return
    end
    local after = M.unwrap(result)
    M.remember(after)
    M.checktime(after, vim.list_extend(M.files(snap), M.written(after) or {}))
    report_apply(after)
    if M.needs_kind(after) ~= NEEDS.approve_completion then
      ui.close_named('diff/' .. tostring(id))
      require('autocode.review').forget(id)
    end
  end)
end

--- Lines describing the conflicts of a task waiting for resolve_conflicts.
---@param snap autocode.TaskSnapshot
function M.render_conflicts(snap)
  local id = M.id_of(snap)
  local needs = M.needs(snap)
  local out = {
    '# AutoCode task ' .. tostring(id) .. ': files that overlap your edits',
    '',
    'Nothing was written to these files yet. :AutoCode resolve chooses, per file:',
    'mine (keep your version), theirs (take the task\'s) or markers (conflict markers to resolve here).',
    '',
  }
  local moved = needs.headMoved
  if moved then
    table.insert(out, ('HEAD moved while the task ran: %s -> %s'):format(tostring(moved.from), tostring(moved.to)))
    table.insert(out, '')
  end
  for _, c in ipairs(needs.conflicts or {}) do
    table.insert(out, ('- %s (%s)'):format(tostring(c.path), tostring(c.reason)))
    for _, h in ipairs(c.hunks) do
      table.insert(out, ('    yours: lines %s+%s, task: lines %s+%s'):format(
        tostring(h.mineStart),
        tostring(h.mineLines),
        tostring(h.theirsStart),
        tostring(h.theirsLines)
      ))
    end
  end
  return out
end

function M.open_conflicts(snap, enter)
  local id = M.id_of(snap)
  return ui.scratch('conflicts/' .. tostring(id), M.render_conflicts(snap), 'markdown', {}, { task = id }, { enter = enter == true })
end

M.RESOLUTIONS = {
  { choice = 'mine', label = 'mine: keep my version' },
  { choice = 'theirs', label = "theirs: take the task's version" },
  { choice = 'markers', label = 'markers: write conflict markers to resolve in the editor' },
}

--- Chooses, per conflicted file, mine / theirs / markers (vim.ui.select) and
--- sends the choices. Dismissing any file sends nothing.
function M.resolve(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local snap = fetch_waiting(id, 'resolve', NEEDS.resolve_conflicts, 'no conflicts to resolve')
    if not snap then
      return
    end
    local labels = vim.tbl_map(function(r)
      return r.label
    end, M.RESOLUTIONS)
    local choices, markers = {}, {}
    for _, c in ipairs(M.needs(snap).conflicts or {}) do
      local path = tostring(c.path)
      local _, idx = ui.select(labels, ('%s (%s): which version?'):format(path, tostring(c.reason)))
      if not idx then
        ui.warn('conflicts left open: nothing was written (:AutoCode resolve to choose again)')
        return
      end
      choices[path] = M.RESOLUTIONS[idx].choice
      if choices[path] == 'markers' then
        table.insert(markers, path)
      end
    end
    if next(choices) == nil then
      choices = vim.empty_dict()
    end
    M.sync_buffers(snap, M.client_for(id))
    local err, result = task_call(C.task_resolve_conflicts, id, { choices = choices })
    if failed(err, 'resolve') then
      return
    end
    local after = M.unwrap(result)
    M.remember(after)
    M.checktime(after, vim.list_extend(M.files(snap), M.written(after) or {}))
    report_apply(after)
    ui.close_named('conflicts/' .. tostring(id))
    if #markers > 0 then
      ui.notify('resolve the conflict markers in ' .. table.concat(markers, ', '))
    end
  end)
end

--- Opens (and enters) what a task waits for: its plan, diff or conflicts; else its status.
function M.review(id)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    local snap = fetch(id, 'review')
    if not snap then
      return
    end
    local kind = M.needs_kind(snap)
    if kind == NEEDS.approve_plan then
      M.open_plan(snap, true)
    elseif kind == NEEDS.approve_completion then
      -- What Apply would do to the files as they are now: overlaps with the person's own edits
      -- (unsaved ones included) are said and marked before they apply. A server without the
      -- preview shows the diff alone.
      local review = require('autocode.review')
      local err, preview = review.preview(id, snap)
      M.open_diff(snap, true, not err and review.overlapping(preview) or nil)
      if not err then
        -- The marks then follow the person's typing in the files the change touches.
        review.follow(id, snap, 'diff')
      end
    elseif kind == NEEDS.resolve_conflicts then
      M.open_conflicts(snap, true)
    else
      local commands = client.features(M.client_for(id) or client.ensure()).commands
      ui.scratch('task/' .. id, M.render(snap, commands), 'markdown', {}, { task = id })
    end
  end)
end

--- Cancels a task after the person confirms (`confirmed`: they already did, in the diff buffer).
function M.cancel(id, confirmed)
  id = target(id)
  if not id then
    return
  end
  client.run(function()
    if not confirmed and not ui.confirm(('Cancel task %s? Its change is dropped (the run folder stays).'):format(id), 'Yes, cancel it') then
      ui.notify(('task %s was not cancelled'):format(id))
      return
    end
    require('autocode.questions').drop(id)
    local err, result = task_call(C.task_cancel, id)
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
    local err, result = task_call(C.task_resume, id)
    if not failed(err, 'resume') then
      M.remember(M.unwrap(result))
    end
  end)
end

--- :AutoCode output: the whole test output of a task.
function M.output(id)
  id = target(id)
  if id then
    require('autocode.evidence').output(id, fetch)
  end
end

--- :AutoCode transcript: what the model did in a task, step by step.
function M.transcript(id)
  id = target(id)
  if id then
    require('autocode.evidence').transcript(id, task_call)
  end
end

--- :AutoCode retry: the verification of a failed task again (a server that offers it).
function M.retry(id)
  id = target(id)
  if id then
    require('autocode.evidence').retry(id, task_call, function(result)
      M.remember(M.unwrap(result))
    end)
  end
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
    local commands = client.features(M.client_for(id) or client.ensure()).commands
    ui.scratch('task/' .. id, M.render(snap, commands), 'markdown', {}, { task = id })
  end)
end

--- Lists the workspace's tasks and lets the person pick one as current.
function M.list()
  client.run(function()
    local c = client.ensure()
    local err, result = client.await(C.task_list, M.with_workspace({}), c)
    if failed(err, 'tasks') then
      return
    end
    local items = result.tasks or {}
    if #items == 0 then
      ui.notify('no tasks in this workspace yet')
      return
    end
    local labels = {}
    for i, snap in ipairs(items) do
      M.remember(snap, true, c and c.id)
      labels[i] = ('%s  %s  %s'):format(M.id_of(snap), tostring(snap.state), tostring(snap.brief or ''))
    end
    local _, idx = ui.select(labels, 'AutoCode tasks')
    if idx then
      M.current = M.id_of(items[idx])
      M.status(M.current)
    end
  end)
end

return M
