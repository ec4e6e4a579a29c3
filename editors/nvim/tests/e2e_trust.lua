-- :AutoCode start in a repository whose committed settings name a model endpoint
-- and a key variable: the one prompt names both; "No" starts nothing and trusts
-- nothing, "Yes" records trust for exactly those values and starts the task.
-- cwd: a git repository whose .autocode/config.toml sets base_url and api_key_env.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))

local repo = vim.fn.getcwd()
local trust_dir = vim.env.XDG_STATE_HOME .. '/autocode/trust'
local url = vim.env.AUTOCODE_TEST_URL
local brief = 'Add total_with_tax to shop.pricing; apply patches/add-tax.patch'
H.record_calls()

local function trust_records()
  return vim.fn.glob(trust_dir .. '/*', false, true)
end

-- Declined: the prompt names the variable and the URL; nothing is trusted or started.
H.script_ui({}, { 'No' })
vim.cmd('AutoCode start ' .. brief)
H.wait_note(30000, 'not trusted: nothing was started')
H.eq(#H.prompts, 1, 'one prompt')
local prompt = H.prompts[1].prompt
H.check(prompt:find('send the variable GITHUB_TOKEN to ' .. url, 1, true), 'the prompt names the variable and the URL: ' .. prompt)
H.eq(H.prompts[1].items, { require('autocode.trust').yes_label, 'No' }, 'an explicit yes is needed')
H.eq(#H.sent('autocode.project.trust'), 0, 'no trust command sent after No')
H.eq(#H.sent('autocode.task.start'), 1, 'start was not retried')
H.eq(trust_records(), {}, 'no trust record')
H.check(not vim.uv.fs_stat(repo .. '/.autocode/runs'), 'no task run was made')
H.check(require('autocode.tasks').current == nil, 'no task is current')
H.log('ok declined')

-- Yes: trust is recorded for the digest shown, then the start is sent once more and succeeds.
H.script_ui({}, { require('autocode.trust').yes_label })
vim.cmd('AutoCode start ' .. brief)
H.wait_note(30000, "trusted this repository's values")
H.wait(30000, function()
  return require('autocode.tasks').current ~= nil
end, 'the task to start')
local trusted = H.sent('autocode.project.trust')
H.eq(#trusted, 1, 'one trust command')
H.eq(trusted[1].args.confirm, true, 'trust confirmed')
H.check(type(trusted[1].args.digest) == 'string' and trusted[1].args.digest ~= '', 'the digest shown is sent')
H.eq(#H.sent('autocode.task.start'), 3, 'start sent, then retried once')
H.eq(#trust_records(), 1, 'one trust record')
H.log('ok trusted and started')

-- :AutoCode trust now says the values are trusted, and asks nothing.
local function trust_prompts()
  return #vim.tbl_filter(function(p)
    return p.prompt:find('Trust exactly these values', 1, true) ~= nil
  end, H.prompts)
end
H.eq(trust_prompts(), 2, 'one trust prompt per start')
vim.cmd('AutoCode trust')
H.wait_note(30000, 'already trusted')
H.eq(trust_prompts(), 2, 'no prompt for values already trusted')
H.log('ok trust on demand')
H.done()
