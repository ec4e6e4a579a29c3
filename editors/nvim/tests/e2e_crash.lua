-- A server that dies is reported in one line of the plugin's (not Neovim's own notice, which
-- would stop at a "Press ENTER" prompt), pending calls end with an error instead of hanging,
-- and the next command starts a new server. A server killed while an approved plan runs: the
-- waiting approve says the plan was approved and how to resume. Also a server command that
-- exits at once. cwd: the "pytest" sample, with a conftest under which the tests of the
-- changed copy never finish (so the task stays VERIFYING until its server is killed).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local client = require('autocode.client')

-- The plugin's AutoCodeServerExit event comes once the plugin and Neovim have said all they
-- say of a server's end: the messages checked after it are complete.
local exits = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutoCodeServerExit',
  callback = function(ev)
    exits[ev.data.client_id] = ev.data
  end,
})
local function wait_exit(c)
  H.wait(10000, function()
    return exits[c.id] ~= nil
  end, 'the plugin to handle the end of client ' .. c.id)
  return exits[c.id]
end
--- The notes that contain `text`.
local function notes_with(text)
  return vim.tbl_filter(function(n)
    return n.msg:find(text, 1, true) ~= nil
  end, H.notes)
end

-- 1. Killed mid-session.
local c, err = client.ensure()
H.check(c, 'server started: ' .. tostring(err))
H.client()
H.call('autocode.protocol.info')
local pids = H.children()
H.check(#pids >= 1, 'nvim has a server child process')
local done, got = false, nil
client.call('autocode.protocol.info', {}, function(e, r)
  done, got = true, { e, r }
end)
for _, pid in ipairs(pids) do
  vim.uv.kill(pid, 'sigkill')
end
H.wait(10000, function()
  return done
end, 'the pending call to end')
-- The kill may land before or after the answer; either way the call ended, and the call (made
-- from Lua, which says nothing of its own) leaves the plugin's line to be said.
local exit = wait_exit(c)
H.eq(#notes_with('the server stopped (exit code 0, signal 9)'), 1, 'the plugin says it once: ' .. vim.inspect(H.notes))
H.check(H.note(exit.message, vim.log.levels.ERROR), 'the event has the line said: ' .. vim.inspect(exit))
H.check(H.note('any :AutoCode command starts it again'), 'says how to go on: ' .. exit.message)
H.eq(notes_with('quit with exit code'), {}, "Neovim's own notice is left out")
local e2 = client.call_sync('autocode.protocol.info', {}, 10000, c)
H.eq(client.kind(e2), 'serverStopped', 'a call on the dead client fails at once')
H.log('ok killed reported')

-- The next command starts a new server (and gets its answer from it).
H.notes = {}
vim.cmd('AutoCode tasks')
H.wait(30000, function()
  return H.note('no tasks in this workspace yet') or H.note('tasks failed')
end, 'the tasks command to finish')
H.check(not H.note('has stopped'), 'the tasks command reached the new server')
H.wait(20000, function()
  local cs = vim.lsp.get_clients({ name = 'autocode' })
  return #cs == 1 and cs[1].id ~= c.id and cs[1].initialized
end, 'a new server')
H.call('autocode.protocol.info')
H.log('ok restarted')

-- A task paused on a question survives the server: after a kill, the next
-- server continues it from disk.
local tasks = require('autocode.tasks')
H.script_ui(function()
  return nil
end, {})
vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait_note(60000, 'asks:')
local id = tasks.current
local live = vim.lsp.get_clients({ name = 'autocode' })[1]
H.wait(30000, function()
  return vim.tbl_isempty(live.requests)
end, 'the start command to return')
for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
H.wait(10000, function()
  return #vim.lsp.get_clients({ name = 'autocode' }) == 0
end, 'the killed client to go')
vim.cmd('AutoCode status ' .. id)
H.wait(30000, function()
  local lines = H.scratch_lines('task/' .. id)
  return lines and table.concat(lines, '\n'):find('state: WAITING_FOR_USER', 1, true) ~= nil
end, 'the new server to show the paused task')
local snap = H.call('autocode.task.resume', { taskId = id })
H.eq(snap.needs.kind, 'answer_questions', 'still waiting for the answer')
H.log('ok task survives')

-- A plan waiting when the server dies: `:AutoCode approve` goes to the new server as a
-- command and the task goes on.
H.script_ui(function()
  return 'Name each test after the behaviour it checks'
end, { require('autocode.questions').TYPE })
vim.cmd('AutoCode answer ' .. id)
H.wait(60000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_plan'
end, 'the plan')
for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
H.wait(10000, function()
  return #vim.lsp.get_clients({ name = 'autocode' }) == 0
end, 'the killed client to go')
vim.cmd('AutoCode approve ' .. id)
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return s and s.state ~= 'WAITING_FOR_PLAN_APPROVAL' and s.state ~= 'WAITING_FOR_USER' and s.state ~= 'PLANNING'
end, 'the task to go on after the approval')
H.log('ok approved after a crash: ' .. tasks.snapshots[id].state)

-- Killed while the approved plan runs: the approve still waits (the server answers it when the
-- run ends, and the changed copy's tests never end here).
H.wait(120000, function()
  return tasks.snapshots[id].state == 'VERIFYING'
end, 'the task to verify')
live = vim.lsp.get_clients({ name = 'autocode' })[1]
H.check(not vim.tbl_isempty(live.requests), 'the approve waits for the run')
H.notes = {}
for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
exit = wait_exit(live)
-- One line, the approve's: the plan was approved, the server stopped during the run, and the
-- command that goes on. Not "approve failed … has stopped", nor a second line for the crash.
local approved = ('plan approved; the server stopped during the run (while VERIFYING): :AutoCode resume continues task %s'):format(id)
H.eq(vim.tbl_map(function(n)
  return n.msg
end, H.notes), { 'AutoCode: ' .. approved }, 'one line: the approve says what became of it')
H.eq(H.notes[1].level, vim.log.levels.WARN, 'a warning: nothing the person did was lost')
H.check(exit.message:find('task ' .. id .. ' was VERIFYING', 1, true), 'the exit names the task: ' .. exit.message)
H.check(
  require('autocode').statusline():find('(interrupted: :AutoCode resume)', 1, true),
  'the statusline says so: ' .. require('autocode').statusline()
)
H.log('ok killed while verifying: the approve says the plan was approved')

-- 2. A server command that exits at once.
H.notes = {}
for _, cl in ipairs(vim.lsp.get_clients({ name = 'autocode' })) do
  cl:stop(true)
end
H.wait(10000, function()
  return #vim.lsp.get_clients({ name = 'autocode' }) == 0
end, 'clients stopped')
-- Whether the stop we asked for was reported as a crash shows once a real crash is reported
-- below: that report comes after anything the stop could have said.
vim.lsp.config('autocode', { cmd = { vim.v.progpath, '--headless', '--clean', '-es', '+cq 3' } })
vim.cmd('AutoCode doctor')
-- The doctor waiting on it ends with the plugin's line about the exit, as its own one line:
-- it ended from the exit itself, not from a timeout (which would say "did not answer").
local n = H.wait_note(15000, 'doctor failed: the server stopped (exit code 3, signal 0)', vim.log.levels.ERROR)
H.eq(#notes_with('the server stopped'), 1, 'a stop we asked for is not reported as a crash (only the real one is)')
H.eq(notes_with('did not answer'), {}, 'no timeout')
-- It never started: the message gives the exact install command, once.
local hint = require('autocode.config').install_hint()
H.check(n.msg:find('may be missing or broken: install it with ' .. hint, 1, true), 'the install command: ' .. n.msg)
H.notes = {}
vim.cmd('AutoCode doctor')
H.wait_note(15000, 'doctor failed: the server stopped (exit code 3', vim.log.levels.ERROR)
H.check(not H.note('install it with'), 'the install command is said once, not at every start')
H.log('ok exits at once')
H.done()
