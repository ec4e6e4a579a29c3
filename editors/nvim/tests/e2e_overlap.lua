-- An overlap is shown before Apply, and Apply leaves it to the person. While the verified change
-- waits, the person types (unsaved) a function at the end of shop/pricing.py: the very lines
-- where the task adds total_with_tax. :AutoCode review then names the file and the person's
-- lines in `# OVERLAP` lines above the diff and puts the overlap sign on that file's `+++` line
-- (the test file, which they did not touch, gets none); :AutoCode hunks marks the hunk as a
-- conflict with the same sign. :AutoCode apply writes nothing: the task waits for the person's
-- choice, the buffer still holds exactly their text (unsaved), and no buffer opened by itself.
-- :AutoCode resolve with "markers" then puts both sides in the buffer for them to settle; the task
-- waits for the buffer to be written, and completes once it is.
-- cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
H.strict = true
local id, buf = H.verified_change('shop/pricing.py', function(item)
  return vim.startswith(item, 'markers:')
end)

local disk_before = {
  pricing = vim.fn.readfile('shop/pricing.py'),
  tests = vim.fn.readfile('tests/test_pricing.py'),
}
-- The person's own edit, typed into the buffer and not saved: where the task adds its function.
vim.api.nvim_set_current_buf(buf)
local n = vim.api.nvim_buf_line_count(buf)
vim.api.nvim_buf_set_lines(buf, n, n, false, { '', '', 'def total_with_discount(prices, off):', '    return total(prices) - off' })
local mine = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

local signed = H.signed_lines

-- :AutoCode review: the diff, with the overlap said and marked before anything is applied.
vim.cmd('AutoCode review')
H.wait(30000, function()
  return H.scratch_lines('diff/' .. id) ~= nil
end, 'the diff buffer')
local diff_buf = require('autocode.ui').find('diff/' .. id)
local lines = H.scratch_lines('diff/' .. id)
local text = table.concat(lines, '\n')
H.check(lines[1]:find('^# OVERLAP: 1 file of this change touches lines you edited'), 'the overlap comes first:\n' .. text)
H.check(text:find('# OVERLAP shop/pricing.py, your lines 3-6: git cannot merge it with your edit', 1, true),
  'the overlap names the file and the lines:\n' .. text)
H.check(not text:find('OVERLAP tests/test_pricing.py', 1, true), 'the untouched test file does not overlap:\n' .. text)
local marked = signed(diff_buf)
H.check(vim.tbl_contains(marked, '+++ b/shop/pricing.py'), 'the sign on the overlapping file: ' .. vim.inspect(marked))
H.check(not vim.tbl_contains(marked, '+++ b/tests/test_pricing.py'), 'no sign on the other file: ' .. vim.inspect(marked))
H.eq(vim.api.nvim_get_current_buf(), diff_buf, ':AutoCode review went to the diff')
H.log('ok overlap marked in the review')

-- :AutoCode hunks: the same hunk, said to conflict, with the sign.
vim.cmd('AutoCode hunks')
H.wait(30000, function()
  return H.scratch_lines('hunks/' .. id) ~= nil
end, 'the hunk review')
local hunks_buf = require('autocode.ui').find('hunks/' .. id)
local hunk_text = table.concat(H.scratch_lines('hunks/' .. id), '\n')
H.check(hunk_text:find('1 overlaps your own edits, 1 conflict', 1, true),
  'the count of overlaps:\n' .. hunk_text)
marked = signed(hunks_buf)
H.eq(#marked, 1, 'one hunk marked: ' .. vim.inspect(marked))
H.check(marked[1]:find('^@@ %-3,4 ') and marked[1]:find('CONFLICT: both changed these lines', 1, true),
  'the marked hunk is the overlap at the person\'s lines 3-6: ' .. marked[1])
H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), mine, 'reviewing changed nothing')
H.log('ok overlap marked hunk by hunk')

-- Apply: nothing written, the person's buffer untouched; the task waits for their choice.
vim.cmd('AutoCode apply')
H.wait(60000, function()
  return tasks.needs_kind(tasks.snapshots[id] or {}) == 'resolve_conflicts'
end, 'the task to wait for a choice')
H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), mine, 'the buffer holds exactly the person\'s text')
H.check(vim.bo[buf].modified, 'the buffer stays unsaved')
H.eq(vim.fn.readfile('shop/pricing.py'), disk_before.pricing, 'nothing written to the overlapping file')
H.eq(vim.fn.readfile('tests/test_pricing.py'), disk_before.tests, 'nothing written to the other file either')
H.eq(H.scratch_lines('conflicts/' .. id), nil, 'the conflicts did not open by themselves')
H.log('ok apply left the overlap to the person')

-- The person chooses: conflict markers in their buffer, both sides kept.
vim.cmd('AutoCode resolve')
H.wait(60000, function()
  local s = tasks.snapshots[id]
  return s and tasks.needs_kind(s) ~= 'resolve_conflicts' and s.state ~= 'APPLYING'
end, 'the choice to be applied')
local after = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
H.check(after:find('<<<<<<<', 1, true) and after:find('>>>>>>>', 1, true), 'markers in the buffer:\n' .. after)
H.check(after:find('def total_with_discount', 1, true) and after:find('def total_with_tax', 1, true), 'both sides kept:\n' .. after)
H.check(vim.bo[buf].modified, 'the markers wait in the unsaved buffer, for the person to settle and write')
H.eq(vim.fn.readfile('shop/pricing.py'), disk_before.pricing, 'nothing written behind the unsaved buffer')
-- Applied means on disk: not COMPLETED while the markers are only in the buffer; the person is
-- told which file to write and that it holds the markers.
H.eq(tasks.snapshots[id].state, 'WAITING_FOR_SAVE', 'the task waits for the write')
H.wait_note(30000, ':w shop/pricing.py to complete it; shop/pricing.py holds conflict markers')
H.log('ok markers for the person')

-- The person writes the buffer (the markers in it are theirs to settle): the task completes.
vim.api.nvim_buf_call(buf, function()
  vim.cmd('write')
end)
H.wait(60000, function()
  return (tasks.snapshots[id] or {}).state == 'COMPLETED'
end, 'the task to complete once the buffer is written')
H.log('ok completed once written')
H.done()
