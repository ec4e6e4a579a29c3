-- The lualine component `autocode` in real lualine.nvim (AUTOCODE_TEST_LUALINE: its checkout):
-- each window's statusline, as lualine draws it, names that window's repository's task.
-- cwd: a folder with the repositories shop/ and blog/ (each a .git folder and a README.md).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
vim.opt.rtp:append(vim.env.AUTOCODE_TEST_LUALINE)
vim.o.laststatus = 2
require('lualine').setup({
  options = { icons_enabled = false, globalstatus = false, refresh = { statusline = 100 } },
  sections = { lualine_a = {}, lualine_b = {}, lualine_c = { 'filename', 'autocode' }, lualine_x = {}, lualine_y = {}, lualine_z = {} },
  inactive_sections = { lualine_c = { 'filename', 'autocode' }, lualine_x = {} },
})
local tasks = require('autocode.tasks')
vim.cmd.edit('shop/README.md')
local shop = vim.api.nvim_get_current_win()
vim.cmd.split('blog/README.md')
local blog = vim.api.nvim_get_current_win()
for _, name in ipairs({ 'shop', 'blog' }) do
  tasks.remember({
    id = 't-' .. name,
    workspace = vim.fs.joinpath(vim.fn.getcwd(), name),
    state = name == 'shop' and 'IMPLEMENTING' or 'WAITING_FOR_USER',
    revision = 1,
    needs = { kind = name == 'blog' and 'answer_questions' or vim.NIL },
  }, true)
end
local function drawn(win)
  local ok, line = pcall(vim.api.nvim_eval_statusline, vim.wo[win].statusline ~= '' and vim.wo[win].statusline or vim.o.statusline, { winid = win })
  return ok and line.str or ''
end
H.wait(5000, function()
  return drawn(shop):find('AutoCode shop: IMPLEMENTING', 1, true) ~= nil
end, "shop's lualine: " .. drawn(shop))
H.check(drawn(blog):find('AutoCode blog: WAITING_FOR_USER (question: :AutoCode answer)', 1, true), "blog's lualine: " .. drawn(blog))
H.check(not drawn(shop):find('blog', 1, true), "shop's lualine shows only shop: " .. drawn(shop))
H.log('ok lualine component')
H.done()
