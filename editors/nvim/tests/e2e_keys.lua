-- The person's keys stay theirs, with Neovim's own vim.ui.select, vim.ui.input and
-- vim.notify (nothing stubbed): keys are typed into their buffer in normal, insert,
-- command-line, visual (v, V and Ctrl-V, ended by an operator), replace (R) and
-- operator-pending mode (each mode lasting across ticks; the typist records that each was
-- really entered) while the task's question, plan and change arrive. Nothing opens by itself,
-- nothing is answered, approved or dismissed (each still waits on the server), and the buffer
-- ends exactly as the same keys give in a buffer nobody else touches. Then the person asks on purpose:
-- `:AutoCode answer` and Enter takes the proposed default (sent as acceptedDefault);
-- `:AutoCode cancel` and Enter keeps the task, `y` Enter cancels it.
-- Run with `nvim -S` (the main loop running). cwd: fixtures/samples "pytest".
local real_notify = vim.notify
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
vim.notify = real_notify -- Neovim's own: messages are echoed as a person sees them
local tasks = require('autocode.tasks')
local client = require('autocode.client')
H.check(debug.getinfo(vim.ui.select, 'S').source:find('/vim/ui.lua', 1, true), "vim.ui.select is Neovim's own")
H.record_calls()

local function messages()
  return vim.fn.execute('messages')
end

-- The typist: a raw libuv timer, so it keeps typing even while Neovim waits in a prompt
-- (a prompt that opened by itself would swallow these keys). Each token is one tick.
local TOKENS = {
  'i', 'hello ', 'there', '<Esc>', 'dd', 'p', ':', 'let g:typed = get(g:, "typed", 0) + 1', '<CR>',
  'j', ':', 'w', '<CR>', 'A', ' more', '<Esc>', '2', 'dd', 'P',
  -- visual: charwise delete, linewise yank and put, a block shifted right
  'v', 'l', 'l', 'd', 'V', 'j', 'y', 'P', '<C-v>', 'j', 'l', '>',
  -- replace mode, then operators waiting for their motion or text object
  'R', 'XY', 'Z', '<Esc>', 'd', 'j', 'c', 'i', 'w', 'new', '<Esc>', '>', '>', 'g', 'U', 'U',
}
-- The modes each key was typed in (nvim_get_mode is fast: callable from the timer).
local MODES = { n = 'normal', i = 'insert', c = 'command-line', v = 'visual', V = 'visual line',
  ['\22'] = 'visual block', R = 'replace', no = 'operator-pending' }
