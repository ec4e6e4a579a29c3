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
  -- Show the plan (in a split the cursor does not move to) as soon as the server asks for a
  -- review; by default it is announced and opens on :AutoCode review.
  open_plan = false,
  -- The same for the diff of a change waiting for completion approval.
  open_diff = false,
  -- Connect to a server that is already listening instead of starting one:
  -- { tcp = 'HOST:PORT' }, { socket = 'PATH' } or { ws = 'ws://HOST:PORT' }, with token_file = the file the
  -- server printed (see lua/autocode/remote.lua and docs/security.md).
  remote = nil,
  -- The model tasks use, given to every server this Neovim starts or connects to (the key in the
  -- server's memory only; see lua/autocode/model.lua and :help autocode-model):
  -- { provider = 'openai', model = 'gpt-4.1', base_url = 'https://…/v1', engine = nil,
  --   key = function() return … end  or  key_env = 'OPENAI_API_KEY', key_variable = nil,
  --   health_check = false }
  model = nil,
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
  require('autocode.model').validate(opts.model)
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

--- The package to install, and the command that installs it (shown wherever the server is missing).
M.package = 'autocode-lsp'

--- `~` and environment variables expanded, as a shell would (only when the path has them).
--- @param path string
--- @return string
function M.expand(path)
  if path:find('^~') or path:find('%$') then
    return vim.fs.normalize(path, { expand_env = true })
  end
  return path
end

--- The repository checkout this plugin was loaded from (the plugin lives in editors/nvim).
--- @return string
function M.checkout()
  local here = debug.getinfo(1, 'S').source:sub(2)
  return vim.fs.normalize(vim.fn.fnamemodify(here, ':p:h:h:h:h:h'))
end

--- The server the build step installed next to the plugin (editors/nvim/server), if it did.
--- @return string|nil
function M.local_server()
  local plugin = vim.fs.joinpath(M.checkout(), 'editors', 'nvim', 'server')
  for _, exe in ipairs({ 'bin/autocode-lsp', 'Scripts/autocode-lsp.exe' }) do
    local path = vim.fs.joinpath(plugin, exe)
    if vim.fn.executable(path) == 1 then
      return path
    end
  end
  return nil
end

--- The exact command that installs the server, for messages and :checkhealth: first the one
--- that works from this plugin's own checkout (its build step, or pip on the checkout, which
--- holds the server's sources); the package name only when the plugin came without them (the
--- name is not on the package index yet).
--- @return string
function M.install_hint()
  local o = M.options
  local root = M.checkout()
  local has_sources = vim.fn.filereadable(vim.fs.joinpath(root, 'pyproject.toml')) == 1
  local build = vim.fs.joinpath(root, 'editors', 'nvim', 'build.sh')
  if o.python then
    return ('%s -m pip install %s'):format(M.expand(o.python), has_sources and vim.fn.shellescape(root) or M.package)
  end
  if has_sources and vim.fn.filereadable(build) == 1 then
    return ('sh %s  (it installs the server next to the plugin; or: pip install %s)'):format(
      vim.fn.shellescape(build),
      vim.fn.shellescape(root)
    )
  end
  return ('pip install %s'):format(M.package)
end

--- The command that starts the server, as a list.
--- @return string[]|function a command list, or (remote) a function that connects
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
    cmd = { M.local_server() or 'autocode-lsp' }
  end
  cmd[1] = M.expand(cmd[1])
  if o.log_level then
    vim.list_extend(cmd, { '--log-level', o.log_level })
  end
  return cmd
end

--- The table `vim.lsp.config('autocode', ...)` receives (also returned by lsp/autocode.lua).
function M.lsp_config()
  local handlers = require('autocode.handlers')
  return {
    cmd = M.lsp_cmd(),
    root_markers = { { '.autocode', '.git' } },
    -- Opening a file outside any repository does not start a server; an
    -- :AutoCode command there starts one without a folder (global memory).
    workspace_required = true,
    capabilities = {
      experimental = { autocode = protocol.client_capability() },
      window = { workDoneProgress = true },
      workspace = { workspaceFolders = true },
    },
    handlers = handlers.all(),
    on_exit = handlers.on_exit,
    on_init = M.on_init,
    before_init = require('autocode.remote').before_init,
    on_error = require('autocode.remote').on_error,
    -- A missing server is said once, with the install command, instead of
    -- a spawn error for every buffer.
    root_dir = function(bufnr, on_dir)
      local root = vim.fs.root(bufnr, { { '.autocode', '.git' } })
      local ok, resolved = pcall(function()
        return vim.lsp.config.autocode
      end)
      local cmd = ok and resolved and type(resolved.cmd) == 'table' and resolved.cmd or M.cmd()
      local start = root ~= nil and M.server_ready(cmd)
      if start then
        on_dir(root)
      end
      M.checked(bufnr, root, start)
    end,
    -- One server for every repository of this Neovim: a new repository
    -- becomes a workspace folder of the running server.
    reuse_client = M.reuse_client,
  }
