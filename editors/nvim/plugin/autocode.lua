-- :AutoCode, its <Plug> maps, the progress listener and the highlight of the plugin; loaded once.
if vim.g.loaded_autocode then
  return
end
vim.g.loaded_autocode = true

if vim.fn.has('nvim-0.11') ~= 1 then
  vim.notify('AutoCode needs Neovim 0.11 or newer', vim.log.levels.ERROR)
  return
end

vim.api.nvim_create_user_command('AutoCode', function(cmd)
  require('autocode.commands').run(cmd.fargs)
end, {
  nargs = '*',
  desc = 'AutoCode tasks, memory and project commands',
  complete = function(arglead, cmdline, pos)
    return require('autocode.commands').complete(arglead, cmdline, pos)
  end,
})

-- Keys a person may map (nothing is mapped for them): each runs one :AutoCode command.
for plug, words in pairs({
  ['<Plug>(AutoCodeAnswer)'] = { 'answer' },
  ['<Plug>(AutoCodeReview)'] = { 'review' },
  ['<Plug>(AutoCodeStatus)'] = { 'status' },
  ['<Plug>(AutoCodeTasks)'] = { 'tasks' },
  ['<Plug>(AutoCodeStart)'] = { 'start' },
}) do
  vim.keymap.set('n', plug, function()
    require('autocode.commands').run(words)
  end, { desc = 'AutoCode ' .. words[1] })
end

local group = vim.api.nvim_create_augroup('autocode', { clear = true })
vim.api.nvim_create_autocmd('LspProgress', {
  group = group,
  callback = function(ev)
    require('autocode.handlers').on_progress(ev)
  end,
})
