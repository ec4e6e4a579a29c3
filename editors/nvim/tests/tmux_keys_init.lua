-- Neovim in a terminal (tmux) against the real server, for the typing test of
-- tests/editors/test_nvim_tmux.py: this checkout's plugin, the AutoCode statusline component,
-- the server enabled and notes.txt (written by the test) open. Every key comes from the terminal.
local here = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)))
vim.opt.rtp:prepend(here)
vim.cmd.runtime('plugin/autocode.lua')
vim.o.laststatus = 2
vim.o.statusline = "%t %{%v:lua.require'autocode'.statusline()%}"
vim.lsp.enable('autocode')
vim.cmd.edit('notes.txt')
