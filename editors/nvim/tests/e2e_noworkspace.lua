-- A session outside any repository: no workspace folder, task commands say
-- they need one, memory is global. cwd: an empty folder outside any repository.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local client = require('autocode.client')

H.eq(client.workspace_for(), nil, 'no workspace folder here')
-- Opening a file outside a repository does not start a server by itself.
vim.lsp.enable('autocode')
vim.cmd.edit('notes.txt')
vim.wait(500)
H.eq(#vim.lsp.get_clients({ name = 'autocode' }), 0, 'no server for a file outside a repository')
local c = assert(client.ensure())
H.client()
H.eq(c.root_dir, nil, 'client started without a root')
local info = H.call('autocode.protocol.info')
H.eq(info.workspaces, {}, 'server sees no workspace folder')
H.log('ok no folder')

vim.cmd('AutoCode start add a flag')
local n = H.wait_note(20000, 'start failed', vim.log.levels.ERROR)
H.check(n.msg:find('need a workspace folder', 1, true), 'says why: ' .. n.msg)
H.check(n.msg:find('global memory', 1, true), 'says memory still works: ' .. n.msg)
H.notes = {}
vim.cmd('AutoCode tasks')
n = H.wait_note(20000, 'tasks failed', vim.log.levels.ERROR)
H.check(n.msg:find('need a workspace folder', 1, true), 'tasks says why: ' .. n.msg)
H.notes = {}
vim.cmd('AutoCode forget')
H.wait_note(20000, 'forget needs a workspace folder', vim.log.levels.ERROR)
H.log('ok task commands explain')

-- Memory works, on global memory only.
H.notes = {}
vim.cmd('AutoCode memory save --scope=project Builds here need the network sandbox disabled')
n = H.wait_note(20000, 'memory not saved', vim.log.levels.WARN)
H.log('project scope refused: ' .. n.msg)
H.notes = {}
vim.cmd('AutoCode memory save Release notes are written in the imperative mood')
n = H.wait_note(20000, 'saved (global)')
vim.cmd('AutoCode memory list')
H.wait(20000, function()
  local lines = H.scratch_lines('memory')
  return lines and table.concat(lines, '\n'):find('imperative mood', 1, true) ~= nil
end, 'the global memory listed')
H.log('ok global memory')
H.done()
