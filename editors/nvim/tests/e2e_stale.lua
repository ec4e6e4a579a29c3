-- A buffer with no unsaved edit whose file another program changed since it was read (a shell,
-- git, another editor): the apply merges into what is on disk, so that work survives in the
-- file and in the buffer, and a :w afterwards loses nothing.
-- cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
local id, buf = H.verified_change('shop/pricing.py')

-- Another program adds work to the file; Neovim has not read it again (no autoread event here).
local on_disk = vim.fn.readfile('shop/pricing.py')
table.insert(on_disk, 1, 'def uncommitted_work():')
table.insert(on_disk, 2, '    return 42')
table.insert(on_disk, 3, '')
vim.fn.writefile(on_disk, 'shop/pricing.py')
H.check(not vim.bo[buf].modified, 'the buffer holds no unsaved edit')
H.check(not table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('uncommitted_work', 1, true),
  'the buffer is stale')

vim.cmd('AutoCode apply')
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return s ~= nil and (s.done == true or tasks.needs_kind(s) == 'save_files')
end, 'the change to be applied')
local file = table.concat(vim.fn.readfile('shop/pricing.py'), '\n')
local shown = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
H.check(file:find('def uncommitted_work', 1, true), 'the other program\'s work is gone from the file:\n' .. file)
H.check(file:find('def total_with_tax', 1, true), 'the change is not on disk:\n' .. file)
H.check(shown:find('def uncommitted_work', 1, true) and shown:find('def total_with_tax', 1, true),
  'the buffer does not show both:\n' .. shown)
H.eq(tasks.snapshots[id].state, 'COMPLETED', 'completed: nothing of the person\'s was unsaved')
vim.api.nvim_buf_call(buf, function()
  vim.cmd('silent write')
end)
H.check(table.concat(vim.fn.readfile('shop/pricing.py'), '\n'):find('def uncommitted_work', 1, true), 'a :w loses it')
H.log('ok stale buffer merged from disk')
H.done()
