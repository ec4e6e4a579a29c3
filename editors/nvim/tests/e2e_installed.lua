-- After a plugin manager installed the plugin as docs/editors.md says (the
-- person's own config ran first, with its build step): the plugin and the
-- server come from the installed clone, :help autocode works from the shipped
-- tags, :checkhealth autocode has no error, and a whole task runs in a sample
-- repository (question answered, plan approved, change applied).
-- env: AUTOCODE_TEST_INSTALLED (the clone's root), AUTOCODE_TEST_REPO (the "unittest" sample
-- repository: its tests run with the system's Python alone).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local clone = vim.fs.normalize(vim.env.AUTOCODE_TEST_INSTALLED)
-- The documented spec loads the plugin on its first :AutoCode (lazy.nvim's `cmd`), as a person's
-- first command does: the stub command loads it, then runs the real one (the usage).
H.eq(vim.fn.exists(':AutoCode'), 2, ':AutoCode is there before the plugin loads')
vim.cmd('AutoCode')
H.check(H.note('usage :AutoCode'), 'the first :AutoCode loaded the plugin and ran')

local source = debug.getinfo(require('autocode').setup, 'S').source:sub(2)
H.check(vim.startswith(vim.fs.normalize(source), clone .. '/editors/nvim/'), 'the plugin loads from the clone: ' .. source)
H.eq(vim.fn.exists(':AutoCode'), 2, ':AutoCode is defined')
local server = clone .. '/editors/nvim/server/bin/autocode-lsp'
H.check(vim.fn.executable(server) == 1, 'the build step installed the server at ' .. server)
H.eq(require('autocode.config').cmd()[1], server, 'the plugin runs the server the build step installed')
H.log('ok installed from the clone')

vim.cmd.help('autocode')
H.check(vim.startswith(vim.fs.normalize(vim.api.nvim_buf_get_name(0)), clone), ':help autocode opens the clone\'s help')
vim.cmd.helpclose()
H.log('ok help')

local repo = vim.env.AUTOCODE_TEST_REPO
vim.cmd.cd(repo)
vim.cmd.edit(vim.fs.joinpath(repo, 'README.md'))
H.client(60000)
vim.cmd('checkhealth autocode')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
io.stderr:write(health .. '\n')
H.check(not health:find('ERROR', 1, true), 'no ERROR in :checkhealth autocode')
H.check(health:find(server, 1, true), 'checkhealth names the installed server')
H.log('ok checkhealth')

-- The task flow: every question gets the proposed default, every confirmation Yes.
local tasks = require('autocode.tasks')
H.strict = true
H.script_ui(function()
  return 'Name each test after the behaviour it checks'
end, function(_, items)
  return vim.tbl_contains(items, 'Yes') and 'Yes' or items[1]
end)
vim.cmd.edit(vim.fs.joinpath(repo, 'README.md'))
vim.cmd('AutoCode start Add longest_word to textkit.words; apply patches/add-longest-word.patch')
H.wait(60000, function()
  return tasks.current ~= nil
end, 'the task to start')
local id = tasks.current
-- Each step announces itself; the person opens it on purpose.
local function waits_for(kind)
  return function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == kind
  end
end
H.wait(120000, function()
  return waits_for('question')() or waits_for('approve_plan')()
end, 'the question or the plan')
if waits_for('question')() then
  vim.cmd('AutoCode answer')
end
H.wait(120000, waits_for('approve_plan'), 'the plan')
vim.cmd('AutoCode review')
H.wait(30000, function()
  return require('autocode.ui').find('plan/' .. id) ~= nil
end, 'the plan buffer')
vim.cmd.normal('a')
H.wait(120000, waits_for('approve_completion'), 'the verified change')
vim.cmd('AutoCode review')
H.wait(30000, function()
  return require('autocode.ui').find('diff/' .. id) ~= nil
end, 'the diff buffer')
vim.cmd.normal('a')
H.wait(120000, function()
  local s = tasks.snapshots[id]
  return s and s.done == true
end, 'the task to end')
H.eq(tasks.snapshots[id].state, 'COMPLETED', 'task completed')
local words = table.concat(vim.fn.readfile(vim.fs.joinpath(repo, 'textkit', 'words.py')), '\n')
H.check(words:find('def longest_word', 1, true), 'the change reached the work tree')
H.log('ok task flow')
H.done()
