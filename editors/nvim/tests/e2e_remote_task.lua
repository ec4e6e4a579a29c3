-- The whole task flow of e2e_task.lua, against a server that was already
-- listening (a remote container): setup{ remote = ... } with its token file.
-- AUTOCODE_TEST_REMOTE: "tcp=HOST:PORT", "socket=PATH" or "ws=HOST:PORT"; AUTOCODE_TEST_TOKEN_FILE.
local here = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2))
vim.opt.rtp:prepend(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(here, ':p'))))
local kind, where = assert(vim.env.AUTOCODE_TEST_REMOTE):match('^(%w+)=(.+)$')
require('autocode').setup({ remote = { [kind] = where, token_file = assert(vim.env.AUTOCODE_TEST_TOKEN_FILE) } })
assert(type(vim.lsp.config.autocode.cmd) == 'function', 'the config connects instead of spawning')
dofile(vim.fs.joinpath(here, 'e2e_task.lua'))
