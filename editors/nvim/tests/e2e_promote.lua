-- Promotion from Neovim: :AutoCode promote shows team memories as skill
-- candidates; `a` with nothing selected writes nothing, `x` selects one and
-- `a` applies it (the memory becomes a skill and is gone). cwd: a repository.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local ws = vim.fn.getcwd()
require('autocode.client').ensure()
H.client()
H.strict = true
local TEAM = 'Always pin the pytest version in CI images so an upgrade cannot break the build'
vim.cmd('AutoCode memory save --shared ' .. TEAM)
H.wait_note(30000, 'saved (project)')

vim.cmd('AutoCode promote')
H.wait(30000, function()
  return H.scratch_lines('promote') ~= nil
end, 'the promotion buffer')
local buf = require('autocode.ui').find('promote')
local lines = H.scratch_lines('promote')
local row
for i, l in ipairs(lines) do
  if l:match('^%[ %] 1%. ') then
    row = i
  end
end
H.check(row, 'a candidate line: ' .. vim.inspect(lines))
H.check(lines[row]:find('always-pin-pytest', 1, true), 'the skill name is shown')

-- Nothing selected: nothing is applied.
vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
vim.cmd.normal('a')
H.wait_note(5000, 'select candidates with x first', vim.log.levels.WARN)
H.eq(#H.call('autocode.memory.list', { workspace = ws }).memories, 1, 'memory still there')
H.log('ok nothing applied unselected')

vim.api.nvim_win_set_cursor(0, { row, 0 })
vim.cmd.normal('x')
H.check(H.scratch_lines('promote')[row]:match('^%[x%]'), 'candidate selected')
vim.cmd.normal('a')
H.wait_note(30000, '1 team memory promoted to skills')
H.eq(#H.call('autocode.memory.list', { workspace = ws }).memories, 0, 'the memory became a skill')
H.log('ok promoted')
H.done()
