-- Shared by the headless test scripts (nvim --headless --clean -l script.lua):
-- puts this plugin on the runtimepath (unless installed, see below), records vim.notify messages, and
-- gives assertions and bounded waits. A failed check raises, so nvim exits 1.
local H = {}

local here = debug.getinfo(1, 'S').source:sub(2)
H.plugin_root = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(here, ':p'))))
-- AUTOCODE_TEST_INSTALLED: the plugin was installed as a person would (a plugin manager
-- put it on 'runtimepath'); the harness must not put this checkout's copy first.
if not vim.env.AUTOCODE_TEST_INSTALLED then
  vim.opt.rtp:prepend(H.plugin_root)
  vim.cmd.runtime('plugin/autocode.lua')
end

H.notes = {}
vim.notify = function(msg, level, _)
  table.insert(H.notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
  io.stderr:write(('[notify %s] %s\n'):format(tostring(level), tostring(msg)))
end

function H.log(...)
  io.stdout:write(table.concat(vim.tbl_map(tostring, { ... }), ' ') .. '\n')
end

function H.fail(msg)
  error('FAILED: ' .. msg, 2)
end

function H.check(cond, msg)
  if not cond then
    error('FAILED: ' .. tostring(msg), 2)
  end
  return cond
end

function H.eq(got, want, msg)
  if not vim.deep_equal(got, want) then
    error(('FAILED: %s\n  want: %s\n  got:  %s'):format(msg or 'values differ', vim.inspect(want), vim.inspect(got)), 2)
  end
end

--- When true, H.wait fails as soon as an ERROR notification arrives.
H.strict = false

--- Waits (processing events) until `cond()` is true, or fails naming `what`.
function H.wait(ms, cond, what)
  local ok = vim.wait(ms, function()
    if H.strict then
      for _, n in ipairs(H.notes) do
        if n.level == vim.log.levels.ERROR then
          return true
        end
      end
    end
    return cond()
  end, 20)
  if ok and H.strict and not cond() then
    error(('FAILED: error while waiting for %s: %s'):format(what, H.notes[#H.notes].msg), 2)
  end
  if not ok then
    local notes = vim.tbl_map(function(n)
      return n.msg
    end, H.notes)
    error(('FAILED: timed out after %d ms waiting for %s\n  notifications: %s'):format(ms, what, vim.inspect(notes)), 2)
  end
end

--- The first notification containing `text` (plain), at `level` if given.
function H.note(text, level)
  for _, n in ipairs(H.notes) do
    if n.msg:find(text, 1, true) and (level == nil or n.level == level) then
      return n
    end
  end
end

--- Waits for a notification containing `text`.
function H.wait_note(ms, text, level)
  H.wait(ms, function()
    return H.note(text, level) ~= nil
  end, ('a notification containing %q'):format(text))
  return H.note(text, level)
end

--- Lines of the scratch buffer autocode://<name>, or nil.
function H.scratch_lines(name)
  local buf = require('autocode.ui').find(name)
  if buf then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
end

--- The lines of review buffer `buf` that carry the overlap sign (each mark checked to be that sign).
function H.signed_lines(buf)
  local review = require('autocode.review')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local out = {}
  for _, m in ipairs(review.marks(buf)) do
    H.eq(m.sign, review.SIGN, 'the overlap sign')
    table.insert(out, lines[m.line])
  end
  return out
end

--- Replaces vim.ui.input / vim.ui.select with scripted answers (a list, consumed in order;
--- a function gets the prompt). Records every prompt in H.prompts.
H.prompts = {}
function H.script_ui(inputs, selects)
  vim.ui.input = function(opts, on_confirm)
    table.insert(H.prompts, { kind = 'input', prompt = opts.prompt, default = opts.default })
    local answer
    if type(inputs) == 'function' then
      answer = inputs(opts.prompt)
    else
      answer = table.remove(inputs, 1)
    end
    vim.schedule(function()
      on_confirm(answer)
    end)
  end
  vim.ui.select = function(items, opts, on_choice)
    table.insert(H.prompts, { kind = 'select', prompt = opts.prompt, items = items })
    local pick
    if type(selects) == 'function' then
      pick = selects(opts.prompt, items)
    else
      pick = table.remove(selects, 1)
    end
    local idx
    for i, item in ipairs(items) do
      if item == pick or (type(pick) == 'number' and i == pick) then
        idx = i
      end
    end
    vim.schedule(function()
      on_choice(idx and items[idx] or nil, idx)
    end)
  end
end

--- The running AutoCode client, waiting for it to initialize.
function H.client(ms)
  local c
  H.wait(ms or 20000, function()
    c = vim.lsp.get_clients({ name = 'autocode' })[1]
    return c ~= nil and c.initialized == true
  end, 'the autocode client to initialize')
  return c
end

--- Opens `file`, starts the sample task on patches/add-tax.patch, answers its naming question
--- (typed) on :AutoCode answer, approves the plan and waits for the verified change. Returns the
--- task id and the buffer of `file`. The scripts that need the change waiting start here.
--- `accepts(item)`, when given, names further picker items the script answers with.
function H.verified_change(file, accepts)
  local tasks = require('autocode.tasks')
  local questions = require('autocode.questions')
  H.script_ui(function()
    return 'Name each test after the behaviour it checks'
  end, function(prompt, items)
    for _, item in ipairs(items) do
      if item == questions.TYPE or item == 'Yes' or (accepts and accepts(item)) then
        return item
      end
    end
    H.fail('unexpected prompt: ' .. tostring(prompt))
  end)
  vim.lsp.enable('autocode')
  vim.cmd.edit(file)
  local buf = vim.api.nvim_get_current_buf()
  H.client()
  vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
  -- The question is announced, not opened: the person answers it on purpose.
  H.wait_note(60000, 'asks:')
  vim.cmd('AutoCode answer')
  H.wait(60000, function()
    return tasks.current ~= nil and tasks.needs_kind(tasks.snapshots[tasks.current] or {}) == 'approve_plan'
  end, 'the plan')
  local id = tasks.current
  vim.cmd('AutoCode approve')
  H.wait(120000, function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
  end, 'the verified change')
  return id, buf
end

--- Calls a server command and fails the test on an error.
function H.call(command, args, ms)
  local err, result = require('autocode.client').call_sync(command, args or {}, ms or 30000)
  if err then
    error(('FAILED: %s returned an error: %s'):format(command, vim.inspect(err)), 2)
  end
  return result
end

--- Pids of the processes nvim started (the language server among them).
function H.children()
  return vim.api.nvim_get_proc_children(vim.fn.getpid())
end

function H.done()
  H.log('ALL OK')
  vim.cmd('qall!')
end

--- Commands sent to servers, recorded by H.record_calls(): {command, args, client_id}.
H.calls = {}
function H.record_calls()
  local client = require('autocode.client')
  local call = client.call
  client.call = function(command, args, cb, c)
    table.insert(H.calls, { command = command, args = vim.deepcopy(args or {}), client_id = c and c.id })
    return call(command, args, cb, c)
  end
end

--- The recorded calls of one command.
function H.sent(command)
  return vim.tbl_filter(function(c)
    return c.command == command
  end, H.calls)
end

-- Scripts run with `nvim -S` (the main loop running, so keys typed with
-- nvim_input are handled as a person's) use these: the test body runs in a
-- coroutine that sleeps on timers instead of blocking in vim.wait.

local body
--- Runs `fn` as the test body; a failure prints it and exits 1.
function H.async(fn)
  body = coroutine.create(function()
    local ok, err = xpcall(fn, debug.traceback)
    if not ok then
      io.stdout:write(tostring(err) .. '\n')
      vim.cmd('cquit 1')
    end
  end)
  vim.schedule(function()
    H.resume_body()
  end)
end

function H.resume_body()
  local ok, err = coroutine.resume(body)
  if not ok then
    io.stdout:write('FAILED: ' .. tostring(err) .. '\n')
    vim.cmd('cquit 1')
  end
end

--- Sleeps `ms` inside H.async, letting the main loop run (and typed keys be handled).
function H.sleep(ms)
  vim.defer_fn(H.resume_body, ms)
  coroutine.yield()
end

--- Like H.wait, inside H.async.
function H.until_(ms, cond, what)
  local deadline = vim.uv.now() + ms
  while not cond() do
    if vim.uv.now() > deadline then
      local notes = vim.tbl_map(function(n)
        return n.msg
      end, H.notes)
      error(('FAILED: timed out after %d ms waiting for %s\n  notifications: %s'):format(ms, what, vim.inspect(notes)), 2)
    end
    H.sleep(50)
  end
end

return H
