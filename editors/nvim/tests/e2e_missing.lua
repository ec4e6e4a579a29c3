-- A server that is not installed: the first file opened in a repository says
-- so once, with the exact install command; more files say nothing more and
-- no server is spawned; :checkhealth autocode and :AutoCode say the same.
-- env: REPOS (two repository paths, ':'-separated).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

-- The plugin fires AutoCodeBufferChecked for a buffer once its decision is acted on, after the
-- install note that decision schedules, and in the order of the checks: once each of the four
-- buffers has had its event, every note the checks could give has been given.
local checked = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutoCodeBufferChecked',
  callback = function(ev)
    checked[ev.data.buf] = ev.data
  end,
})
require('autocode').setup({ command = { '$HOME/nowhere/autocode-lsp' } })
local repos = vim.split(vim.env.REPOS, ':', { plain = true })
local bufs = {}
for _, repo in ipairs(repos) do
  for _, file in ipairs({ 'README.md', 'pyproject.toml' }) do
    vim.cmd.edit(vim.fs.joinpath(repo, file))
    table.insert(bufs, vim.api.nvim_get_current_buf())
  end
end
H.wait(5000, function()
  return vim.iter(bufs):all(function(b)
    return checked[b]
  end)
end, 'the four buffers to be checked')
for _, b in ipairs(bufs) do
  H.check(checked[b].root and not checked[b].start, 'in a repository, and nothing starts: ' .. vim.inspect(checked[b]))
end
local said = 0
for _, n in ipairs(H.notes) do
  if n.msg:find('not installed or not executable', 1, true) then
    said = said + 1
    H.check(n.msg:find(vim.env.HOME .. '/nowhere/autocode-lsp', 1, true), 'the message names the expanded path: ' .. n.msg)
    -- The first command works from the plugin's own checkout: its build step (the package
    -- name is not on the index yet, so no `pipx install autocode-lsp`).
    local build = vim.fs.joinpath(require('autocode.config').checkout(), 'editors', 'nvim', 'build.sh')
    H.check(vim.fn.filereadable(build) == 1, 'the build step exists: ' .. build)
    H.check(n.msg:find('Install it with: sh ' .. vim.fn.shellescape(build), 1, true), 'the build step comes first: ' .. n.msg)
    H.check(not n.msg:find('pipx', 1, true), 'no package name absent from the index: ' .. n.msg)
  end
end
H.eq(said, 1, 'said once for four buffers in two repositories')
H.eq(#vim.lsp.get_clients({ name = 'autocode' }), 0, 'no server was spawned')
H.log('ok said once')

vim.cmd('checkhealth autocode')
local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
H.check(text:find('ERROR', 1, true), 'checkhealth reports the missing server')
H.check(text:find(require('autocode.config').install_hint(), 1, true), 'checkhealth gives the install command')
H.log('ok checkhealth')
H.done()
