-- A person keeps typing in their own buffer through a whole task: every
-- 200 ms one of `a`, `hello`, `<Esc>`, `x`, `:w`, Enter, each on its own tick
-- so that insert and command-line mode last across timer ticks (the task is
-- started while they are typing in insert mode, and they go on typing there
-- until its question has arrived, which must then wait). Nothing the server sends
-- takes their cursor or their keys: the question is never asked while they
-- are in insert or command-line mode (it is announced), the plan and the diff
-- are announced and not opened, and the task never passes a decision point until they decide
-- with :AutoCode answer / approve / apply (nothing opens by itself). Before applying, an unsaved buffer
-- of a touched file makes the apply refuse (a server that writes on disk) or
-- is merged (a server that applies through the editor); afterwards the
-- touched buffer holds the change.
-- Run with `nvim -S` so typed keys are handled by the main loop.
-- cwd: fixtures/samples "pytest" (declares patches/add-tax.patch).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local client = require('autocode.client')
local ANSWER = vim.env.AUTOCODE_TEST_ANSWER or 'Name each test after the behaviour it checks'

H.record_calls()
-- Every prompt records the mode it opened in; while the person types, a
-- prompt is dismissed (as their next keys would); later they answer.
local prompts = {}
local answering = false
vim.ui.select = function(items, opts, on_choice)
  table.insert(prompts, { kind = 'select', prompt = opts.prompt, items = items, mode = vim.api.nvim_get_mode().mode })
  local idx = nil
  if answering then
    for i, item in ipairs(items) do
      if item == require('autocode.questions').TYPE or item == 'Yes' then
        idx = i
      end
    end
  end
  vim.schedule(function()
    on_choice(idx and items[idx] or nil, idx)
  end)
end
vim.ui.input = function(opts, on_confirm)
  table.insert(prompts, { kind = 'input', prompt = opts.prompt, default = opts.default, mode = vim.api.nvim_get_mode().mode })
  vim.schedule(function()
    on_confirm(answering and ANSWER or nil)
  end)
end

-- The typing person.
local own_buf
local typing = false
local keys = { 'a', 'hello', '<Esc>', 'x', ':w', '<CR>' }
local tick = 0
-- While set, the person stays in insert mode (`hello` again each tick) until a question arrives.
local hold_insert = false
-- The mode each question arrived in (questions.offer is where it is asked or queued).
local questions = require('autocode.questions')
local offered_in = {}
local offer = questions.offer
questions.offer = function(entry)
  table.insert(offered_in, vim.api.nvim_get_mode().mode)
  return offer(entry)
