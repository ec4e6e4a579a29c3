-- The review shows what Apply will do to the person's buffer as it is now (their unsaved edit
-- is no deletion in it), and one hunk undone with :AutoCode hunk undo stays out of the apply:
-- the test file keeps its import line, the pricing change lands in the buffer that holds the
-- unsaved edit, and the task completes only once that buffer is written (on disk).
-- cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
local id, buf = H.verified_change('shop/pricing.py')

-- The person's own edit, typed into the buffer and not saved.
vim.api.nvim_set_current_buf(buf)
vim.api.nvim_buf_set_lines(buf, 0, 0, false, { '# my unsaved note' })
local tests_before = vim.fn.readfile('tests/test_pricing.py')

vim.cmd('AutoCode hunks')
H.wait(30000, function()
  return H.scratch_lines('hunks/' .. id) ~= nil
end, 'the hunk review')
local lines = H.scratch_lines('hunks/' .. id)
local text = table.concat(lines, '\n')
H.check(not text:find('-# my unsaved note', 1, true), 'the unsaved edit is shown as a deletion:\n' .. text)
H.check(text:find('+def total_with_tax', 1, true), 'the merged result is shown:\n' .. text)
H.check(text:find('0 overlap', 1, true), 'no hunk overlaps the edit far from the change:\n' .. text)
H.log('ok review shows the merged result')

-- Undo the import hunk of the test file (the cursor on its header line).
local review_win = vim.fn.bufwinid(vim.fn.bufnr('autocode://hunks/' .. id))
vim.api.nvim_set_current_win(review_win)
local target
for i, l in ipairs(lines) do
  if target == nil and l:find('^@@ %-1,1 %+1,1 @@') then
    target = i
  end
end
H.check(target ~= nil, 'the import hunk is listed:\n' .. text)
vim.api.nvim_win_set_cursor(review_win, { target, 0 })
vim.cmd('AutoCode hunk undo')
local now = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(review_win), target - 1, target, false)[1]
H.check(now:find('[undo]', 1, true), 'the hunk is marked undone: ' .. now)
H.log('ok hunk undone')

vim.cmd('AutoCode apply')
H.wait(60000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'save_files'
end, 'the change merged into the unsaved buffer, waiting for its save')
local merged = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
H.eq(merged[1], '# my unsaved note', 'the unsaved edit is kept')
H.check(table.concat(merged, '\n'):find('def total_with_tax', 1, true), 'the change is in the buffer')
H.check(vim.bo[buf].modified, 'the buffer stays unsaved for the person')
H.log('ok waits for the save')

vim.api.nvim_buf_call(buf, function()
  vim.cmd('silent write')
end)
H.wait(30000, function()
  local s = tasks.snapshots[id]
  return s and s.state == 'COMPLETED'
end, 'the task to complete once the buffer is on disk')
local done = tasks.snapshots[id]
H.check(done.result.partial == true and done.result.verified == false, 'a partial apply is not verified')
H.eq(#done.result.apply.hunksUndone, 1, 'one hunk left out')
local tests_after = vim.fn.readfile('tests/test_pricing.py')
H.eq(tests_after[1], tests_before[1], 'the undone import hunk is not applied')
H.check(table.concat(tests_after, '\n'):find('test_total_with_tax_applies_the_rate', 1, true), 'the kept hunk is')
H.log('ok partial apply on disk')
H.done()
