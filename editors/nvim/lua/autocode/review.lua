-- The review of a change hunk by hunk: what Apply would do to your files as they are now
-- (unsaved edits included), from autocode.task.preview, with each hunk kept or undone by
-- :AutoCode hunk keep|undo on the hunk under the cursor; Apply then sends the kept hunks.
-- Nothing here opens by itself: :AutoCode hunks opens it.
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local C = protocol.commands
local M = {}

--- The marks that say where the change overlaps the person's own edits (in the diff and hunk buffers).
M.ns = vim.api.nvim_create_namespace('autocode.overlap')
M.SIGN = 'A!'

--- task id -> {preview = autocode.TaskPreview, undone = {[hunk id] = true}, at = {[line] = hunk id},
--- marks = the @@ lines of hunks that overlap the person's edits}
M.state = {}

local function tasks()
  return require('autocode.tasks')
end

local function absolute(snap, rel)
  return vim.fs.normalize(vim.fs.joinpath(snap.workspace or '', rel))
end

--- The texts of the task's files loaded in buffers, by path (what the person sees, unsaved edits included).
function M.documents(snap)
  local out = {}
  for _, rel in ipairs(tasks().files(snap)) do
    local buf = vim.fn.bufnr(absolute(snap, rel))
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local text = table.concat(lines, '\n')
      if vim.bo[buf].eol and #lines > 0 then
        text = text .. '\n'
      end
      out[rel] = text
    end
  end
  return out
end

local function split(text)
  if text == nil or text == vim.NIL then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- The review buffer's lines, and which hunk each line belongs to.
function M.render(id)
  local st = M.state[id]
  local p = st.preview
  local n = 0
  for _, f in ipairs(p.files) do
    n = n + #f.hunks
  end
  local lines = {
    ('# AutoCode review of task %s: what Apply does to your files as they are now'):format(id),
    '# :AutoCode hunk keep / undo (or + / - here) on a hunk; a applies the kept hunks; q closes',
    ('# %d hunk%s, %d overlap%s your own edits, %d conflict%s'):format(
      n, n == 1 and '' or 's', p.overlaps, p.overlaps == 1 and 's' or '', p.conflicts, p.conflicts == 1 and '' or 's'
    ),
  }
  local at, marks = {}, {}
  for _, f in ipairs(p.files) do
    if #f.hunks > 0 then
      table.insert(lines, '')
      table.insert(lines, ('--- a/%s (yours now)'):format(f.path))
      table.insert(lines, ('+++ b/%s (after Apply%s)'):format(f.path, f.action == 'conflict' and ', with conflict markers' or ''))
      local mine, merged = split(f.mine), split(f.merged)
      for _, h in ipairs(f.hunks) do
        local mark = st.undone[h.id] and '[undo]' or '[keep]'
        local note = h.conflict and ' CONFLICT: both changed these lines' or (h.overlaps and ' overlaps your edits' or '')
        table.insert(lines, ('@@ -%d,%d +%d,%d @@ %s %s%s'):format(h.mineStart, h.mineLines, h.mergedStart, h.mergedLines, mark, h.id, note))
        at[#lines] = h.id
        if h.overlaps or h.conflict then
          table.insert(marks, { line = #lines, says = note })
        end
        for i = h.mineStart, h.mineStart + h.mineLines - 1 do
          table.insert(lines, '-' .. (mine[i] or ''))
          at[#lines] = h.id
        end
        for i = h.mergedStart, h.mergedStart + h.mergedLines - 1 do
          table.insert(lines, '+' .. (merged[i] or ''))
          at[#lines] = h.id
        end
      end
    end
  end
  st.at = at
  st.marks = marks
  return lines
end

--- Puts the overlap sign (and a warning highlight) on lines of `buf`: list of {line (1-based), says?}.
function M.mark(buf, marks)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  for _, m in ipairs(marks) do
    vim.api.nvim_buf_set_extmark(buf, M.ns, m.line - 1, 0, {
      sign_text = M.SIGN,
      sign_hl_group = 'DiagnosticSignWarn',
      line_hl_group = 'DiagnosticVirtualTextWarn',
      virt_text = m.says and m.says ~= '' and { { ' ' .. vim.trim(m.says), 'DiagnosticWarn' } } or nil,
    })
  end
end

--- The marks a buffer shows: list of {line (1-based), sign}.
function M.marks(buf)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, M.ns, 0, -1, { details = true })) do
    table.insert(out, { line = m[2] + 1, sign = vim.trim(m[4].sign_text or '') })
  end
  return out
end

local function span(start, n)
  if n <= 0 then
    return ('before line %d'):format(start)
  elseif n == 1 then
    return ('line %d'):format(start)
  end
  return ('lines %d-%d'):format(start, start + n - 1)
end

--- The files where the change touches the person's own edits (unsaved ones included), from a
--- preview: list of {path, conflict (git cannot merge them), where (their lines, as text)}.
function M.overlapping(preview)
  local out = {}
  for _, f in ipairs(type(preview) == 'table' and preview.files or {}) do
    local where, conflict = {}, false
    for _, h in ipairs(f.hunks or {}) do
      if h.overlaps or h.conflict then
        table.insert(where, span(h.mineStart, h.mineLines))
        conflict = conflict or h.conflict == true
      end
    end
    if #where > 0 or f.action == 'conflict' then
      table.insert(out, { path = f.path, conflict = conflict or f.action == 'conflict', where = table.concat(where, ', ') })
    end
  end
  return out
end

--- What Apply would do to the person's files as they are now (inside client.run): the server's
--- autocode.task.preview given the task's loaded buffers. Returns err, preview. `as_typed` sends
--- the buffers as they are, without first reloading one that a program changed on disk (a
--- refresh while the person types must not run :edit! under them).
function M.preview(id, snap, as_typed)
  if not as_typed then
    tasks().reload_stale(snap)
  end
  local docs = M.documents(snap)
  return tasks().task_call(C.task_preview, id, next(docs) and { documents = docs } or nil)
end

--- The lines that say, before Apply, where the change overlaps the person's edits.
function M.overlap_lines(overlaps)
  if #overlaps == 0 then
    return {}
  end
  local out = {
    ('OVERLAP: %d file%s of this change touch%s lines you edited (unsaved edits included); :AutoCode hunks shows each hunk'):format(
      #overlaps, #overlaps == 1 and '' or 's', #overlaps == 1 and 'es' or ''),
  }
  for _, o in ipairs(overlaps) do
    local at = o.where ~= '' and (', your ' .. o.where) or ''
    if o.conflict then
      table.insert(out, ('OVERLAP %s%s: git cannot merge it with your edit; Apply writes nothing until you choose mine, theirs or conflict markers'):format(o.path, at))
    else
      table.insert(out, ('OVERLAP %s%s: merged with your edit; check the result in :AutoCode hunks'):format(o.path, at))
    end
  end
  return out
end

--- Marks the overlaps in a diff buffer (the `# OVERLAP` lines and each overlapping file's `+++` line).
function M.mark_diff(buf, overlaps)
  local by_path = {}
  for _, o in ipairs(overlaps) do
    by_path[o.path] = o
  end
  local marks = {}
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local path = l:match('^%+%+%+ b/(.-)%s*$')
    if vim.startswith(l, '# OVERLAP') then
      table.insert(marks, { line = i })
    elseif path and by_path[path] then
      local o = by_path[path]
      table.insert(marks, { line = i, says = (o.conflict and 'CONFLICT with your edits' or 'overlaps your edits') .. (o.where ~= '' and (' (your ' .. o.where .. ')') or '') })
    end
  end
  M.mark(buf, marks)
end

local function show(id, enter)
  local lines = M.render(id)
  local buf = ui.scratch('hunks/' .. id, lines, 'diff', {
    ['+'] = {
      function()
        M.hunk('keep')
      end,
      'keep hunk',
    },
    ['-'] = {
      function()
        M.hunk('undo')
      end,
      'undo hunk',
    },
    a = {
      function()
        tasks().complete(id)
      end,
      'apply kept hunks',
      confirm = ('Apply the kept hunks of task %s to your files?'):format(id),
    },
  }, { task = id }, { enter = enter })
  M.mark(buf, M.state[id].marks)
  return buf
end

--- Opens the hunk review of a task waiting for its completion approval (inside client.run).
function M.open(id, enter)
  id = (id and id ~= '') and id or tasks().current
  if not id then
    ui.error('no task yet: start one with :AutoCode start, or pick one with :AutoCode tasks')
    return
  end
  client.run(function()
    local snap = tasks().snapshots[id]
    local err, get = tasks().task_call(C.task_get, id)
    if not err then
      snap = tasks().unwrap(get)
    end
    if not snap then
      ui.error('hunks: ' .. client.describe(err))
      return
    end
    local err2, result = M.preview(id, snap)
    if err2 then
      ui.error('hunks: ' .. client.describe(err2))
      return
    end
    local old = M.state[id]
    M.state[id] = { preview = result, undone = old and old.undone or {}, at = {} }
    show(id, enter ~= false)
    M.follow(id, snap, 'hunks')
  end)
end

--- Keeps or undoes the hunk under the cursor of a review buffer.
function M.hunk(verb)
  if verb ~= 'keep' and verb ~= 'undo' then
    ui.error(':AutoCode hunk needs keep or undo')
    return
  end
  local id = vim.b.autocode_task
  local st = id and M.state[id]
  if not st then
    ui.error('not in a hunk review: :AutoCode hunks opens one')
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local hunk = st.at[line]
  if not hunk then
    ui.warn('no hunk under the cursor: move onto a line of a hunk (@@, - or +)')
    return
  end
  st.undone[hunk] = verb == 'undo' or nil
  ui.set_lines(vim.api.nvim_get_current_buf(), M.render(id))
  M.mark(vim.api.nvim_get_current_buf(), st.marks)
  vim.api.nvim_win_set_cursor(0, { line, 0 })
end

--- The hunk ids to keep when some were undone (nil: apply the whole change).
function M.keep(id)
  local st = M.state[id]
  if not st or next(st.undone) == nil then
    return nil
  end
  local out = {}
  for _, f in ipairs(st.preview.files) do
    for _, h in ipairs(f.hunks) do
      if not st.undone[h.id] then
        table.insert(out, h.id)
      end
    end
  end
  return out
end

-- Following the person's typing ----------------------------------------------------------
-- An open review (the diff of :AutoCode review, the hunk review) was worked out against the
-- buffers as they were when it opened. While it is open, a change to a buffer of a file the
-- task touches makes the plugin ask the server for the preview again, with the buffers' text
-- as it is then, and redraw the overlap lines and marks. Changes are gathered: the request goes
-- once the buffers have been left alone for M.debounce_ms, never on every key.

--- How long (ms) the buffers must rest after a change before the preview is asked for again.
M.debounce_ms = 300

--- task id -> {diff, hunks (which review follows), paths = {[absolute path] = true}, bufs =
--- {[buf] = true}, timer, gen (changes counted, so an outdated timer callback does nothing),
--- busy (a request is out), again (a change came meanwhile), stale (changed while no review
--- of the task was in a window)}
M.live = {}
--- Buffers our on_lines callback is attached to.
local attached = {}
local group

--- The valid review buffers of a followed task.
local function review_bufs(id)
  local l = M.live[id]
  local out = {}
  local diff = l and l.diff and ui.find('diff/' .. id)
  if diff then
    table.insert(out, diff)
  end
  local hunks = l and l.hunks and M.state[id] and ui.find('hunks/' .. id)
  if hunks then
    table.insert(out, hunks)
  end
  return out
end

local function fire(id, gen)
  local l = M.live[id]
  if l and l.gen == gen then
    M.refresh(id)
  end
end

--- A followed buffer changed: (re)starts the quiet-period timer of each task it belongs to.
--- Runs inside on_lines (text locked): it only touches timers. Returns whether anyone follows it.
local function changed(buf)
  local any = false
  for id, l in pairs(M.live) do
    if l.bufs[buf] then
      any = true
      l.gen = l.gen + 1
      local gen = l.gen
      l.timer:stop()
      l.timer:start(M.debounce_ms, 0, function()
        vim.schedule(function()
          fire(id, gen)
        end)
      end)
    end
  end
  return any
end

local function attach(buf)
  if attached[buf] or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  attached[buf] = vim.api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b)
      if not changed(b) then
        -- No open review covers this buffer any more: stop listening.
        attached[b] = nil
        return true
      end
    end,
    on_reload = function(_, b)
      changed(b)
    end,
    on_detach = function(_, b)
      -- Unloaded (:bdelete! drops unsaved edits): the server reads the file from disk now.
      attached[b] = nil
      changed(b)
    end,
  }) or nil
end

local function autocmds()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup('autocode.overlap', { clear = true })
  -- A file of the change opened after the review: its edits count from then on.
  vim.api.nvim_create_autocmd('BufReadPost', {
    group = group,
    callback = function(ev)
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(ev.buf))
      for _, l in pairs(M.live) do
        if l.paths[path] then
          l.bufs[ev.buf] = true
          attach(ev.buf)
        end
      end
    end,
  })
  -- A review shown again after the files changed while no window showed it is brought up to date.
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    pattern = 'autocode://*',
    callback = function(ev)
      for id, l in pairs(M.live) do
        if l.stale and vim.tbl_contains(review_bufs(id), ev.buf) then
          M.refresh(id)
        end
      end
    end,
  })
