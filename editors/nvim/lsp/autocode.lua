-- The `autocode` server config for Neovim 0.11: vim.lsp.enable('autocode')
-- starts `autocode-lsp` for buffers inside a repository and opts in to the
-- AutoCode protocol extensions (task notifications, questions, plan review).
return require('autocode.config').lsp_config()
