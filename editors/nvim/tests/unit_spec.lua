-- Unit-level checks of the plugin that need no server: completion, argument
-- parsing, rendering, snapshot ordering, the LSP config, prompts and a server
-- command that cannot start. Run: nvim --headless --clean -l tests/unit_spec.lua
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

local commands = require('autocode.commands')
local memory = require('autocode.memory')
local tasks = require('autocode.tasks')
local config = require('autocode.config')
local ui = require('autocode.ui')

-- :AutoCode exists and completes its sub-commands.
H.check(vim.fn.exists(':AutoCode') == 2, ':AutoCode is defined')
H.eq(
  vim.fn.getcompletion('AutoCode ', 'cmdline'),
  { 'answer', 'apply', 'approve', 'cancel', 'complete', 'doctor', 'forget', 'hunk', 'hunks', 'key', 'memory', 'messages', 'model', 'output', 'promote', 'reject', 'resolve', 'resume', 'retry', 'review', 'start', 'status', 'tasks', 'transcript', 'trust' },
  'sub-command completion'
)
H.eq(vim.fn.getcompletion('AutoCode st', 'cmdline'), { 'start', 'status' }, 'prefix completion')
H.eq(vim.fn.getcompletion('AutoCode memory ', 'cmdline'), { 'delete', 'list', 'save', 'search' }, 'memory verbs')
H.eq(vim.fn.getcompletion('AutoCode memory save --sc', 'cmdline'), { '--scope=project', '--scope=global' }, 'save flags')
tasks.remember({ id = 't-abc', state = 'running', revision = 1 }, true)
H.eq(vim.fn.getcompletion('AutoCode approve ', 'cmdline'), { 't-abc' }, 'task ids complete after approve')
H.eq(vim.fn.getcompletion('AutoCode doctor ', 'cmdline'), {}, 'doctor takes no argument')
H.eq(vim.fn.getcompletion('AutoCode trust ', 'cmdline'), { 'revoke' }, 'trust completes revoke')
H.eq(vim.fn.getcompletion('AutoCode model ', 'cmdline'), { 'check' }, 'model completes check')
H.log('ok completion')

