-- tmux_init.lua plus a real model in setup{} (scripts/nvim_walkthrough.py's model section):
-- the endpoint from $AUTOCODE_WALKTHROUGH_URL, the key from $OPENAI_API_KEY of Neovim's environment.
dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'tmux_init.lua'))
require('autocode').setup({
  model = {
    provider = 'openai',
    model = 'scripted',
    base_url = vim.env.AUTOCODE_WALKTHROUGH_URL,
    key_env = 'OPENAI_API_KEY',
  },
})
