-- Installed as the docs say (editors/nvim on 'runtimepath', setup{} with a
-- `~` in `command`), in a clean XDG home: :help autocode works from the
-- shipped tags, one server serves three repositories as workspace folders,
-- the memory flow works in each, the server's memory stays in the goal and
-- :checkhealth autocode has no error.
-- env: REPOS (three repository paths, ':'-separated); HOME holds bin/autocode-lsp.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

vim.cmd.help('autocode-install')
H.check(vim.api.nvim_buf_get_name(0):find('autocode.txt$') ~= nil, ':help autocode-install opens autocode.txt')
vim.cmd.helpclose()
H.log('ok help')

require('autocode').setup({ command = { '~/bin/autocode-lsp' } })
H.eq(require('autocode.config').cmd()[1], vim.env.HOME .. '/bin/autocode-lsp', '~ expanded in command')

local repos = vim.split(vim.env.REPOS, ':', { plain = true })
for _, repo in ipairs(repos) do
  vim.cmd.edit(vim.fs.joinpath(repo, 'README.md'))
  H.wait(20000, function()
    local c = vim.lsp.get_clients({ name = 'autocode', bufnr = 0 })[1]
    return c ~= nil and c.initialized == true
  end, 'the client to attach in ' .. repo)
end
local clients = vim.lsp.get_clients({ name = 'autocode' })
H.eq(#clients, 1, 'one server for three repositories')
local info = H.call('autocode.protocol.info')
table.sort(info.workspaces)
local want = vim.deepcopy(repos)
table.sort(want)
H.eq(info.workspaces, want, 'every repository is a workspace folder of that server')
H.log('ok one server')

local facts = {
  'The tests run with unittest discovery from the tests folder.',
  'Database migrations are plain SQL files reviewed by the data team.',
  'Release branches only take fixes that have a linked incident.',
}
for i, repo in ipairs(repos) do
  local saved = H.call('autocode.memory.save', { workspace = repo, content = facts[i], scope = 'project' })
  H.check(saved.saved, 'memory saved in ' .. repo .. ': ' .. vim.inspect(saved))
  local found = H.call('autocode.memory.search', { workspace = repo, query = facts[i]:match('^(%S+ %S+ %S+)') })
  H.check(#found.memories >= 1, 'memory found in ' .. repo)
  H.call('autocode.doctor', { workspace = repo })
end
H.log('ok flow in three repositories')

local total, servers = 0, 0
for _, pid in ipairs(H.children()) do
  local ok, status = pcall(vim.fn.readfile, ('/proc/%d/status'):format(pid))
  if ok then
    for _, line in ipairs(status) do
      local kb = line:match('^VmRSS:%s+(%d+)')
      if kb then
        total = total + tonumber(kb)
        servers = servers + 1
      end
    end
  end
end
H.log(('footprint: %d process(es), %.0f MB'):format(servers, total / 1024))
H.eq(servers, 1, 'one server process')
H.check(total / 1024 <= 120, ('three repositories within 120 MB: %.0f MB'):format(total / 1024))

vim.cmd.edit(vim.fs.joinpath(repos[1], 'README.md'))
vim.cmd('checkhealth autocode')
local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
io.stderr:write(text .. '\n')
H.check(not text:find('ERROR', 1, true), 'no ERROR in checkhealth')
H.check(text:find('has every API the plugin uses', 1, true), 'the APIs are checked')
H.log('ok checkhealth')
H.done()
