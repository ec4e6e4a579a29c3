-- Every way to answer a question, against the real server: the proposed
-- default (first in the picker, as Enter takes it), "Let AutoCode decide" and
-- a typed answer, each in its own task. The editor sends how each was given;
-- a server that knows answer kinds records them, an older one refuses the
-- field and the editor then sends only a typed answer (never an accepted
-- default or a delegation that server would record as the person's own).
-- Each task the server takes is carried through (plan approved, change
-- applied) so that learning runs after it.
-- cwd: fixtures/samples "pytest". Prints "ok <how> sent", "ok <how> recorded"
-- and "ok <how> completed", or "ok <how> refused by an older server".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local questions = require('autocode.questions')
local TYPED = 'Name each test after the behaviour it checks'

H.record_calls()
local pick
H.script_ui(function()
  return TYPED
end, function(_, items)
  return pick(items)
end)
local ways = {
  acceptedDefault = function(items)
    return items[1]
  end,
  delegated = function()
    return questions.DELEGATE
  end,
  typed = function()
    return questions.TYPE
  end,
}

vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
H.client()
for _, how in ipairs({ 'acceptedDefault', 'delegated', 'typed' }) do
  pick = ways[how]
  H.notes = {}
  local before = #H.sent('autocode.task.answer')
  tasks.current = nil
  vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
  H.wait_note(60000, 'asks:')
  vim.cmd('AutoCode answer')
  H.wait(60000, function()
    return tasks.current ~= nil and #H.sent('autocode.task.answer') > before
  end, 'the ' .. how .. ' answer to be sent')
  local id = tasks.current
  local sent = H.sent('autocode.task.answer')[before + 1].args
  H.eq(sent.how, how, 'sent with how')
  if how == 'typed' then
    H.eq(sent.text, TYPED, 'typed text sent verbatim')
  elseif how == 'delegated' then
    H.eq(sent.text, '', 'a delegation sends no text')
  else
    H.check(sent.text ~= '', 'the default text is sent')
  end
  H.log('ok ' .. how .. ' sent')
  H.wait(60000, function()
    local s = tasks.snapshots[id]
    return (s and tasks.needs_kind(s) ~= 'question') or H.note('answer not sent') ~= nil
  end, 'the server to take or refuse the ' .. how .. ' answer')
  if H.note('answer not sent') then
    H.check(how ~= 'typed', 'a typed answer is always sent')
    H.eq(tasks.needs_kind(H.call('autocode.task.get', { taskId = id })), 'question', 'the question stays open')
    H.log('ok ' .. how .. ' refused by an older server')
  else
    local snap = H.call('autocode.task.get', { taskId = id })
    local ledger = snap.answers or {}
    if #ledger > 0 then
      H.eq(ledger[#ledger].how, how, 'the server recorded how')
      H.log('ok ' .. how .. ' recorded')
    else
      H.log('ok ' .. how .. ' taken (the server shows no answer ledger)')
    end
  end
  if H.note('answer not sent') then
    H.call('autocode.task.cancel', { taskId = id })
  else
    -- Carried through to completion (plan approved, change applied), so that learning runs
    -- and the test can see what it kept from each way of answering.
    H.wait(120000, function()
      return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_plan'
    end, 'the plan of the ' .. how .. ' task')
    vim.cmd('AutoCode approve ' .. id)
    H.wait(240000, function()
      return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
    end, 'the verified change of the ' .. how .. ' task')
    vim.cmd('AutoCode apply ' .. id)
    local last_poll = 0
    H.wait(120000, function()
      local s = tasks.snapshots[id]
      if s and s.state == 'COMPLETED' and type(s.learning) == 'table' and s.learning.status ~= 'pending' then
        return true
      end
      if vim.uv.now() - last_poll > 500 then
        last_poll = vim.uv.now()
        tasks.remember(H.call('autocode.task.get', { taskId = id }), true)
      end
      return false
    end, 'the ' .. how .. ' task to complete and learn')
    H.eq(tasks.snapshots[id].learning.status, 'done', 'learning worked')
    H.log('ok ' .. how .. ' completed')
    -- The next task applies the same patch: take this one's change back out of the work tree.
    vim.fn.system({ 'git', 'checkout', '--', 'shop', 'tests' })
    H.eq(vim.v.shell_error, 0, 'the change taken back out')
  end
  H.log('ok ' .. how .. ' task ' .. id)
end
H.done()
