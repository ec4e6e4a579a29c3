-- :AutoCode forget asks first: "No" keeps the learned record, the server
-- refuses a forget without confirm, and "Yes" removes the record only.
-- cwd: a git repository with .autocode/project.json and .autocode/config.toml.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

local repo = vim.fn.getcwd()
local record = repo .. '/.autocode/project.json'
local settings = repo .. '/.autocode/config.toml'
H.check(vim.uv.fs_stat(record), 'the test made a record')

-- Declined: nothing is sent, the record stays.
H.script_ui({}, { 'No' })
vim.cmd('AutoCode forget')
H.wait_note(20000, 'forget cancelled; the learned record was kept')
H.check(H.prompts[1] and H.prompts[1].prompt:find('project.json', 1, true), 'the prompt names the file')
H.check(vim.uv.fs_stat(record), 'record kept after No')
H.log('ok declined')

-- The server itself refuses a forget without confirmation.
local err = require('autocode.client').call_sync('autocode.project.forget', { workspace = repo }, 20000)
H.eq(err and err.code, -32803, 'forget without confirm fails')
H.eq(require('autocode.client').kind(err), 'confirmationRequired', 'error kind')
H.check(vim.uv.fs_stat(record), 'record kept after an unconfirmed forget')
H.log('ok refused without confirm')

-- Confirmed: the record goes, explicit settings stay.
H.script_ui({}, { 'Yes, forget it' })
vim.cmd('AutoCode forget')
H.wait_note(20000, 'the learned record was removed')
H.check(not vim.uv.fs_stat(record), 'record removed')
H.check(vim.uv.fs_stat(settings), 'config.toml kept')
H.log('ok forgotten')
H.done()