-- setup{ model = ... }: wrong shapes are refused with what to fix; the configure arguments carry
-- the settings given and the key read at that moment (from a function or Neovim's environment).
local model = require('autocode.model')
local function refused(opts, text)
  local ok, err = pcall(config.set, { model = opts })
  H.check(not ok and tostring(err):find(text, 1, true), ('refused %s: %s'):format(vim.inspect(opts), tostring(err)))
end
refused({ key = function() end, key_env = 'OPENAI_API_KEY' }, 'not both')
refused({ key = 'sk-written-in-the-config' }, 'model.key')
refused({ url = 'http://127.0.0.1:1/v1' }, 'model.url is not an option')
refused({ key_variable = 'PATH' }, 'model.key_variable must name a key variable')
H.eq(model.args({ provider = 'openai', model = ' m ', base_url = 'http://127.0.0.1:1/v1' }), { provider = 'openai', model = 'm', baseUrl = 'http://127.0.0.1:1/v1' }, 'no key option sends no key')
H.eq(model.args({ provider = 'openai' }, true), { provider = 'openai', apiKey = '' }, 'a key given before is forgotten')
H.eq(model.args({ key = function() return ' k1 ' end }), { apiKey = 'k1' }, 'the key function is called; the server picks the variable')
vim.env.AUTOCODE_UNIT_KEY = 'k2'
H.eq(model.args({ key_env = 'AUTOCODE_UNIT_KEY' }), { apiKey = 'k2', apiKeyEnv = 'AUTOCODE_UNIT_KEY' }, 'key_env: read from the environment, held under its name')
vim.env.AUTOCODE_UNIT_SECRET = 'k3'
H.eq(model.args({ key_env = 'AUTOCODE_UNIT_SECRET', key_variable = 'OPENAI_API_KEY' }), { apiKey = 'k3', apiKeyEnv = 'OPENAI_API_KEY' }, 'key_variable names where the server holds it')
local none, problem = model.args({ key_env = 'AUTOCODE_UNIT_UNSET' })
H.eq(none, {}, 'an unset variable sends no key')
H.check(problem:find('$AUTOCODE_UNIT_UNSET is not set', 1, true), problem)
local _, raised = model.args({ key = function() error('boom k4') end })
H.check(raised:find('raised an error', 1, true) and not raised:find('k4', 1, true), 'the error text is not repeated: ' .. raised)
local _, spaced = model.args({ key = function() return 'two words' end })
H.check(spaced:find('spaces', 1, true) and not spaced:find('two words', 1, true), spaced)
H.check(select(2, model.summary({ provider = 'openai', result = 'answered', endpoint = 'http://127.0.0.1:1/v1' })), 'answered is ok')
H.check(not select(2, model.summary({ provider = 'openai', result = 'failed', error = 'refused' })), 'failed is not ok')
config.set({})
H.log('ok model options')

-- Unknown sub-commands are reported with the usage.
commands.run({ 'frobnicate' })
local n = H.note('unknown sub-command "frobnicate"', vim.log.levels.ERROR)
H.check(n and n.msg:find('start', 1, true), 'usage lists the sub-commands')
commands.run({ 'memory', 'zap' })
H.check(H.note(':AutoCode memory needs one of delete, list, save, search', vim.log.levels.ERROR), 'memory usage')
H.log('ok usage')

-- Flags before the text are options; everything after is the text, verbatim.
local opts, text = memory.parse_flags({ '--scope=global', '--shared', 'use', '--not-a-flag', 'here' })
H.eq(opts, { scope = 'global', shared = true }, 'parsed flags')
H.eq(text, 'use --not-a-flag here', 'text keeps later dashes')
H.log('ok flags')

-- The trust prompt lists each sentence the server gave, and says when the values changed.
local trust = require('autocode.trust')
local says = { 'send the variable GITHUB_TOKEN to http://127.0.0.1:9/v1', 'write memories to /srv/team.sqlite3' }
H.eq(vim.split(trust.prompt_text(says, false), '\n'), {
  "This repository's settings ask AutoCode to:",
  '  - send the variable GITHUB_TOKEN to http://127.0.0.1:9/v1',
  '  - write memories to /srv/team.sqlite3',
  'Trust exactly these values for this repository?',
}, 'trust prompt')
H.check(trust.prompt_text(says, true):find('changed since you last saw them', 1, true), 'changed values say so')
H.check(trust.needed({ data = { kind = 'trustRequired' } }) and trust.needed({ data = { kind = 'trustChanged' } }), 'trust kinds')
H.check(not trust.needed({ data = { kind = 'setupError' } }) and not trust.needed(nil), 'other errors need no trust')
H.log('ok trust prompt')

-- Snapshots: older revisions never replace newer ones; state changes notify.
tasks.snapshots, tasks.current = {}, nil
H.check(tasks.remember({ id = 't1', state = 'waiting', revision = 3 }), 'first snapshot kept')
H.check(not tasks.remember({ id = 't1', state = 'running', revision = 2 }), 'stale snapshot dropped')
H.eq(tasks.snapshots.t1.state, 'waiting', 'state of newest revision')
H.check(H.note('task t1 is waiting'), 'state change notified')
H.check(tasks.remember({ id = 't1', state = 'done', revision = 4 }), 'newer snapshot kept')
H.check(H.note('task t1 is done'), 'second state change notified')
H.eq(tasks.current, 't1', 'first task seen becomes current')
H.log('ok snapshots')

-- Statusline: task state plus progress.
H.eq(require('autocode').statusline(), 'AutoCode done', 'statusline with a task')
tasks.progress['1:tok'] = { title = 'planning', message = 'step 1', percentage = 40 }
H.eq(require('autocode').statusline(), 'AutoCode done [planning: step 1 40%]', 'statusline with progress')
tasks.progress = {}
H.log('ok statusline')

-- Rendering of a task, questions, a doctor report and a refusal.
local snap = {
  id = 't2',
  state = 'waiting_for_input',
  phase = 'requirements',
  revision = 2,
  brief = 'add a greeting',
  needs = { kind = 'question', questions = { { id = 'q1', text = 'Which naming?', choices = { 'a', 'b' } } } },
}
local lines = tasks.render(snap)
H.eq(lines[1], '# AutoCode task t2', 'task heading')
H.check(vim.tbl_contains(lines, 'add a greeting'), 'brief rendered')
H.eq(tasks.questions(snap), { { id = 'q1', text = 'Which naming?', choices = { 'a', 'b' } } }, 'questions')
H.eq(tasks.questions({ needs = { kind = 'approve_plan' } }), {}, 'no questions while a plan waits')
-- One wire spelling: the plan revision is read by its schema name only.
H.eq(tasks.plan_revision({ needs = { kind = 'approve_plan', planRevision = 3 } }), 3, 'plan revision (camelCase)')
H.eq(tasks.plan_revision({ needs = { kind = 'approve_plan', plan_revision = 3 } }), nil, 'snake_case is not the wire')
H.eq(tasks.id_of({ taskId = 't9' }), nil, 'a snapshot names its task as id')
-- The phase results are typed camelCase objects: what an apply wrote, and a failure's message.
local applied = { status = 'applied', applied = true, written = { 'a.py', 'b.py' }, writtenByEditor = { 'a.py' }, conflicts = {},
  choices = {}, message = 'wrote a.py, b.py' }
local done = { id = 't3', state = 'COMPLETED', revision = 9, done = true, needs = {},
  result = { status = 'completed', verified = true, apply = applied, files = { 'a.py', 'b.py' } } }
H.eq(tasks.written(done), { 'a.py', 'b.py' }, 'written files from result.apply')
H.eq(tasks.files(done), { 'a.py', 'b.py' }, 'changed files from the result once it ended')
H.eq(tasks.written({ id = 't4', revision = 1, needs = {} }), nil, 'nothing written before an apply')
tasks.remember({ id = 't5', state = 'FAILED', revision = 1, done = true, needs = {},
  error = { kind = 'testsFailed', message = 'the tests failed in the copy', phase = 'verifying' } }, false)
H.check(H.note('task t5 is FAILED: the tests failed in the copy'), 'failure message from error.message')
local doc = memory.render_doctor({ settings = { test_command = { value = 'pytest', origin = 'learned' } }, ok = true })
H.check(vim.tbl_contains(doc, '## settings'), 'doctor sections')
H.check(vim.tbl_contains(doc, '  - origin: learned'), 'doctor nested values')
H.eq(memory.render_doctor({ markdown = 'line 1\nline 2' }), { 'line 1', 'line 2' }, 'doctor text used as is')
H.check(vim.tbl_contains(lines, '- Which naming? (q1)'), 'open question rendered')
H.eq(
  memory.refusal_message({ saved = false, message = 'same as an existing memory', duplicateOf = 'm7' }),
  'memory not saved: same as an existing memory; it duplicates memory m7',
  'duplicate message'
)
H.eq(
  memory.refusal_message({ code = -32803, message = 'not saved: tied to one commit', data = { kind = 'memoryRefused', reason = 'commit', suggestion = 'say the durable fact' } }),
  'memory not saved: tied to one commit; try instead: say the durable fact',
  'refusal message'
)
H.eq(
  memory.format_item({ id = 'm1', scope = 'global', owner = vim.NIL, shared = true, content = 'a\nb' }),
  '- [m1] (global, team) a b',
  'memory line'
)
H.log('ok rendering')

-- Options are validated with a message that says what to do.
local ok, err = pcall(config.set, { log_level = 'loud' })
H.check(not ok and tostring(err):find('log_level must be one of', 1, true), 'bad log level refused')
config.set({ python = '/opt/py/bin/python3' })
H.eq(config.cmd(), { '/opt/py/bin/python3', '-m', 'autocode_lsp' }, 'python option')
config.set({ command = 'my-autocode-lsp', python = '/x' })
H.eq(config.cmd(), { 'my-autocode-lsp' }, 'command wins over python')
config.set({})
H.eq(config.cmd(), { 'autocode-lsp' }, 'default command')
H.log('ok options')

-- lsp/autocode.lua is what vim.lsp.config resolves, and it opts in to the protocol.
local resolved = vim.lsp.config.autocode
-- autocode-lsp is not on this test's PATH: the config's cmd is a starter function, so
-- Neovim keeps the config and root_dir can say once how to install the server.
H.eq(type(resolved.cmd), 'function', 'resolved cmd while the server is missing')
H.eq(type(resolved.root_dir), 'function', 'root_dir checks the server before starting it')
H.eq(type(resolved.reuse_client), 'function', 'one client for every repository')
H.eq(resolved.capabilities.experimental.autocode, { protocolVersion = '1.0' }, 'experimental.autocode declared')
H.check(resolved.handlers['autocode/task/askQuestion'], 'askQuestion handler')
H.check(resolved.handlers['autocode/task/reviewPlan'], 'reviewPlan handler')
H.check(resolved.handlers['autocode/task/didChange'], 'didChange handler')
require('autocode').setup({ command = { 'autocode-lsp', '--stdio' }, log_level = 'debug' })
H.eq(config.cmd(), { 'autocode-lsp', '--stdio', '--log-level', 'debug' }, 'setup sets cmd and log level')
require('autocode').setup({ command = { '/bin/true', '--stdio' } })
H.eq(vim.lsp.config.autocode.cmd, { '/bin/true', '--stdio' }, 'an executable command is the config cmd as is')
require('autocode').setup({ command = { 'autocode-lsp', '--stdio' }, log_level = 'debug' })
H.check(vim.lsp.is_enabled('autocode'), 'setup enables the config')
H.log('ok lsp config')

-- Prompts: answers delivered later (as pickers do) reach the coroutine.
H.script_ui({ 'free text' }, { 'b' })
local got = {}
require('autocode.client').run(function()
  got.input = ui.input('Q? ')
  got.select = ui.select({ 'a', 'b' }, 'Pick')
  got.confirm = ui.confirm('Sure?')
end)
H.script_ui({}, { 'b', 'No' })
H.wait(2000, function()
  return got.confirm ~= nil
end, 'prompts answered')
H.eq(got, { input = 'free text', select = 'b', confirm = false }, 'prompt answers')
H.log('ok prompts')

-- Questions: one picker offers the proposed default (first, so Enter takes
-- it, marked as not remembered), the choices, typing and delegating; typing
-- opens an empty input whose prompt names the default. Each says how.
local questions = require('autocode.questions')
local answers = {}
H.prompts = {}
H.script_ui(function(prompt)
  return 'typed: ' .. prompt
end, { 1, 'b', questions.TYPE, questions.DELEGATE, 'a' })
local styled = { text = 'Style?', choices = { 'Describe it', 'a', 'b' }, default = 'Describe it' }
require('autocode.client').run(function()
  answers[1] = tasks.prompt_answer(styled)
  answers[2] = tasks.prompt_answer(styled)
  answers[3] = tasks.prompt_answer(styled)
  answers[4] = tasks.prompt_answer(styled)
  answers[5] = tasks.prompt_answer({ text = 'Pick?', choices = { 'a', 'b' } })
end)
H.wait(2000, function()
  return answers[5] ~= nil
end, 'questions answered')
H.eq(answers, {
  { text = 'Describe it', how = 'acceptedDefault' },
  { text = 'b', how = 'chosen' },
  { text = 'typed: Style? (proposed: Describe it): ', how = 'typed' },
  { text = '', how = 'delegated' },
  { text = 'a', how = 'chosen' },
}, 'answers say how they were given')
H.eq(H.prompts[1].items, {
  'Describe it  (accept the proposed default (not remembered))',
  'a',
  'b',
  questions.TYPE,
  questions.DELEGATE,
}, 'every way to answer is offered, the default first')
local typed_prompt = H.prompts[4]
H.eq({ typed_prompt.kind, typed_prompt.default }, { 'input', nil }, 'typing starts from an empty field')
-- Dismissed picker or empty typing: nothing is answered.
H.script_ui({ '' }, { questions.TYPE, false })
local dismissed = {}
require('autocode.client').run(function()
  dismissed[1] = tasks.prompt_answer(styled) or 'none'
  dismissed[2] = tasks.prompt_answer(styled) or 'none'
end)
H.wait(2000, function()
  return dismissed[2] ~= nil
end, 'dismissed questions')
H.eq(dismissed, { 'none', 'none' }, 'a dismissed or empty answer answers nothing')
H.log('ok questions')

-- Scratch buffers carry their keys and a winbar that names them; a key with a
-- confirmation acts only on an explicit yes; enter = false keeps the cursor.
local approved = 0
local buf = ui.scratch('plan/t9', { '# Plan', '- step' }, 'markdown', {
  a = {
    function()
      approved = approved + 1
    end,
    'approve plan',
    confirm = 'Approve?',
  },
})
H.eq(vim.bo[buf].filetype, 'markdown', 'plan filetype')
H.eq(vim.api.nvim_get_current_buf(), buf, 'plan buffer focused')
H.script_ui({}, { 'No', 'Yes' })
-- Count the answers handled: the confirmation's coroutine runs to its end inside the picker's
-- callback, so an answer counted here has done all it was going to do.
local answered, scripted_select = 0, vim.ui.select
vim.ui.select = function(items, opts, on_choice)
  scripted_select(items, opts, function(...)
    on_choice(...)
    answered = answered + 1
  end)
end
vim.cmd.normal('a')
H.wait(1000, function()
  return answered == 1
end, 'the confirmation answered No')
H.eq(approved, 0, 'a declined confirmation does nothing')
vim.cmd.normal('a')
H.wait(1000, function()
  return approved == 1
end, 'the a key ran its action after yes')
H.check(vim.wo.winbar:find('a approve plan', 1, true), 'winbar lists the keys')
vim.cmd.normal('q')
H.check(vim.fn.bufwinid(buf) == -1, 'q closes the window')
local here_win = vim.api.nvim_get_current_win()
local quiet = ui.scratch('diff/t9', { '+x' }, 'diff', {}, nil, { enter = false })
H.eq(vim.api.nvim_get_current_win(), here_win, 'enter = false keeps the cursor where it was')
H.check(vim.fn.bufwinid(quiet) ~= -1, 'but shows the buffer')
ui.close(quiet)
local multi = ui.scratch('task/t9', tasks.render({ id = 't9', state = 'FAILED', result = { output = 'line one\nline two' } }), 'markdown')
H.check(vim.tbl_contains(vim.api.nvim_buf_get_lines(multi, 0, -1, false), 'line two'), 'values with newlines become lines')
H.log('ok scratch')

-- Bad input from the person is refused before anything reaches a server (none
-- runs here: a call would show "cannot start the AutoCode server").
vim.lsp.config('autocode', { cmd = { 'autocode-lsp-does-not-exist' } })
tasks.snapshots, tasks.current = {}, nil
H.notes = {}
vim.cmd('AutoCode approve')
H.check(H.note('no task yet: start one with :AutoCode start', vim.log.levels.ERROR), 'task command without a task')
H.script_ui({ '', '   ', '' }, {})
vim.cmd('AutoCode start')
H.wait_note(2000, 'no brief given; nothing started', vim.log.levels.WARN)
vim.cmd('AutoCode memory save')
H.wait_note(2000, 'nothing to save: give the memory text', vim.log.levels.WARN)
tasks.current = 't1'
vim.cmd('AutoCode reject')
H.wait_note(2000, 'plan not rejected: say what should change', vim.log.levels.WARN)
-- A key written after :AutoCode key is refused and taken out of the command history.
vim.fn.histadd('cmd', 'AutoCode key sk-unit-on-the-command-line')
commands.run({ 'key', 'sk-unit-on-the-command-line' })
H.check(H.note(':AutoCode key takes no argument', vim.log.levels.ERROR), 'a key on the command line is refused')
H.check(not vim.fn.histget('cmd', -1):find('sk-unit', 1, true), 'and taken out of the command history')
H.check(not require('autocode.model').key_typed(), 'and not kept')
-- A command that does reach for the server says it cannot start one; that note comes after
-- any the refused commands above could have caused, so one such note means none of them did.
vim.cmd('AutoCode doctor')
H.wait_note(5000, 'cannot start the AutoCode server')
local starts = vim.tbl_filter(function(n)
  return n.msg:find('cannot start the AutoCode server', 1, true) ~= nil
end, H.notes)
H.eq(#starts, 1, 'nothing was sent to a server by the refused commands')
H.log('ok bad input')

-- A server command that does not exist is reported, and the call returns.
vim.lsp.config('autocode', { cmd = { 'autocode-lsp-does-not-exist' } })
local e, r = require('autocode.client').call_sync('autocode.protocol.info', {}, 3000)
H.check(e and e.message:find('is not an executable on PATH', 1, true), 'missing server reported: ' .. vim.inspect(e))
H.eq(r, nil, 'no result')
vim.cmd('AutoCode doctor')
H.wait_note(3000, 'doctor failed: cannot start the AutoCode server', vim.log.levels.ERROR)
H.log('ok missing server')

-- The WebSocket relay's frames: client frames are masked; every length form decodes back.
do
  local ws = require('autocode.websocket')
  for _, n in ipairs({ 0, 5, 125, 126, 65535, 65536, 70000 }) do
    local payload = ('x'):rep(n)
    local framed = ws._frame(1, payload)
    H.eq(bit.band(framed:byte(2), 0x80), 0x80, 'client frame is masked, length ' .. n)
    local fin, opcode, got, rest = ws._next_frame(framed .. 'tail')
    H.eq({ fin, opcode, #got, got == payload, rest }, { true, 1, n, true, 'tail' }, 'frame of ' .. n .. ' bytes')
    H.eq(ws._next_frame(framed:sub(1, #framed - 1)), nil, 'an incomplete frame waits, length ' .. n)
  end
  H.eq({ ws.parse('ws://127.0.0.1:8766') }, { '127.0.0.1', 8766, '/' }, 'ws url')
  H.eq({ ws.parse('localhost:1/lsp') }, { 'localhost', 1, '/lsp' }, 'host:port/path')
  H.eq({ ws.parse('ws://[::1]:9') }, { '::1', 9, '/' }, 'ipv6')
  for _, bad in ipairs({ 'http://h:1', 'ws://h', 'h:0', 'h:70000', 'ws://h:1x' }) do
    H.eq(ws.parse(bad), nil, 'bad ws address ' .. bad)
  end
  H.log('ok websocket frames')
end

-- :checkhealth autocode without a server says what to do.
vim.cmd('checkhealth autocode')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
H.check(health:find('OK Neovim 0.11', 1, true), 'health: Neovim version')
H.check(health:find('ERROR "autocode-lsp-does-not-exist" is not an executable on PATH', 1, true), 'health: missing server: ' .. health)
H.check(health:find('editors/nvim/build.sh', 1, true), 'health: how to install (the build step)')
H.log('ok health without server')

H.done()
