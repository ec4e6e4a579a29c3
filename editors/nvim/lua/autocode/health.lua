-- :checkhealth autocode: Neovim version, the server and its version, the
-- protocol version, the workspace's learned record and where memories live.
local M = {}

local function field(t, ...)
  for _, k in ipairs({ ... }) do
    if type(t) == 'table' and t[k] ~= nil and t[k] ~= vim.NIL then
      return t[k]
    end
  end
end

--- Finds a value by key anywhere in a nested table (first match, breadth first).
local function find(t, names)
  local queue = { t }
  while #queue > 0 do
    local cur = table.remove(queue, 1)
    if type(cur) == 'table' then
      for _, n in ipairs(names) do
        if cur[n] ~= nil and cur[n] ~= vim.NIL then
          return cur[n]
        end
      end
      for _, v in pairs(cur) do
        if type(v) == 'table' then
          table.insert(queue, v)
        end
      end
    end
  end
end

function M.check()
  local health = vim.health
  local client = require('autocode.client')
  local config = require('autocode.config')

  health.start('Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. version)
  else
    health.error('Neovim ' .. version .. ' is too old', { 'Install Neovim 0.11 or newer.' })
    return
  end

  health.start('AutoCode language server')
  local cfg = client.resolved_config()
  local cmd = type(cfg.cmd) == 'table' and cfg.cmd or config.cmd()
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    health.error(('%q is not an executable on PATH'):format(cmd[1]), {
      'Install AutoCode into a Python environment: pip install autocode',
      "Or point the plugin at it: require('autocode').setup{ command = { '/path/to/autocode-lsp' } }",
    })
    return
  end
  health.ok(('server command: %s (%s)'):format(table.concat(cmd, ' '), exe))
  if not vim.lsp.is_enabled('autocode') then
    health.info("the autocode config is not enabled: call vim.lsp.enable('autocode') or require('autocode').setup{}")
  end

  local c, err = client.ensure()
  if not c then
    health.error(err)
    return
  end
  local ierr, info = client.call_sync(require('autocode.protocol').commands.protocol_info, {}, config.options.timeout_ms, c)
  if ierr then
    health.error('the server did not answer autocode.protocol.info: ' .. client.describe(ierr), {
      'See :LspLog and the server log file.',
    })
    return
  end
  health.ok('server version ' .. tostring(field(info, 'serverVersion', 'server_version', 'version') or '?'))
  health.ok('protocol version ' .. tostring(field(info, 'protocolVersion', 'protocol_version') or '?'))
  local caps = c.server_capabilities or {}
  if not (caps.experimental and caps.experimental.autocode) then
    health.warn('the server did not advertise experimental.autocode; questions and plan review arrive as plain LSP messages')
  end

  health.start('Workspace')
  local root = client.workspace_for()
  if not root then
    health.info('no workspace folder: memory is global only, and task commands need a folder (open a file inside a git repository)')
  else
    health.ok('workspace folder ' .. root)
  end
  local derr, doctor = client.call_sync(require('autocode.protocol').commands.doctor, root and { workspace = root } or {}, config.options.timeout_ms, c)
  if derr then
    health.error('autocode.doctor failed: ' .. client.describe(derr))
    return
  end
  if root then
    local status = find(doctor, { 'recordStatus', 'record_status' })
    if status == nil then
      local record = find(doctor, { 'record' })
      status = type(record) == 'table' and field(record, 'status') or record
    end
    status = tostring(status or 'unknown')
    if status == 'valid' or status == 'missing' then
      health.ok('learned record: ' .. status)
    else
      health.warn('learned record: ' .. status, { 'Run :AutoCode doctor for details; :AutoCode forget removes it.' })
    end
  end
  local where = find(doctor, { 'memoryLocation', 'memory_location', 'location', 'path', 'store' })
  if where then
    health.ok('memories live in ' .. tostring(type(where) == 'table' and vim.inspect(where) or where))
  else
    health.info('memory location not reported by the server')
  end
end

return M
