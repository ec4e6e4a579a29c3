-- After the server dies, the one that starts next serves every repository that is open, not
-- only the current buffer's: a command for the other repository works without an `:e` there.
-- cwd: repository A; AUTOCODE_TEST_OTHER: repository B.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local a_root = vim.fs.normalize(vim.fn.getcwd())
local b_root = vim.fs.normalize(vim.env.AUTOCODE_TEST_OTHER)

local function folders(c)
  return vim.tbl_map(function(f)
    return vim.fs.normalize(vim.uri_to_fname(f.uri))
  end, c.workspace_folders or {})
end

vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
local first = H.client()
vim.cmd.split(vim.fs.joinpath(b_root, 'README.md'))
local b_buf = vim.api.nvim_get_current_buf()
H.wait(20000, function()
  return vim.tbl_contains(folders(first), b_root)
end, 'B added to the one server')
H.call('autocode.task.list', { workspace = b_root })
H.log('ok one server for both')

for _, pid in ipairs(H.children()) do
  vim.uv.kill(pid, 'sigkill')
end
H.wait(10000, function()
  return #vim.lsp.get_clients({ name = 'autocode' }) == 0
end, 'the killed server to go')
H.wait_note(10000, 'the server stopped (exit code 0, signal 9)')

-- The next command, from A's window, starts a new server.
vim.cmd.wincmd('j')
H.check(vim.api.nvim_get_current_buf() ~= b_buf, "back in A's window")
vim.cmd('AutoCode tasks')
local second
H.wait(30000, function()
  second = vim.lsp.get_clients({ name = 'autocode' })[1]
  return second ~= nil and second.initialized and vim.tbl_contains(folders(second), b_root)
end, 'the new server with both folders')
H.check(vim.tbl_contains(folders(second), a_root), 'A is a folder of the new server: ' .. vim.inspect(folders(second)))
local err = require('autocode.client').call_sync('autocode.task.list', { workspace = b_root }, 30000, second)
H.check(err == nil, 'the new server serves B: ' .. vim.inspect(err))
H.check(vim.lsp.buf_is_attached(b_buf, second.id), "B's open buffer is attached to the new server")
H.log('ok restarted with every repository')
H.done()
