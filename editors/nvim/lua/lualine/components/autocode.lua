-- The lualine component `autocode` (sections = { lualine_x = { 'autocode' } }): the task of
-- the window's repository, as require('autocode').statusline() says it.
local Component = require('lualine.component'):extend()

function Component:update_status()
  return require('autocode.statusline').text(vim.g.statusline_winid)
end

return Component
