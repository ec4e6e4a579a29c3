-- A session outside any repository: no workspace folder, task commands say
-- they need one, memory is global. cwd: an empty folder outside any repository.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local client = require('autocode.client')

H.eq(client.workspace_for(), nil, 'no workspace folder here')
-- Opening a file outside a repository does not start a server by itself. The plugin's event
-- for the buffer comes after any start its decision set going (Neovim schedules that start).
-- The file gets a buffer of its own (`:edit` would reuse the empty first buffer, which has an
-- event of its own when the config is enabled).
local checked
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutoCodeBufferChecked',
  callback = function(ev)
    checked = ev.data
  end,
})
vim.lsp.enable('autocode')
vim.cmd.split('notes.txt')
local notes_buf = vim.api.nvim_get_current_buf()
H.wait(5000, function()
  return checked ~= nil and checked.buf == notes_buf
end, 'the plugin to decide about notes.txt')
H.eq(checked, { buf = notes_buf, start = false }, 'no repository, so no start')
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