local seen = {}
local typed, typing, at = {}, false, 0
local typist = assert(vim.uv.new_timer())
typist:start(60, 60, function()
  if not typing and at % #TOKENS == 0 then
    return -- stops only between whole rounds, back in normal mode
  end
  local mode = vim.api.nvim_get_mode().mode
  seen[mode] = (seen[mode] or 0) + 1
  at = at + 1
  local token = TOKENS[(at - 1) % #TOKENS + 1]
  table.insert(typed, token)
  vim.api.nvim_input(token)
end)

local function type_until(what, cond, ms)
  typing = true
  H.until_(ms or 120000, cond, what)
  local rounds = math.floor(at / #TOKENS) + 2 -- and two more rounds after it arrived
  H.until_(60000, function()
    return at >= rounds * #TOKENS
  end, 'two more rounds of typing')
  typing = false
  H.until_(10000, function()
    return at % #TOKENS == 0 and vim.api.nvim_get_mode().mode == 'n'
  end, 'the typist to stop in normal mode')
end

local own_buf, own_win
local START = {}
for i = 1, 12 do
  START[i] = 'line ' .. i
end

--- What the typed keys make of START in a buffer nobody else touches.
local function oracle()
  local file = vim.fn.tempname() .. '.txt'
  vim.fn.writefile(START, file)
  local before = vim.g.typed
  local win = vim.api.nvim_get_current_win()
  vim.cmd('tabnew ' .. vim.fn.fnameescape(file))
  local keys = vim.api.nvim_replace_termcodes(table.concat(typed), true, false, true)
  vim.api.nvim_feedkeys(keys, 'xt', false)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd('tabclose!')
  vim.api.nvim_set_current_win(win)
  vim.g.typed = before
  return lines, vim.fn.readfile(file)
end

local function count(token)
  local n = 0
  for _, t in ipairs(typed) do
    n = n + (t == token and 1 or 0)
  end
  return n
end

--- The person's buffer holds exactly what their keys made; no window opened; nothing decided.
local function keys_were_theirs(what)
  H.eq(vim.api.nvim_get_current_win(), own_win, what .. ': the cursor stayed in its window')
  local wins = vim.tbl_filter(function(w)
    return vim.api.nvim_win_get_config(w).relative == ''
  end, vim.api.nvim_list_wins())
  H.eq(#wins, 1, what .. ': no window opened by itself')
  H.eq(vim.g.typed, count('let g:typed = get(g:, "typed", 0) + 1'), what .. ': every typed :let ran')
  local mine = vim.api.nvim_buf_get_lines(own_buf, 0, -1, false)
  local want, written = oracle()
  H.eq(mine, want, what .. ': the buffer is exactly what the keys made')
  H.eq(vim.fn.readfile(vim.api.nvim_buf_get_name(own_buf)), written, what .. ': every typed :w wrote')
  for _, command in ipairs({ 'autocode.task.answer', 'autocode.task.approvePlan', 'autocode.task.approveCompletion', 'autocode.task.cancel' }) do
    H.eq(#H.sent(command), 0, what .. ': nothing sent ' .. command)
  end
  H.check(not messages():find('Press ENTER', 1, true), what .. ': no hit-enter prompt')
end

local function refresh(id)
  local err, r = client.await('autocode.task.get', { taskId = id })
  H.check(not err, 'task.get: ' .. vim.inspect(err))
  local snap = tasks.unwrap(r)
  tasks.remember(snap, true)
  return snap
end

H.async(function()
  vim.fn.writefile(START, 'notes.txt')
  vim.lsp.enable('autocode')
  vim.cmd.edit('notes.txt')
  own_buf, own_win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  H.until_(20000, function()
    local c = vim.lsp.get_clients({ name = 'autocode' })[1]
    return c ~= nil and c.initialized == true
  end, 'the client')

  vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
  type_until('the question', function()
    return tasks.current ~= nil and tasks.needs_kind(tasks.snapshots[tasks.current] or {}) == 'question'
  end)
  local id = tasks.current
  keys_were_theirs('the question')
  H.eq(tasks.needs_kind(refresh(id)), 'question', 'the question still waits')
  H.eq(#require('autocode.questions').pending, 1, 'the question was not dismissed: it waits for :AutoCode answer')
  H.check(messages():find('asks:', 1, true), 'the question was announced:\n' .. messages())
  H.check(require('autocode').statusline():find('question: :AutoCode answer', 1, true), 'the statusline says so')
  H.log('ok question announced, keys kept')

  -- On purpose: :AutoCode answer, then Enter alone in Neovim's own picker takes the default.
  vim.api.nvim_input(':AutoCode answer<CR>')
  H.until_(30000, function()
    return vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '@'
  end, 'the numbered picker')
  vim.api.nvim_input('<CR>')
  H.until_(30000, function()
    return #H.sent('autocode.task.answer') > 0
  end, 'the answer')
  H.eq(H.sent('autocode.task.answer')[1].args.how, 'acceptedDefault', 'Enter took the proposed default')
  H.log('ok enter takes the default')

  type_until('the plan', function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_plan'
  end)
  H.calls = {}
  keys_were_theirs('the plan')
  H.eq(tasks.needs_kind(refresh(id)), 'approve_plan', 'the plan still waits')
  H.check(messages():find('the plan of task', 1, true), 'the plan was announced')
  H.log('ok plan announced, keys kept')

  vim.cmd('AutoCode approve')
  H.until_(30000, function()
    return #H.sent('autocode.task.approvePlan') > 0
  end, 'the approval')
  H.calls = {}
  type_until('the change', function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
  end, 240000)
  keys_were_theirs('the change')
  H.eq(tasks.needs_kind(refresh(id)), 'approve_completion', 'the change still waits')
  -- The typing really went through every mode (the mode each key was typed in, over the whole run).
  for mode, name in pairs(MODES) do
    H.check(seen[mode], ('keys were typed in %s mode: %s'):format(name, vim.inspect(seen)))
  end
  io.stderr:write(('keys typed, by the mode they were typed in: %s\n'):format(vim.inspect(seen)))
  H.log('ok change announced, keys kept')

  -- Cancel asks first: Enter alone keeps the task; y cancels it.
  vim.api.nvim_input(':AutoCode cancel<CR>')
  H.until_(30000, function()
    return vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '@'
  end, 'the cancel confirmation')
  vim.api.nvim_input('<CR>')
  H.until_(5000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end, 'the confirmation to close')
  H.eq(tasks.needs_kind(refresh(id)), 'approve_completion', 'Enter alone cancelled nothing')
  H.eq(#H.sent('autocode.task.cancel'), 0, 'no cancel sent')
  vim.api.nvim_input(':AutoCode cancel<CR>')
  H.until_(30000, function()
    return vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '@'
  end, 'the cancel confirmation again')
  vim.api.nvim_input('y<CR>')
  H.until_(30000, function()
    return (tasks.snapshots[id] or {}).state == 'CANCELLED'
  end, 'the task to be cancelled')
  H.log('ok cancel confirmed')
  typist:stop()
  typist:close()
  H.done()
end)
