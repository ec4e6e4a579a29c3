-- Two repositories open (one server with both as folders, or one server each):
-- task commands go to the server that owns the task's workspace, not the
-- current buffer's.
-- cwd: repository A (fixtures/samples "pytest"); AUTOCODE_TEST_OTHER: repository B.
-- AUTOCODE_TEST_SEPARATE_SERVERS=1: a config that starts one server per
-- repository (reuse_client only for the same root), so B's buffer has its own
-- server, which does not know A's task; otherwise the shipped config (one
-- server with both as folders).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local questions = require('autocode.questions')
H.strict = true
H.record_calls()
local answering = false
H.script_ui(function()
  return 'Name each test after the behaviour it checks'
end, function(_, items)
  if vim.tbl_contains(items, 'Yes, cancel it') then
    return 'Yes, cancel it'
  end
  return answering and questions.TYPE or nil
end)

if vim.env.AUTOCODE_TEST_SEPARATE_SERVERS == '1' then
  vim.lsp.config('autocode', {
    reuse_client = function(client, config)
      return client.name == config.name and client.root_dir == config.root_dir
    end,
  })
end
vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
local a = H.client()
vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait_note(60000, 'asks:')
local id = tasks.current

vim.cmd.edit(vim.fs.joinpath(vim.env.AUTOCODE_TEST_OTHER, 'README.md'))
local b
H.wait(20000, function()
  b = vim.lsp.get_clients({ name = 'autocode', bufnr = 0 })[1]
  return b ~= nil and b.initialized
end, "repository B's server")
if b.id == a.id then
  -- The shipped setup: one server for every repository, B a workspace folder of it.
  local other = vim.fs.normalize(vim.env.AUTOCODE_TEST_OTHER)
  H.wait(20000, function()
    for _, f in ipairs(a.workspace_folders or {}) do
      if vim.fs.normalize(vim.uri_to_fname(f.uri)) == other then
        return true
      end
    end
    return false
  end, 'repository B added to the one server')
  H.log('ok one server for both repositories')
else
  H.check(vim.env.AUTOCODE_TEST_SEPARATE_SERVERS == '1', 'two servers only when the config asks for them')
  H.eq(vim.fs.normalize(b.root_dir), vim.fs.normalize(vim.env.AUTOCODE_TEST_OTHER), "B's server is rooted at B")
  H.log('ok two servers')
end

H.calls = {}
vim.cmd('AutoCode status')
H.wait(30000, function()
  local lines = H.scratch_lines('task/' .. id)
  return lines and table.concat(lines, '\n'):find('state: WAITING_FOR_USER', 1, true) ~= nil
end, 'the status of the task from its own server')
H.eq(H.sent('autocode.task.get')[1].client_id, a.id, "status asked A's server")
vim.cmd.wincmd('p')
answering = true
vim.cmd('AutoCode answer')
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return s and tasks.needs_kind(s) ~= 'question'
end, 'the answer to be taken')
H.eq(H.sent('autocode.task.answer')[1].client_id, a.id, "the answer went to A's server")
vim.cmd('AutoCode cancel')
H.wait(30000, function()
  local s = tasks.snapshots[id]
  return s and s.state == 'CANCELLED'
end, 'the task cancelled')
for _, call in ipairs(H.calls) do
  H.eq(call.client_id, a.id, 'every task command went to A: ' .. call.command)
end
H.log('ok routed to the owner')
H.done()
