-- The overlap marks follow the person's typing. With the verified change waiting and nothing of
-- theirs in shop/pricing.py, :AutoCode review and :AutoCode hunks open with no overlap. The person
-- goes back to their window and types a function at the end of the file, where the task adds
-- total_with_tax: with no command run again, the diff gains its `# OVERLAP` lines and the sign on
-- that file's `+++` line, and the hunk review marks the hunk. The preview was asked for again once,
-- after the typing stopped, not on every key. Then they undo it (`u`): the marks go, and both
-- reviews are as they opened. A review whose window was closed while they typed is brought up to
-- date when it is shown again.
-- Run with `nvim -S` (typed keys handled by the main loop). cwd: fixtures/samples "pytest".
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local review = require('autocode.review')
local ui = require('autocode.ui')
H.record_calls()

--- The lines of autocode://<name> that carry the overlap sign.
local function marked(name)
  return H.signed_lines(ui.find(name))
end

local function text(name)
  return table.concat(H.scratch_lines(name) or {}, '\n')
end

local function previews()
  return #H.sent('autocode.task.preview')
end

local function no_error()
  for _, n in ipairs(H.notes) do
    H.check(n.level ~= vim.log.levels.ERROR, 'no error was said: ' .. n.msg)
  end
end

H.async(function()
  local id, buf = H.verified_change('shop/pricing.py')
  local own_win = vim.api.nvim_get_current_win()
  local disk = vim.fn.readfile('shop/pricing.py')
  local diff, hunks = 'diff/' .. id, 'hunks/' .. id

  -- Both reviews open while the file holds nothing of the person's: no overlap anywhere.
  vim.cmd('AutoCode review')
  H.until_(30000, function()
    return H.scratch_lines(diff) ~= nil
  end, 'the diff')
  vim.cmd('AutoCode hunks')
  H.until_(30000, function()
    return H.scratch_lines(hunks) ~= nil
  end, 'the hunk review')
  local diff_at_first = H.scratch_lines(diff)
  local hunks_at_first = H.scratch_lines(hunks)
  H.check(not text(diff):find('OVERLAP', 1, true), 'no overlap in the diff:\n' .. text(diff))
  H.eq(marked(diff), {}, 'no mark in the diff')
  H.check(text(hunks):find(' 0 overlap your own edits', 1, true), 'no overlap in the hunk review:\n' .. text(hunks))
  H.eq(marked(hunks), {}, 'no hunk marked')
  H.log('ok no overlap when the review opens')

  -- The diff window's cursor rests on a line of the diff body; it stays on that line below.
  local diff_win = vim.fn.bufwinid(ui.find(diff))
  local body_line = '+++ b/tests/test_pricing.py'
  local function cursor_text()
    local row = vim.api.nvim_win_get_cursor(diff_win)[1]
    return vim.api.nvim_buf_get_lines(ui.find(diff), row - 1, row, false)[1]
  end
  for i, l in ipairs(diff_at_first) do
    if vim.startswith(l, body_line) then
      vim.api.nvim_win_set_cursor(diff_win, { i, 0 })
    end
  end
  H.check(vim.startswith(cursor_text(), body_line), 'the diff cursor is on ' .. body_line)

  -- The person goes back to their file and types where the task adds its function; nothing is run.
  vim.api.nvim_set_current_win(own_win)
  H.eq(vim.api.nvim_get_current_buf(), buf, "the person's window shows their file")
  local asked = previews()
  local keys = 'Go<CR>def total_with_discount(prices, off):<Esc>'
  vim.api.nvim_input(keys)
  H.until_(60000, function()
    return vim.tbl_contains(marked(diff), '+++ b/shop/pricing.py') and #marked(hunks) == 1
  end, 'the marks to follow the typing')
  local now = H.scratch_lines(diff)
  local said = text(diff)
  H.check(now[1]:find('^# OVERLAP: 1 file of this change touches lines you edited'), 'the overlap comes first:\n' .. said)
  H.check(said:find('# OVERLAP shop/pricing.py, your lines ', 1, true), 'the overlap names the file:\n' .. said)
  H.check(not vim.tbl_contains(marked(diff), '+++ b/tests/test_pricing.py'), 'no sign on the file they did not touch')
  local head = 0
  while vim.startswith(now[head + 1], '# OVERLAP') do
    head = head + 1
  end
  H.eq(vim.list_slice(now, head + 1), diff_at_first, 'below the overlap lines the diff is as it opened')
  H.check(text(hunks):find('1 overlaps your own edits', 1, true), 'the hunk review counts the overlap:\n' .. text(hunks))
  H.check(marked(hunks)[1]:find('^@@ '), 'the marked line is the hunk header: ' .. marked(hunks)[1])
  H.check(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'):find('def total_with_discount(prices, off):', 1, true),
    'the typed function is in the buffer')
  H.check(vim.bo[buf].modified, 'the typing is unsaved')
  H.eq(vim.api.nvim_get_current_win(), own_win, "the cursor stayed in the person's window")
  H.check(vim.startswith(cursor_text(), body_line), 'the diff cursor stayed on its line: ' .. cursor_text())
  H.eq(vim.api.nvim_get_mode().mode, 'n', 'the person is back in normal mode')
  -- The keys arrived together: one request per quiet period, not one per key (a loaded machine
  -- may take longer than the quiet period over the keys and ask twice).
  local typed = previews() - asked
  H.check(typed >= 1 and typed <= 2, 'the preview was asked for once or twice, not per key: ' .. typed)
  no_error()
  H.log('ok marks follow the typing')

  -- They undo it: the overlap goes, and the reviews are as they opened.
  asked = previews()
  vim.api.nvim_input('u')
  H.until_(60000, function()
    return #marked(diff) == 0 and #marked(hunks) == 0
  end, 'the marks to go with the undone edit')
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), disk, 'the undo took the buffer back to the file')
  H.eq(H.scratch_lines(diff), diff_at_first, 'the diff is as it opened')
  H.eq(H.scratch_lines(hunks), hunks_at_first, 'the hunk review is as it opened')
  H.eq(previews() - asked, 1, 'one request for the undo')
  H.check(vim.startswith(cursor_text(), body_line), 'the diff cursor is still on its line: ' .. cursor_text())
  H.eq(vim.api.nvim_get_current_win(), own_win, "the cursor stayed in the person's window")
  no_error()
  H.log('ok marks go with the undone edit')

  -- With both reviews closed they type it again, then show the hunk review: it is brought up to date.
  ui.close(ui.find(diff))
  ui.close(ui.find(hunks))
  vim.api.nvim_set_current_win(own_win)
  asked = previews()
  vim.api.nvim_input(keys)
  -- The quiet period ends with no review in a window: nothing is asked, the reviews wait to be shown.
  H.until_(30000, function()
    return review.live[id] ~= nil and review.live[id].stale == true
  end, 'the change to be noted while no review is shown')
  H.eq(previews() - asked, 0, 'no request while no review is shown')
  H.eq(marked(hunks), {}, 'the hidden hunk review was left as it was')
  vim.cmd('sbuffer ' .. ui.find(hunks))
  H.until_(60000, function()
    return #marked(hunks) == 1
  end, 'the hunk review shown again to follow the typing')
  H.check(text(hunks):find('1 overlaps your own edits', 1, true), 'the hunk review counts the overlap:\n' .. text(hunks))
  no_error()
  H.log('ok a review shown again is brought up to date')
  H.done()
end)
