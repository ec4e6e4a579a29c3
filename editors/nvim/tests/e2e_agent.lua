-- The agent's own words in Neovim: a task through the openai provider against a scripted
-- endpoint (served by the test). The diff buffer and the task view show the implementer's final
-- summary and the reviewer's verdict with the tests; :AutoCode transcript opens transcript.md.
-- cwd: the calc repository, its config naming the endpoint (trusted by the test).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
H.script_ui({}, {})
vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
H.client()
vim.cmd('AutoCode start add(2, 3) gives -1; fix it.')
H.wait(120000, function()
  return tasks.current ~= nil and tasks.needs_kind(tasks.snapshots[tasks.current] or {}) == 'approve_plan'
end, 'the plan')
local id = tasks.current
vim.cmd('AutoCode approve')
H.wait(180000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'approve_completion'
end, 'the verified change')
vim.cmd('AutoCode review')
H.wait(30000, function()
  return H.scratch_lines('diff/' .. id) ~= nil
end, 'the diff buffer')
local diff = table.concat(H.scratch_lines('diff/' .. id), '\n')
H.check(diff:find('# Agent (implementer): add adds now', 1, true), 'the summary in the diff:\n' .. diff)
H.check(diff:find('# Review: add fixed; tests pass', 1, true), 'the review in the diff:\n' .. diff)
H.check(diff:find('# Tests: ', 1, true), 'the tests in the diff:\n' .. diff)
H.log('ok summary in the diff')
vim.cmd('AutoCode status')
H.wait(30000, function()
  return H.scratch_lines('task/' .. id) ~= nil
end, 'the task view')
local view = table.concat(H.scratch_lines('task/' .. id), '\n')
H.check(view:find('## Agent\n\nAgent (implementer): add adds now', 1, true), 'the summary in the task view:\n' .. view)
H.log('ok summary in the task view')
vim.cmd('AutoCode transcript')
H.wait(30000, function()
  return vim.api.nvim_buf_get_name(0):find('transcript.md', 1, true) ~= nil
end, 'transcript.md to open')
local page = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
H.check(page:find('## implementer', 1, true), 'the transcript has the implementer:\n' .. page:sub(1, 400))
H.eq(vim.bo.filetype, 'markdown', 'read as Markdown')
H.log('ok transcript opens')
H.done()
