-- What a task shows of its work and its way out: the tests it ran (failing ones by name, the
-- output one command away), the agent's final summary per role, the reviewer's verdict, and
-- for a failed or interrupted task the commands that go on from there (:AutoCode output,
-- retry, resume, transcript). Also those commands.
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')
local util = require('autocode.util')

local M = {}

--- The roles of an agent, in the order a task runs them.
M.ROLES = { 'investigator', 'requirements', 'planner', 'implementer', 'reviewer' }
--- Failures `autocode.task.resume` continues (the engine's RESUMABLE_FAILURES).
M.RESUMABLE = { providerError = true, budgetExhausted = true }
--- Failures of the tests themselves: retrying the verification may pass once the cause is fixed.
M.TEST_FAILURES = { testsFailed = true, testsRegressed = true, noTestCommand = true }
--- States in which a task is being worked on by its server.
M.WORKING = {
  REQUIREMENTS = true,
  PLANNING = true,
  IMPLEMENTING = true,
  VERIFYING = true,
  APPLYING = true,
}
--- Tasks whose server stopped while it worked on them: id -> the state it was in.
M.interrupted = {}

--- The test run and the verdict of a snapshot (waiting for approval, or ended).
---@param snap autocode.TaskSnapshot
---@return autocode.TestRun|nil, autocode.Proof|nil
function M.tests_of(snap)
  local needs, result = snap.needs or {}, util.field(snap, 'result') or {}
  return util.field(needs, 'tests') or util.field(result, 'tests'), util.field(needs, 'proof') or util.field(result, 'proof')
end

--- evidence/test-output.txt of a task, when its tests ran.
---@param snap autocode.TaskSnapshot
---@return string|nil
function M.output_path(snap)
  local dir = util.field(snap, 'runDir')
  if type(dir) ~= 'string' or dir == '' then
    return nil
  end
  local path = vim.fs.joinpath(dir, 'evidence', 'test-output.txt')
  return vim.fn.filereadable(path) == 1 and path or nil
end

--- The tests in lines: the command and how it ended, failing and regressed tests by name.
---@param snap autocode.TaskSnapshot
---@return string[]
function M.test_lines(snap)
  local tests, proof = M.tests_of(snap)
  local out = {}
  if tests then
    table.insert(out, ('Tests: %s (exit %s, %s, %.1f s)'):format(
      tostring(tests.command),
      tostring(tests.exitCode),
      tostring(tests.status),
      tonumber(tests.seconds) or 0
    ))
  end
  if proof then
    local failing = proof.failing or {}
    if #failing > 0 then
      table.insert(out, ('failing (%d): %s'):format(#failing, table.concat(failing, ', ')))
    end
    for _, r in ipairs(proof.regressions or {}) do
      table.insert(out, ('regressed: %s (%s before, %s now)'):format(tostring(r.id), tostring(r.base), tostring(r.now)))
    end
  end
  if M.output_path(snap) then
    table.insert(out, 'the whole output: :AutoCode output')
  end
  return out
end

--- The agent loops' final answers, per role that gave one: {role, summary}.
---@param snap autocode.TaskSnapshot
function M.summaries(snap)
  local agent = util.field(snap, 'agent')
  local roles = type(agent) == 'table' and util.field(agent, 'roles') or nil
  local out = {}
  if type(roles) ~= 'table' then
    return out
  end
  for _, name in ipairs(M.ROLES) do
    local role = roles[name]
    local summary = type(role) == 'table' and util.field(role, 'summary') or nil
    -- An answer that is JSON (a plain JSON request's, or an investigator's citations) is data
    -- the task used, not words for the person.
    local words = type(summary) == 'string' and vim.trim(summary) ~= ''
    if words then
      local ok, decoded = pcall(vim.json.decode, summary)
      words = not (ok and type(decoded) == 'table') and role.mode ~= 'json'
    end
    if words then
      table.insert(out, { role = name, summary = summary })
    end
  end
  return out
end

--- The agent's summaries and the reviewer's verdict as lines (`prefix` before each).
---@param snap autocode.TaskSnapshot
---@return string[]
function M.agent_lines(snap, prefix)
  prefix = prefix or ''
  local out = {}
  for _, s in ipairs(M.summaries(snap)) do
    local lines = ui.lines(s.summary)
    table.insert(out, ('%sAgent (%s): %s'):format(prefix, s.role, lines[1] or ''))
    for i = 2, #lines do
      table.insert(out, prefix .. '  ' .. lines[i])
    end
  end
  local review = util.field(snap.needs or {}, 'review')
  if type(review) == 'table' then
    table.insert(out, prefix .. 'Review: ' .. tostring(review.summary))
    for _, concern in ipairs(review.concerns or {}) do
      table.insert(out, prefix .. '  look at: ' .. tostring(concern))
    end
  end
  if util.field(snap, 'agent') then
    table.insert(out, prefix .. 'what the model did, step by step: :AutoCode transcript')
  end
  return out
end

--- The commands that go on from where a task stands, when it failed or was interrupted.
---@param snap autocode.TaskSnapshot
---@param commands table<string, boolean>|nil the server's commands (autocode.protocol.info)
---@return string[]
function M.ways_out(snap, commands)
  local out = {}
  local id = snap.id
  local retry = commands and commands[protocol.commands.task_retry_verification]
  local stopped_in = (M.interrupted[id] and M.WORKING[snap.state] and snap.state)
    or (snap.state == 'INTERRUPTED' and tostring(util.field(snap, 'interruptedIn') or 'a working step'))
  if stopped_in then
    table.insert(out, (':AutoCode resume continues it (interrupted while %s)'):format(stopped_in))
    if stopped_in == 'VERIFYING' and retry then
      table.insert(out, ':AutoCode retry runs its tests again')
    end
    return out
  end
  if snap.state ~= 'FAILED' then
    return out
  end
  local err = util.field(snap, 'error') or util.field(util.field(snap, 'result') or {}, 'error') or {}
  local kind = err.kind
  if M.output_path(snap) then
    table.insert(out, ':AutoCode output shows the test output')
  end
  if M.TEST_FAILURES[kind] and retry then
    table.insert(out, ':AutoCode retry runs the tests again (after you fixed the cause)')
  end
  if M.RESUMABLE[kind] then
    table.insert(out, ':AutoCode resume continues it (after you raised the budget or fixed the endpoint)')
  end
  if util.field(snap, 'agent') then
    table.insert(out, ':AutoCode transcript shows what the model did')
  end
  table.insert(out, ':AutoCode start begins again')
  return out
end

--- The server's commands, when they are known without asking (no call is made here).
local function known_commands(id)
  local c = require('autocode.tasks').client_for(id) or client.get()
  return c and client.known_features(c) and client.known_features(c).commands or nil
end

--- One line on what failed and how to go on, for the notification of a failed task.
---@param snap autocode.TaskSnapshot
---@return string
function M.failure_note(snap)
  local _, proof = M.tests_of(snap)
  local parts = {}
  local said = tostring((util.field(snap, 'error') or {}).message or '')
  -- The failing tests by name, unless the server's own message already names them all.
  local failing = vim.tbl_filter(function(name)
    return not said:find(name, 1, true)
  end, proof and proof.failing or {})
  if #failing > 0 then
    table.insert(parts, ('failing: %s'):format(table.concat(failing, ', ')))
  end
  local ways = vim.tbl_map(function(w)
    return (w:match('^(:AutoCode %S+)'))
  end, M.ways_out(snap, known_commands(snap.id)))
  if #ways > 0 then
    table.insert(parts, 'next: ' .. table.concat(ways, ' · '))
  end
  return table.concat(parts, '; ')
end

-- Commands ------------------------------------------------------------------

--- Opens a file read-only in a split below (the cursor goes there: the person asked for it).
local function open_file(path)
  vim.cmd('botright split ' .. vim.fn.fnameescape(path))
  vim.bo.readonly = true
  vim.bo.modifiable = false
end

--- :AutoCode output: the whole test output of a task (evidence/test-output.txt).
function M.output(id, fetch)
  client.run(function()
    local snap = fetch(id, 'output')
    if not snap then
      return
    end
    local path = M.output_path(snap)
    if not path then
      ui.warn(('task %s has no test output yet (its tests have not run; it is %s)'):format(snap.id, tostring(snap.state)))
      return
    end
    open_file(path)
  end)
end

--- :AutoCode transcript: the model's work in a task, as Markdown (transcript.md).
function M.transcript(id, call)
  client.run(function()
    local err, result = call(protocol.commands.task_transcript, id)
    if err then
      ui.error('transcript failed: ' .. client.describe(err))
      return
    end
    local path = util.field(result, 'path')
    if type(path) ~= 'string' or vim.fn.filereadable(path) ~= 1 then
      ui.error('transcript failed: the server named no readable transcript.md')
      return
    end
    open_file(path)
    vim.bo.filetype = 'markdown'
  end)
end

--- :AutoCode retry: runs a failed task's verification again, when the server offers it.
function M.retry(id, call, remember)
  client.run(function()
    local c = require('autocode.tasks').client_for(id) or client.ensure()
    if not client.features(c).commands[protocol.commands.task_retry_verification] then
      ui.error(
        ('this AutoCode server cannot retry a verification (it has no %s): update AutoCode, or :AutoCode start the task again'):format(
          protocol.commands.task_retry_verification
        )
      )
      return
    end
    local err, result = call(protocol.commands.task_retry_verification, id)
    if err then
      ui.error('retry failed: ' .. client.describe(err))
      return
    end
    remember(result)
  end)
end

return M