end

--- Makes the `what` review ('diff' or 'hunks') of task `id` follow the buffers of its files.
function M.follow(id, snap, what)
  local l = M.live[id]
  if not l then
    l = { bufs = {}, paths = {}, gen = 0, timer = assert(vim.uv.new_timer()) }
    M.live[id] = l
  end
  l[what] = true
  for _, rel in ipairs(tasks().files(snap)) do
    local path = absolute(snap, rel)
    l.paths[path] = true
    local buf = vim.fn.bufnr(path)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
      l.bufs[buf] = true
      attach(buf)
    end
  end
  autocmds()
end

--- Stops following a task (applied, cancelled, moved on, or its reviews gone). The buffers are
--- let go on their next change.
function M.unfollow(id)
  local l = M.live[id]
  if l then
    M.live[id] = nil
    l.timer:stop()
    if not l.timer:is_closing() then
      l.timer:close()
    end
  end
end

--- Sets a review buffer's lines, keeping each window's cursor on the line it was on: the diff
--- buffer's `# OVERLAP` lines come and go at its top, the rest stays.
local function replace(buf, lines)
  local function head(ls)
    local n = 0
    for _, l in ipairs(ls) do
      if not vim.startswith(l, '# OVERLAP') then
        break
      end
      n = n + 1
    end
    return n
  end
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local shift = head(lines) - head(old)
  local cursors = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    cursors[win] = vim.api.nvim_win_get_cursor(win)
  end
  ui.set_lines(buf, lines)
  local count = vim.api.nvim_buf_line_count(buf)
  for win, pos in pairs(cursors) do
    local row = pos[1] > head(old) and pos[1] + shift or pos[1]
    pcall(vim.api.nvim_win_set_cursor, win, { math.max(1, math.min(row, count)), pos[2] })
  end
