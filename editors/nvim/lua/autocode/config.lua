-- The plugin's options (setup{}) and the Neovim LSP config derived from them.
local protocol = require('autocode.protocol')

local M = {}

M.defaults = {
  -- The server command: a list, or a string naming an executable.
  command = nil,
  -- A Python interpreter with AutoCode installed; used as `python -m autocode_lsp`
  -- when `command` is not given.
  python = nil,
  -- The server's log level ("debug", "info", "warning" or "error"), passed as
  -- --log-level; nil leaves the server's default.
  log_level = nil,
  -- Milliseconds a blocking call (health check, :AutoCode status in scripts) waits.
  timeout_ms = 15000,
  -- Open the plan buffer automatically when the server asks for a review.
  open_plan = true,
  -- Open the diff buffer when a task waits for completion approval.
  open_diff = true,
  -- Connect to a server that is already listening instead of starting one:
  -- { tcp = 'HOST:PORT' } or { socket = 'PATH' }, with token_file = the file the
  -- server printed (see lua/autocode/remote.lua and docs/security.md).
  remote = nil,
}

M.options = vim.deepcopy(M.defaults)

local levels = { debug = true, info = true, warning = true, error = true }

--- Validates and stores options; returns the merged options.
--- @param opts table|nil
function M.set(opts)
  opts = opts or {}
  vim.validate('command', opts.command, { 'string', 'table' }, true)
  vim.validate('python', opts.python, 'string', true)
  vim.validate('log_level', opts.log_level, 'string', true)
  vim.validate('timeout_ms', opts.timeout_ms, 'number', true)
  require('autocode.remote').validate(opts.remote)
  if opts.log_level and not levels[opts.log_level] then
    error(
      ('autocode: log_level must be one of debug, info, warning, error (got %q)'):format(
        opts.log_level
      ),
      0
    )
  end
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  return M.options
end

--- The command that starts the server, as a list.
--- @return string[]
function M.cmd()
  local o = M.options
  if o.remote then
    return require('autocode.remote').cmd(o.remote)
  end
  local cmd
  if type(o.command) == 'table' then
    cmd = vim.deepcopy(o.command)
  elseif type(o.command) == 'string' then
    cmd = { o.command }
  elseif o.python then
    cmd = { o.python, '-m', 'autocode_lsp' }
  else
    cmd = { 'autocode-lsp' }
  end
  if o.log_level then
    vim.list_extend(cmd, { '--log-level', o.log_level })
  end
  return cmd
end

--- The table `vim.lsp.config('autocode', ...)` receives (also returned by lsp/autocode.lua).
function M.lsp_config()
  local handlers = require('autocode.handlers')
  return {
    cmd = M.cmd(),
    root_markers = { { '.autocode', '.git' } },
    -- Opening a file outside any repository does not start a server; an
    -- :AutoCode command there starts one without a folder (global memory).
    workspace_required = true,
    capabilities = {
      experimental = { autocode = protocol.client_capability() },
      window = { workDoneProgress = true },
    },
    handlers = handlers.all(),
    on_exit = handlers.on_exit,
    before_init = require('autocode.remote').before_init,
    on_error = require('autocode.remote').on_error,
  }
end

return M
