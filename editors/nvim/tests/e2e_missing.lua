-- A server that is not installed: the first file opened in a repository says
-- so once, with the exact install command; more files say nothing more and
-- no server is spawned; :checkhealth autocode and :AutoCode say the same.
-- env: REPOS (two repository paths, ':'-separated).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

require('autocode').setup({ command = { '$HOME/nowhere/autocode-lsp' } })
local repos = vim.split(vim.env.REPOS, ':', { plain = true })
for _, repo in ipairs(repos) do
  vim.cmd.edit(vim.fs.joinpath(repo, 'README.md'))
  vim.cmd.edit(vim.fs.joinpath(repo, 'pyproject.toml'))
end
H.wait_note(5000, 'Install it with:', vim.log.levels.ERROR)
vim.wait(500)
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