end

--- The config's `cmd`: the command list, or, while its executable is missing, a function
--- that starts it (Neovim drops a config whose command list names no executable
--- before `root_dir` could say why; `root_dir` says it and starts nothing).
--- @return string[]|fun(dispatchers: vim.lsp.rpc.Dispatchers): vim.lsp.rpc.PublicClient
function M.lsp_cmd()
  local cmd = M.cmd()
  if type(cmd) ~= 'table' or vim.fn.executable(cmd[1]) == 1 then -- a function: a remote connection
    return cmd
  end
  return function(dispatchers)
    return vim.lsp.rpc.start(M.cmd(), dispatchers)
  end
end

local warned = {}

--- Whether `cmd` can start; says once (per executable) how to install the server when it cannot.
--- @param cmd string[]|function
--- @return boolean
function M.server_ready(cmd)
  if type(cmd) ~= 'table' then
    return true -- a remote server: a refused or missing connection is said by autocode.remote
  end
  local exe = cmd[1]
  if vim.fn.executable(exe) == 1 then
    return true
  end
  if not warned[exe] then
    warned[exe] = true
    vim.schedule(function()
      vim.notify(
        ('AutoCode: the language server %q is not installed or not executable. Install it with: %s'):format(
          exe,
          M.install_hint()
        ),
        vim.log.levels.ERROR
      )
    end)
  end
  return false
end

--- Fires `User AutoCodeBufferChecked` for a buffer whose start the plugin decided: `ev.data` is
--- { buf, root (nil outside a repository), start (false when no server starts for it) }. Scheduled,
--- so it comes after what the decision set going: the install note (server_ready) and the start
--- Neovim schedules once `on_dir` is called.
--- @param buf integer
--- @param root string|nil
--- @param start boolean
function M.checked(buf, root, start)
  vim.schedule(function()
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'AutoCodeBufferChecked',
      modeline = false,
      data = { buf = buf, root = root, start = start },
    })
  end)
end

--- Folders of AutoCode servers that ran in this Neovim (a restarted one gets them all back).
M.served = {}

--- Makes `root` a workspace folder of `client` (workspace/didChangeWorkspaceFolders), once.
--- @param client vim.lsp.Client
--- @param root string
function M.add_folder(client, root)
  local normalized = vim.fs.normalize(root)
  if not vim.tbl_contains(M.served, normalized) then
    table.insert(M.served, normalized)
  end
  local uri = vim.uri_from_fname(root)
  for _, folder in ipairs(client.workspace_folders or {}) do
    if folder.uri == uri then
      return
    end
  end
  local added = { uri = uri, name = root }
  client:notify('workspace/didChangeWorkspaceFolders', { event = { added = { added }, removed = {} } })
  client.workspace_folders = client.workspace_folders or {}
  table.insert(client.workspace_folders, added)
end

--- Reuse the running AutoCode client for another repository, adding it as a workspace folder.
--- @param client vim.lsp.Client
--- @param config vim.lsp.ClientConfig
--- @return boolean
function M.reuse_client(client, config)
  if client.name ~= config.name or client:is_stopped() then
    return false
  end
  if type(config.root_dir) == 'string' then
    M.add_folder(client, config.root_dir)
  end
  return true
end

--- The repositories open in this Neovim: the roots of loaded file buffers and the folders
--- earlier AutoCode servers served, each once.
--- @return string[]
function M.open_repositories()
  local seen, out = {}, {}
  local function add(root)
    root = root and vim.fs.normalize(root)
    if root and not seen[root] and vim.fn.isdirectory(root) == 1 then
      seen[root] = true
      table.insert(out, root)
    end
  end
  for _, root in ipairs(M.served) do
    add(root)
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) ~= '' then
      add(vim.fs.root(buf, { { '.autocode', '.git' } }))
    end
  end
  return out
end

--- on_init: a server started while other repositories are open (after a crash or a restart,
--- from whichever buffer started it) gets every one of them as a workspace folder, and their
--- loaded buffers attached, so a task in any of them goes on without an `:e` there.
--- @param client vim.lsp.Client
function M.on_init(client)
  -- First: a new server holds no model settings and no key, whether it is the first, a restart
  -- after a crash or a new connection; this request goes before any command the person runs.
  require('autocode.model').send(client)
  for _, folder in ipairs(client.workspace_folders or {}) do
    local root = vim.fs.normalize(vim.uri_to_fname(folder.uri))
    if not vim.tbl_contains(M.served, root) then
      table.insert(M.served, root)
    end
  end
  if client.config.reuse_client ~= M.reuse_client then
    return -- a config that wants one server per repository keeps it so
  end
  for _, root in ipairs(M.open_repositories()) do
    M.add_folder(client, root)
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and name ~= '' then
      local root = vim.fs.root(buf, { { '.autocode', '.git' } })
      if root and not vim.lsp.buf_is_attached(buf, client.id) then
        pcall(vim.lsp.buf_attach_client, buf, client.id)
      end
    end
  end
end

return M
