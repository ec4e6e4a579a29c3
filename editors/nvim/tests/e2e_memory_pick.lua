-- `:AutoCode memory delete` without an id, in Neovim's own picker (nothing stubbed): `1<CR>`
-- picks the memory and then asks; Enter alone keeps it, `y` deletes it.
-- Run with `nvim -S` (keys typed into the main loop). cwd: a repository.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
H.check(debug.getinfo(vim.ui.select, 'S').source:find('/vim/ui.lua', 1, true), "vim.ui.select is Neovim's own")
local FACT = "This repository's tests need TEST_DATABASE_URL set; without it they fail with connection refused"

-- A raw libuv timer types `1<CR>` once the picker (inputlist(), which holds the main loop) is up.
local pick_when_prompted = false
local typist = assert(vim.uv.new_timer())
typist:start(50, 50, function()
  if pick_when_prompted and vim.api.nvim_get_mode().mode == 'c' then
    pick_when_prompted = false
    vim.api.nvim_input('1<CR>')
  end
end)

-- The command line that runs `:AutoCode memory delete` is in mode 'c' too, and keys typed then
-- would run in normal mode before the picker opens (it opens on the server's answer): the typist
-- is armed only once that command line is left.
local arm_when_left = false
vim.api.nvim_create_autocmd('CmdlineLeave', {
  pattern = ':',
  callback = function()
    if arm_when_left then
      arm_when_left = false
      pick_when_prompted = true
    end
  end,
})

local function count()
  local err, r = require('autocode.client').await('autocode.memory.list', { workspace = vim.fn.getcwd() })
  H.check(not err, vim.inspect(err))
  return #r.memories
end

local function pick_then(answer)
  arm_when_left = true
  vim.api.nvim_input(':AutoCode memory delete<CR>')
  H.until_(30000, function()
    return not pick_when_prompted and vim.api.nvim_get_mode().mode == 'c' and vim.fn.getcmdtype() == '@'
  end, 'the confirmation after the pick')
  vim.api.nvim_input(answer)
  H.until_(10000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end, 'the confirmation to close')
end

H.async(function()
  require('autocode.client').ensure()
  H.until_(20000, function()
    local c = vim.lsp.get_clients({ name = 'autocode' })[1]
    return c ~= nil and c.initialized == true
  end, 'the client')
  local err = require('autocode.client').await('autocode.memory.save', { content = FACT, scope = 'project', workspace = vim.fn.getcwd() })
  H.check(not err, vim.inspect(err))
  H.eq(count(), 1, 'one memory')

  pick_then('<CR>')
  H.until_(10000, function()
    return H.note('was kept') ~= nil
  end, 'the keep to be said')
  H.eq(count(), 1, '1<CR> then Enter alone deleted nothing')
  H.log('ok picked and kept')

  pick_then('y<CR>')
  H.until_(30000, function()
    return H.note('deleted') ~= nil
  end, 'the delete')
  H.eq(count(), 0, 'deleted after y')
  H.log('ok deleted after yes')
  typist:stop()
  typist:close()
  H.done()
end)
