-- AutoCode for Neovim: setup{}, the statusline function and the public Lua API.
local M = {}

--- Configures the plugin and enables the `autocode` LSP config.
--- @param opts {command?: string|string[], python?: string, log_level?: string, timeout_ms?: integer, open_plan?: boolean, model?: table, enable?: boolean}|nil
function M.setup(opts)
  opts = vim.deepcopy(opts or {})
  local enable = opts.enable
  opts.enable = nil
  local config = require('autocode.config')
  local had = config.options.model
  config.set(opts)
  -- Called again while servers run: they get the new model settings at once (and drop a key
  -- that is no longer given).
  require('autocode.model').resend(had ~= nil, had ~= nil and (had.key ~= nil or had.key_env ~= nil))
  if not vim.g.loaded_autocode then
    -- Put on 'runtimepath' after start-up (lazy.nvim's config hook): the plugin
    -- file that defines :AutoCode was not sourced by Neovim, so source it now.
    vim.cmd.runtime('plugin/autocode.lua')
  end
  local lsp = config.lsp_config()
  vim.lsp.config('autocode', { cmd = lsp.cmd })
  if enable ~= false then
    vim.lsp.enable('autocode')
  end
end

--- Statusline text of a window ('' when idle): the task of the window's repository, with the
--- repository's name, what it waits for and its server's progress. In 'statusline':
--- %{%v:lua.require'autocode'.statusline()%} (each window gets its own repository's task).
--- @param winid integer|nil default: the window being drawn
function M.statusline(winid)
  return require('autocode.statusline').text(winid)
end

--- Calls an AutoCode server command; `cb(err, result)`.
function M.call(command, args, cb)
  return require('autocode.client').call(command, args, cb)
end

--- Calls an AutoCode server command and waits for it; returns err, result.
function M.call_sync(command, args, timeout_ms)
  return require('autocode.client').call_sync(command, args, timeout_ms)
end

--- Runs :AutoCode with the given words.
function M.command(fargs)
  return require('autocode.commands').run(fargs)
end

return M
