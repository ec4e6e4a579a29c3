-- setup{python = ..., log_level = ...} starts the real server as
-- `python -m autocode_lsp --log-level debug`, and the server takes the flag.
-- cwd: a repository. AUTOCODE_TEST_PYTHON: an interpreter with AutoCode.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local python = assert(vim.env.AUTOCODE_TEST_PYTHON, 'AUTOCODE_TEST_PYTHON is set by the test')
require('autocode').setup({ python = python, log_level = 'debug' })
H.eq(vim.lsp.config.autocode.cmd, { python, '-m', 'autocode_lsp', '--log-level', 'debug' }, 'cmd from setup')
vim.cmd.edit('README.md')
local c = H.client()
H.eq(c.config.cmd, { python, '-m', 'autocode_lsp', '--log-level', 'debug' }, 'the client runs that command')
H.call('autocode.protocol.info')
H.log('ok python and log level')
H.done()
