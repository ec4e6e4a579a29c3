-- Neovim in a terminal (tmux) for tests/editors/test_nvim_tmux.py: this checkout's plugin, a
-- statusline with the AutoCode component, and functions the test calls with a short `:lua`
-- (a long typed command line would itself end at a hit-enter prompt). Each changes tasks the
-- way a server's notification does: from a timer, after the typed command has finished.
local here = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)))
vim.opt.rtp:prepend(here)
vim.cmd.runtime('plugin/autocode.lua')
vim.o.laststatus = 2
vim.o.statusline = "%t %{%v:lua.require'autocode'.statusline()%}"
local tasks = require('autocode.tasks')

local function later(fn)
  vim.defer_fn(fn, 200)
end

--- A task of repository `dir` (relative to the cwd) changes to `state`.
function _G.task(dir, state, kind, rev)
  later(function()
    tasks.remember({
      id = 't-' .. dir,
      workspace = vim.fs.joinpath(vim.fn.getcwd(), dir),
      state = state,
      revision = rev or 1,
      needs = { kind = kind or vim.NIL },
    })
  end)
end

--- A task fails with a long message (its error names the output file).
function _G.fail()
  later(function()
    tasks.remember({
      id = 't-long',
      workspace = vim.fn.getcwd(),
      state = 'FAILED',
      revision = 1,
      needs = { kind = vim.NIL },
      error = {
        kind = 'testsFailed',
        message = '1 test fails with the change: tests/test_pricing.py::test_total_with_tax_applies_the_rate;'
          .. ' the output is in .autocode/runs/t-long/evidence/test-output.txt',
      },
    })
  end)
end

-- AUTOCODE_TEST_EXITS: a file that gets one JSON line per AutoCodeServerExit, with v:scrollstart
-- as it is then. The event comes after everything the plugin and Neovim say of a server's end,
-- so an empty v:scrollstart (cleared by the test beforehand) means no message scrolled the
-- screen: nothing of that end stops at a "Press ENTER" prompt.
if vim.env.AUTOCODE_TEST_EXITS then
  vim.api.nvim_create_autocmd('User', {
    pattern = 'AutoCodeServerExit',
    callback = function(ev)
      local line = vim.json.encode({ scrollstart = vim.v.scrollstart, message = ev.data.message or vim.NIL })
      local fd = assert(io.open(vim.env.AUTOCODE_TEST_EXITS, 'a'))
      fd:write(line .. '\n')
      fd:close()
    end,
  })
end
