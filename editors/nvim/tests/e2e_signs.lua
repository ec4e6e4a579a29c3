-- Signs on the buffers a waiting task concerns (autocode.signs): the question's and
-- the plan's on every buffer of the repository, the change's only on the files it
-- touches; each goes once the task moves on, and none is left after the apply.
-- cwd: fixtures/samples "pytest" (declares patches/add-tax.patch).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local tasks = require('autocode.tasks')
local signs = require('autocode.signs')
H.strict = true
local ANSWER = 'Name each test after the behaviour it checks'
local TYPE = require('autocode.questions').TYPE
H.script_ui(function()
  return ANSWER
end, function(_, items)
  return vim.tbl_contains(items, 'Yes') and 'Yes' or TYPE
end)

local function sign(buf)
  local s = signs.at(buf)
  return s and s.text
end

vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
local readme = vim.api.nvim_get_current_buf()
vim.cmd.edit('shop/pricing.py')
local pricing = vim.api.nvim_get_current_buf()
H.client()

vim.cmd('AutoCode start Add total_with_tax to shop.pricing; apply patches/add-tax.patch')
H.wait(60000, function()
  return sign(readme) == 'A?' and sign(pricing) == 'A?'
end, 'the question sign on both buffers')
local id = tasks.current
H.check(signs.at(readme).says:find(id, 1, true) and signs.at(readme).says:find(':AutoCode answer', 1, true), 'b:autocode_waiting says what waits: ' .. tostring(signs.at(readme).says))
H.eq(#vim.api.nvim_buf_get_extmarks(readme, signs.ns, 0, -1, {}), 1, 'one sign per buffer')
H.log('ok question sign')

vim.cmd('AutoCode answer')
H.wait(60000, function()
  return sign(readme) == 'AP' and sign(pricing) == 'AP'
end, 'the plan sign in place of the question sign')
H.log('ok plan sign')

vim.cmd('AutoCode approve')
H.wait(180000, function()
  return sign(pricing) == 'AC'
end, 'the change sign on shop/pricing.py')
H.eq(sign(readme), nil, 'README.md is not part of the change: no sign')
H.log('ok change sign')

vim.cmd('AutoCode apply')
H.wait(120000, function()
  local s = tasks.snapshots[id]
  return s and s.done == true
end, 'the task to end')
H.eq(tasks.snapshots[id].state, 'COMPLETED', 'task completed')
H.eq({ sign(readme), sign(pricing), vim.b[pricing].autocode_waiting }, { nil, nil, nil }, 'no sign once nothing waits')
H.log('ok signs gone')
H.done()