end

--- Redraws the followed reviews of task `id` from a new preview.
function M.redraw(id, preview)
  local l = M.live[id]
  local snap = tasks().snapshots[id]
  if not (l and snap) or tasks().needs_kind(snap) ~= protocol.needs.approve_completion then
    return -- the answer came after the task moved on (applied, cancelled)
  end
  local diff = l.diff and ui.find('diff/' .. id)
  if diff then
    local overlaps = M.overlapping(preview)
    replace(diff, tasks().diff_lines(snap, overlaps))
    M.mark_diff(diff, overlaps)
  end
  local st = M.state[id]
  local hunks = l.hunks and st and ui.find('hunks/' .. id)
  if hunks then
    -- Hunk ids are stable where the person did not type, so what they undid stays undone.
    st.preview = preview
    replace(hunks, M.render(id))
    M.mark(hunks, st.marks)
  end
end

--- Asks for the preview of task `id` against the buffers as they are now and redraws its open
--- reviews. Says nothing on an error: the person did not ask for this, and the next change or
--- :AutoCode review asks again.
function M.refresh(id)
  local l = M.live[id]
  if not l then
    return
  end
  local snap = tasks().snapshots[id]
  local bufs = review_bufs(id)
  if not snap or tasks().needs_kind(snap) ~= protocol.needs.approve_completion or #bufs == 0 then
    M.unfollow(id)
    return
  end
  local shown = false
  for _, b in ipairs(bufs) do
    shown = shown or #vim.fn.win_findbuf(b) > 0
  end
  if not shown then
    l.stale = true
    return
  end
  if l.busy then
    l.again = true
    return
  end
  l.busy, l.again, l.stale = true, false, false
  client.run(function()
    local err, preview = M.preview(id, snap, true)
    l.busy = false
    if M.live[id] ~= l then
      return
    end
    if l.again then
      M.refresh(id)
    elseif not err then
      M.redraw(id, preview)
    end
  end)
end

function M.forget(id)
  M.unfollow(id)
  M.state[id] = nil
  ui.close_named('hunks/' .. tostring(id))
end

return M