end
local stolen = {}
local timer = assert(vim.uv.new_timer())
timer:start(
  200,
  200,
  vim.schedule_wrap(function()
    if not typing then
      return
    end
    if vim.api.nvim_get_current_buf() ~= own_buf then
      table.insert(stolen, vim.api.nvim_buf_get_name(0))
    end
    if hold_insert and #offered_in == 0 and keys[tick % #keys + 1] == '<Esc>' then
      vim.api.nvim_input(' hello')
      return
    end
    tick = tick + 1
    vim.api.nvim_input(keys[(tick - 1) % #keys + 1])
  end)
)

--- Types for `ms`, then stops in normal mode (an unfinished :w is finished).
local function type_for(ms)
  typing = true
  H.sleep(ms)
  typing = false
  while tick % #keys ~= 0 do
    tick = tick + 1
    vim.api.nvim_input(keys[(tick - 1) % #keys + 1])
    H.sleep(50)
  end
  H.until_(2000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end, 'normal mode')
end

local function snap_of(id)
  return tasks.snapshots[id] or {}
end

local function refresh(id)
  local err, r = client.await('autocode.task.get', { taskId = id })
  H.check(not err, 'task.get: ' .. vim.inspect(err))
  tasks.remember(tasks.unwrap(r), true)
  return snap_of(id)
end

H.async(function()
  vim.lsp.enable('autocode')
  vim.cmd.edit('notes.txt')
  own_buf = vim.api.nvim_get_current_buf()
  H.until_(20000, function()
    local c = vim.lsp.get_clients({ name = 'autocode' })[1]
    return c ~= nil and c.initialized == true
  end, 'the client')

  hold_insert = true
  typing = true
  H.until_(5000, function()
    return vim.api.nvim_get_mode().mode == 'i'
  end, 'insert mode from the typed `a`')
  vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
  H.until_(60000, function()
    return tasks.current ~= nil
  end, 'the task to start')
  local id = tasks.current
  H.until_(60000, function()
    return tasks.needs_kind(snap_of(id)) == 'question' or #prompts > 0
  end, 'the question')
  hold_insert = false
  type_for(4000)
  -- The question arrived while the person was in insert mode: it was queued and announced,
  -- not asked; asked only back in normal mode, and dismissed: it still waits.
  H.eq(offered_in[1], 'i', 'the question arrived during insert mode: ' .. vim.inspect(offered_in))
  H.check(H.note('asks:'), 'the question was announced')
  H.log('ok question deferred in insert mode')
  H.check(#prompts > 0 or H.note('asks:'), 'the question was announced or asked')
  for _, p in ipairs(prompts) do
    H.eq(p.mode, 'n', 'a prompt opened outside normal mode: ' .. vim.inspect(p))
  end
  H.eq(tasks.needs_kind(refresh(id)), 'question', 'typing never answered the question')
  H.eq(#H.sent('autocode.task.answer'), 0, 'nothing was answered while typing')
  H.log('ok question waited')

  -- The person answers on purpose: picker -> "Type an answer…" -> the text.
  answering = true
  vim.cmd('AutoCode answer')
  H.until_(30000, function()
    return #H.sent('autocode.task.answer') > 0
  end, 'the answer to be sent')
  answering = false
  local sent = H.sent('autocode.task.answer')
  H.eq({ sent[1].args.text, sent[1].args.how }, { ANSWER, 'typed' }, 'a typed answer says so')
  local input = prompts[#prompts]
  H.eq({ input.kind, input.default }, { 'input', nil }, 'typing starts from an empty field')
  H.log('ok answered as typed')

  -- The plan: shown, not entered; typing `a` in the own buffer approves nothing.
  typing = true
  H.until_(90000, function()
    return tasks.needs_kind(snap_of(id)) == 'approve_plan'
  end, 'the plan')
  type_for(3000)
  H.eq(require('autocode.ui').find('plan/' .. id), nil, 'the plan did not open by itself')
  H.eq(tasks.needs_kind(refresh(id)), 'approve_plan', 'typing never approved the plan')
  H.eq(#H.sent('autocode.task.approvePlan'), 0, 'no approval sent')
  H.check(H.note(':AutoCode review shows it'), 'the waiting plan is announced')
  H.log('ok plan waited')
  vim.cmd('AutoCode approve')

  -- The diff: shown, not entered; typing `a` and `x` applies and cancels nothing.
  typing = true
  H.until_(180000, function()
    return tasks.needs_kind(snap_of(id)) == 'approve_completion'
  end, 'the verified change')
  type_for(3000)
  H.eq(require('autocode.ui').find('diff/' .. id), nil, 'the diff did not open by itself')
  H.eq(tasks.needs_kind(refresh(id)), 'approve_completion', 'typing never applied or cancelled')
  H.eq(#H.sent('autocode.task.approveCompletion') + #H.sent('autocode.task.cancel'), 0, 'no decision sent')
  H.eq(#stolen, 0, 'the cursor never left the own buffer: ' .. vim.inspect(stolen))
  H.check(#table.concat(vim.api.nvim_buf_get_lines(own_buf, 0, -1, false), '\n') > 0, 'the typing landed in the own buffer')
  H.log('ok diff waited')

  -- An unsaved edit of a touched file, far from the change.
  vim.cmd('badd shop/pricing.py')
  local touched = vim.fn.bufnr('shop/pricing.py')
  vim.fn.bufload(touched)
  vim.api.nvim_buf_set_lines(touched, 0, 0, false, { '# my own note' })
  H.check(vim.bo[touched].modified, 'the buffer holds an unsaved edit')
  local mine = vim.api.nvim_buf_get_lines(touched, 0, -1, false)
  vim.cmd('AutoCode apply')
  -- Merged into a buffer that holds the person's unsaved edit: not on disk yet, so the task
  -- waits for their save (it completes below, once they write the buffer).
  H.until_(120000, function()
    return tasks.needs_kind(snap_of(id)) == 'save_files'
  end, 'the change merged into the unsaved buffer, waiting for its save')
  -- The command's own answer (after the didChange) reloads the touched buffers.
  H.until_(10000, function()
    return table.concat(vim.api.nvim_buf_get_lines(touched, 0, -1, false), '\n'):find('def total_with_tax', 1, true) ~= nil
  end, 'the touched buffer to be reloaded')
  local text = table.concat(vim.api.nvim_buf_get_lines(touched, 0, -1, false), '\n')
  H.check(text:find('def total_with_tax', 1, true), 'the open buffer shows the applied change (checktime):\n' .. text)
  H.check(text:find('# my own note', 1, true), 'the unsaved edit was merged')
  vim.api.nvim_buf_call(touched, function()
    vim.cmd('undo')
  end)
  local undone = table.concat(vim.api.nvim_buf_get_lines(touched, 0, -1, false), '\n')
  H.check(not undone:find('def total_with_tax', 1, true), 'undo takes the change back')
  -- One undo step: the buffer is the person's edit alone again, still unsaved.
  H.eq(vim.api.nvim_buf_get_lines(touched, 0, -1, false), mine, 'undo leaves the unsaved edit alone')
  H.check(vim.bo[touched].modified, 'still unsaved after undo')
  H.check(not table.concat(vim.fn.readfile('shop/pricing.py'), '\n'):find('# my own note', 1, true), 'the unsaved edit never reached the disk')
  -- The person keeps it after all, and saves: then the task is complete.
  vim.api.nvim_buf_call(touched, function()
    vim.cmd('redo')
    vim.cmd('write')
  end)
  H.until_(60000, function()
    return snap_of(id).done == true
  end, 'the task to complete once the buffer is written')
  H.eq(snap_of(id).state, 'COMPLETED', 'completed once on disk')
  H.log('ok unsaved buffer merged')
  H.eq(snap_of(id).state, 'COMPLETED', 'completed')
  H.log('ok applied')
  timer:stop()
  timer:close()
  H.done()
end)
