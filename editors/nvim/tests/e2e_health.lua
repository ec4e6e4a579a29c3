-- vim.lsp.enable('autocode') attaches to a file of a repository, the server
-- speaks protocol 1.0 with the opt-in taken, and :checkhealth autocode passes.
-- cwd: a git repository (made by the test).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

local repo = vim.fn.getcwd()
vim.lsp.enable('autocode')
vim.cmd.edit('README.md')
local c = H.client()
H.check(vim.lsp.buf_is_attached(0, c.id), 'client attached to README.md')
H.eq(c.root_dir, repo, 'workspace root is the repository')
local adv = c.server_capabilities.experimental and c.server_capabilities.experimental.autocode
H.check(adv and adv.protocolVersion == '1.0', 'server advertises protocol 1.0: ' .. vim.inspect(adv))
local info = H.call('autocode.protocol.info')
H.eq(info.clientOptedIn, true, 'opt-in taken')
H.eq(info.workspaces, { repo }, 'one workspace folder')
H.log('ok attach')

vim.cmd('checkhealth autocode')
local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local text = table.concat(lines, '\n')
io.stderr:write(text .. '\n')
H.check(not text:find('ERROR', 1, true), 'no ERROR in checkhealth')
H.check(text:find('OK Neovim 0.11', 1, true), 'Neovim version reported')
H.check(text:find('OK protocol version 1.0', 1, true), 'protocol version reported')
H.check(text:find('OK server version', 1, true), 'server version reported')
H.check(text:find('OK learned record: missing', 1, true), 'record status reported')
H.check(
  text:find('OK memories live in ' .. vim.env.XDG_DATA_HOME, 1, true),
  'memory location reported (under XDG_DATA_HOME)'
)
-- No model in setup{}: the Model section says the fixture runs and how to set a real model, and
-- (sending no request of its own) how to check one.
H.check(text:find('WARNING the fixture provider runs', 1, true), 'the fixture provider is named')
H.check(text:find('no provider check yet: :AutoCode model check', 1, true), 'the check is offered')
H.log('ok checkhealth')
vim.cmd('AutoCode model')
H.wait(30000, function()
  return H.scratch_lines('model') ~= nil
end, 'the model buffer')
local page = table.concat(H.scratch_lines('model'), '\n')
H.check(page:find('provider%s+fixture%s+from built%-in default'), 'the fixture and its origin:\n' .. page)
H.check(page:find("setup{ model = { provider = 'openai'", 1, true), 'how to set a real model:\n' .. page)
H.log('ok model without setup')
H.done()
