-- Applying over the person's own uncommitted edits (a server with the
-- three-way apply). AUTOCODE_TEST_CHOICE: "clean" (an edit far from the
-- change: both end up in the file, the task completes), or "mine" / "theirs"
-- / "markers" (an edit at the same place: the task waits with
-- resolve_conflicts, the file untouched until :AutoCode resolve picks that
-- choice). A loaded buffer of the file is reloaded afterwards.
-- cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
local choice = vim.env.AUTOCODE_TEST_CHOICE or 'markers'
local id, buf = H.verified_change('shop/pricing.py', function(item)
  return vim.startswith(item, choice .. ':')
end)

local mine = vim.fn.readfile('shop/pricing.py')
if choice == 'clean' then
  table.insert(mine, 1, '# pricing helpers')
else
  vim.list_extend(mine, { '', '', 'def total_with_discount(prices, off):', '    return total(prices) - off' })
end
vim.fn.writefile(mine, 'shop/pricing.py')
vim.cmd.checktime()
vim.cmd('AutoCode apply')
if choice ~= 'clean' then
  H.wait(60000, function()
    return tasks.needs_kind(tasks.snapshots[id] or {}) == 'resolve_conflicts'
  end, 'the conflict')
  H.eq(vim.fn.readfile('shop/pricing.py'), mine, 'nothing written before the choice')
  H.eq(H.scratch_lines('conflicts/' .. id), nil, 'the conflicts did not open by themselves')
  vim.cmd('AutoCode review')
  H.wait(30000, function()
    return H.scratch_lines('conflicts/' .. id) ~= nil
  end, 'the conflicts buffer')
  local lines = table.concat(H.scratch_lines('conflicts/' .. id) or {}, '\n')
  H.check(lines:find('shop/pricing.py', 1, true), 'the conflicts buffer names the file:\n' .. lines)
  H.log('ok waits for a choice')
  vim.cmd('AutoCode resolve')
end
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return s and s.done == true
end, 'the task to complete')
H.eq(tasks.snapshots[id].state, 'COMPLETED', 'completed')
-- A change merged into the open buffer stays unsaved until the person writes it.
vim.cmd('silent! wall')
H.wait(10000, function()
  return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.fn.readfile('shop/pricing.py'))
end, 'the buffer to be reloaded')
H.log('ok ' .. choice)
H.done()
