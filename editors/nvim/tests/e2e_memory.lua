-- Memory from Neovim against the real server: a refused save is shown to the
-- person with its reason, a good save, search, delete. cwd: a repository.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

H.client_started = require('autocode.client').ensure()
H.client()

-- Tied to one task and commit: refused, and the person sees why.
vim.cmd('AutoCode memory save Task T-28 failed because commit 3f2a9c1d broke the billing check')
local n = H.wait_note(30000, 'memory not saved', vim.log.levels.WARN)
H.log('refusal shown: ' .. n.msg)
local before = H.call('autocode.memory.list', { workspace = vim.fn.getcwd() })
H.eq(#before.memories, 0, 'nothing stored by the refused save')
H.log('ok refused')

H.notes = {}
local FACT = "This repository's tests need TEST_DATABASE_URL set; without it they fail with connection refused"
vim.cmd('AutoCode memory save --scope=project ' .. FACT)
H.wait_note(30000, 'saved (project)')
H.log('ok saved')

-- The same fact again is not stored twice, and the person is told.
H.notes = {}
vim.cmd('AutoCode memory save --scope=project ' .. FACT)
n = H.wait_note(30000, 'memory not saved', vim.log.levels.WARN)
H.log('duplicate shown: ' .. n.msg)
H.eq(#H.call('autocode.memory.list', { workspace = vim.fn.getcwd() }).memories, 1, 'one memory after the duplicate')
H.log('ok duplicate')

vim.cmd('AutoCode memory search TEST_DATABASE_URL')
local id
H.wait(30000, function()
  for _, l in ipairs(H.scratch_lines('memory') or {}) do
    if l:find('TEST_DATABASE_URL', 1, true) and l:match('^%- %[') then
      id = l:match('^%- %[([^%]]+)%]')
      return true
    end
  end
  return false
end, 'the memory in the search buffer')
H.check(id, 'search line carries the id')
H.log('ok found ' .. id)

H.notes = {}
vim.cmd('AutoCode memory delete ' .. id)
H.wait_note(30000, ('memory %s deleted'):format(id))
local after = H.call('autocode.memory.search', { query = 'TEST_DATABASE_URL', workspace = vim.fn.getcwd() })
H.eq(#after.memories, 0, 'gone after delete')
H.notes = {}
vim.cmd('AutoCode memory delete ' .. id)
H.wait_note(30000, 'memory delete failed', vim.log.levels.ERROR)
H.log('ok deleted')
H.done()
