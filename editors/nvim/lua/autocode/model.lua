-- A real model from Neovim: setup{ model = { ... } } hands the provider, model, base URL, engine
-- and the provider's key to every AutoCode server this Neovim starts or connects to, through
-- `autocode.session.configure` (the command VS Code uses for its settings and SecretStorage key).
-- The server keeps the key in its memory only; this plugin reads it (from a function or an
-- environment variable) at the moment it is sent and keeps no copy, writes it to no file and
-- never puts it in a message. :AutoCode key asks for a key at run time instead (inputsecret), kept
-- in this module's memory only so later servers get it too. Also :AutoCode model (what is set and
-- where each value came from) and :AutoCode model check (the server's `autocode.provider.check`,
-- doctor's --check-provider).
local protocol = require('autocode.protocol')

local field = require('autocode.util').field

local M = {}

--- setup{ model = ... } names of the settings, and the configure argument each becomes.
M.settings = { { 'provider', 'provider' }, { 'model', 'model' }, { 'base_url', 'baseUrl' }, { 'engine', 'engine' } }

--- The variables a key may be held under on the server (as the server's own check says).
local function key_variable(name)
  return type(name) == 'string'
    and #name <= 64
    and name:match('^[A-Z][A-Z0-9_]*$') ~= nil
    and (name:sub(-4) == '_KEY' or name:sub(-6) == '_TOKEN')
end

--- Validates the `model` option; raises a message naming what to fix.
--- @param model table|nil
function M.validate(model)
  if model == nil then
    return
  end
  vim.validate('model', model, 'table')
  for _, pair in ipairs(M.settings) do
    vim.validate('model.' .. pair[1], model[pair[1]], 'string', true)
  end
  vim.validate('model.key', model.key, 'function', true)
  vim.validate('model.key_env', model.key_env, 'string', true)
  vim.validate('model.key_variable', model.key_variable, 'string', true)
  vim.validate('model.health_check', model.health_check, 'boolean', true)
  if model.key and model.key_env then
    error('autocode: give model.key (a function returning the key) or model.key_env (a variable name), not both', 0)
  end
  if model.key_variable and not key_variable(model.key_variable) then
    error(
      ('autocode: model.key_variable must name a key variable in capitals ending in _KEY or _TOKEN, such as OPENAI_API_KEY (got %q)'):format(
        model.key_variable
      ),
      0
    )
  end
  for name in pairs(model) do
    local known = name == 'key' or name == 'key_env' or name == 'key_variable' or name == 'health_check'
    for _, pair in ipairs(M.settings) do
      known = known or name == pair[1]
    end
    if not known then
      error(
        ('autocode: model.%s is not an option; model takes provider, model, base_url, engine, key, key_env, key_variable and health_check'):format(
          tostring(name)
        ),
        0
      )
    end
  end
end

local function options()
  return require('autocode.config').options.model or {}
end

-- The key typed at :AutoCode key, held only here (a local, so no table of the plugin holds it) for
-- as long as this Neovim runs, so that a server started later (a restart, a crash, another
-- repository) is given it like a key of setup{}. It wins over setup{ model.key / key_env }.
local typed

--- Whether a key was typed at :AutoCode key (never the key).
function M.key_typed()
  return typed ~= nil
end

--- Where the key comes from, in words (never the key).
--- @return string|nil
function M.key_source(model)
  model = model or options()
  if typed then
    return ":AutoCode key (typed in this Neovim, kept in its memory only)"
  elseif model.key then
    return 'setup{ model.key } (a function, called when a server starts)'
  elseif model.key_env then
    return ("setup{ model.key_env }: $%s of Neovim's environment"):format(model.key_env)
  end
  return nil
end

--- The key as given now, or nil and why not. Read here, at the moment it is sent; never stored.
--- @return string|nil key, string|nil problem
local function read_key(model)
  local value
  if typed then
    return typed, nil
  elseif model.key then
    local ok, got = pcall(model.key)
    if not ok then
      -- The function's error text is not shown: it could hold what the function read.
      return nil, 'the function setup{ model.key } raised an error'
    end
    value = got
  elseif model.key_env then
    value = vim.env[model.key_env]
    if value == nil or value == '' then
      return nil, ("$%s is not set in Neovim's environment (setup{ model.key_env })"):format(model.key_env)
    end
  else
    return nil, nil
  end
  if type(value) ~= 'string' or vim.trim(value) == '' then
    return nil, 'setup{ model.key } returned no key (it must return the key as a string)'
  end
  value = vim.trim(value)
  if value:find('%s') then
    return nil, 'the key from ' .. M.key_source(model) .. ' has spaces or line breaks in it, so it was not sent'
  end
  return value, nil
end

--- The configure arguments for `model` (the settings given, the key when there is one). A model
--- without key options sends no key, so the server reads the key from its own environment;
--- `forget` sends '' to drop a key given before (setup{} called again without one).
--- @return table args, string|nil problem
function M.args(model, forget)
  model = model or options()
  local args = {}
  for _, pair in ipairs(M.settings) do
    local v = model[pair[1]]
    if type(v) == 'string' and vim.trim(v) ~= '' then
      args[pair[2]] = vim.trim(v)
    end
  end
  local key, problem = read_key(model)
  if key then
    args.apiKey = key
    local variable = model.key_variable or (key_variable(model.key_env) and model.key_env) or nil
    if variable then
      args.apiKeyEnv = variable
    end
  elseif forget then
    args.apiKey = ''
  end
  return args, problem
end

--- What each server said after the last configure: client id -> SessionSettings, or {error = message}.
M.last = {}
--- Problems reading the key at the last send, by client id (shown by :AutoCode model and :checkhealth).
M.problems = {}
--- The last provider check of this Neovim, by workspace: {check = table, text = string}.
M.checks = {}

--- Sends the configure request on `client` with the LSP log kept from recording it: Neovim's
--- LSP log writes every request's params at the "debug" level, and this one holds the key.
local function request_quietly(client, params, handler)
  local log = vim.lsp.log
  local level = log.get_level()
  local quiet = level < vim.log.levels.WARN
  if quiet then
    log.set_level(vim.log.levels.WARN)
  end
  local ok, sent = pcall(client.request, client, 'workspace/executeCommand', params, handler)
  if quiet then
    log.set_level(level)
  end
  -- The key no longer lingers in this table (the handler's context keeps a reference to it).
  params.arguments[1].apiKey = nil
  return ok and sent
end

--- Gives `client`'s server the model settings and key (on every start: a new server holds
--- nothing). `on_done(err, result)` is optional. Does nothing when setup{} names no model, unless
--- `forget` (a key given before must be dropped) or `always` (settings given before are cleared).
--- A server reached over the network takes no endpoint and no key from an editor unless it was
--- started with --allow-client-overrides: what it refuses is left out and the rest sent again,
--- and the person is told what was not taken.
--- @param client vim.lsp.Client
--- @param forget boolean|nil
--- @param on_done fun(err: table|nil, result: table|nil)|nil
--- @param always boolean|nil
function M.send(client, forget, on_done, always)
  local model = options()
  if next(model) == nil and not typed and not forget and not always then
    M.last[client.id] = nil
    return false
  end
  local ui = require('autocode.ui')
  local refused = {}
  M.last[client.id] = { pending = true }

  local function finish(err, result)
    if err then
      M.last[client.id] = { error = tostring(err.message or err) }
      ui.error('the server did not take the model settings: ' .. tostring(err.message or err))
    else
      M.last[client.id] = result
      if #refused > 0 then
        M.problems[client.id] = ('this server was reached over the network and takes no %s from an editor: start it with '
          .. '--allow-client-overrides, or set them in its own settings and environment; the rest was given'):format(
          table.concat(refused, ' or ')
        )
        ui.warn(M.problems[client.id])
      end
      local ignored = field(result, 'ignored') or {}
      if #ignored > 0 then
        ui.warn(('this server does not know the settings %s; update AutoCode to use them'):format(table.concat(ignored, ', ')))
      end
    end
    if on_done then
      on_done(err, result)
    end
  end

  local function attempt(first)
    local args, problem = M.args(model, forget)
    if first then
      M.problems[client.id] = problem
      if problem then
        vim.schedule(function()
          ui.warn(problem .. "; tasks use the key variable of the server's own environment")
        end)
      end
    end
    for _, name in ipairs(refused) do
      args[name] = nil
      if name == 'apiKey' then
        args.apiKeyEnv = nil
      end
    end
    local params = { command = protocol.commands.session_configure, arguments = { next(args) and args or vim.empty_dict() } }
    local sent = request_quietly(client, params, function(err, result)
      local data = type(err) == 'table' and type(err.data) == 'table' and err.data or {}
      if data.kind == 'clientOverrideRefused' and type(data.field) == 'string' and not vim.tbl_contains(refused, data.field) and #refused < 4 then
        table.insert(refused, data.field)
        attempt(false)
      else
        finish(err, result)
      end
    end)
    if not sent then
      finish({ message = 'the server stopped before it got the model settings' }, nil)
    end
    return sent
  end
  return attempt(true)
end

--- Sends the settings to every running AutoCode server (setup{} called again).
--- @param had_model boolean setup{} named a model before (its settings are replaced, even by none)
--- @param had_key boolean a key given before is dropped when the new options have none
function M.resend(had_model, had_key)
  for _, c in ipairs(vim.lsp.get_clients({ name = 'autocode' })) do
    if c.initialized and not c:is_stopped() then
      M.send(c, had_key, nil, had_model)
    end
  end
end

-- :AutoCode key -------------------------------------------------------------

--- The running AutoCode servers.
local function running()
  return vim.tbl_filter(function(c)
    return c.initialized and not c:is_stopped()
  end, vim.lsp.get_clients({ name = 'autocode' }))
end

--- :AutoCode key: asks for the model's key with inputsecret() (each character shown as `*`,
--- nothing put in a history, so nothing reaches the ShaDa file), keeps it in this Neovim's memory
--- and gives it to every running server with the configure request setup{} uses. An empty
--- answer (or <Esc>, CTRL-C) changes nothing.
function M.prompt_key()
  local ui = require('autocode.ui')
  local ok, answer = pcall(vim.fn.inputsecret, 'Model key for AutoCode (not shown; kept in memory only): ')
  -- The prompt and its stars leave the command line before anything is said.
  vim.cmd.redraw()
  local key = ok and type(answer) == 'string' and vim.trim(answer) or ''
  answer = nil
  if key == '' then
    ui.notify('no key typed: nothing changed')
    return
  end
  if key:find('%s') then
    ui.error('the key typed has spaces or line breaks in it, so it was not kept (:AutoCode key to type it again)')
    return
  end
  typed = key
  key = nil
  local clients = running()
  if #clients == 0 then
    ui.notify('key kept in memory: the AutoCode server gets it when it starts')
    return
  end
  local left, held, failed = #clients, {}, 0
  for _, c in ipairs(clients) do
    M.send(c, false, function(err, result)
      left = left - 1
      if not err and field(result, 'apiKeySet') then
        held[tostring(field(result, 'apiKeyEnv'))] = true
      else
        failed = failed + 1
      end
      if left == 0 and next(held) then
        ui.notify(('key typed: held by %s (in memory only) as %s; :AutoCode model check tries it'):format(
          #clients - failed == 1 and 'the server' or ((#clients - failed) .. ' servers'),
          table.concat(vim.tbl_keys(held), ', ')
        ))
      end
    end, true)
  end
end

-- :AutoCode model -----------------------------------------------------------

local ORIGINS = {
  flag = 'setup{ model } (this Neovim)',
  default = 'built-in default',
}

local LABELS = { provider = 'provider', model = 'model', base_url = 'base URL', engine = 'engine', api_key_env = 'key variable' }

local function shown(v)
  if v == nil or v == vim.NIL then
    return '(unset)'
  end
  return tostring(v)
end

--- The lines of :AutoCode model: each setting with its value and origin (from doctor, which
--- resolves them as a task would, the settings from setup{} included), and the key's source.
--- @param report table doctor's report
--- @param held table|nil what the server said after configure
function M.render(report, held, problem, workspace)
  local settings = field(report, 'settings') or {}
  local out = { '# AutoCode: model', '' }
  if workspace then
    table.insert(out, 'Workspace: ' .. workspace)
    table.insert(out, '')
  end
  local rows = {}
  for _, name in ipairs({ 'provider', 'model', 'base_url', 'engine', 'api_key_env' }) do
    local item = settings[name] or {}
    local origin = tostring(field(item, 'origin') or 'unknown')
    local source = field(item, 'source')
    local from = ORIGINS[origin] or (source and ('%s (%s)'):format(origin, tostring(source)) or origin)
    table.insert(rows, { LABELS[name], shown(field(item, 'value')), from })
  end
  local w1, w2 = 0, 0
  for _, r in ipairs(rows) do
    w1 = math.max(w1, #r[1])
    w2 = math.max(w2, math.min(48, vim.fn.strdisplaywidth(r[2])))
  end
  for _, r in ipairs(rows) do
    table.insert(out, ('%s  %s  from %s'):format(r[1] .. (' '):rep(w1 - #r[1]), r[2] .. (' '):rep(math.max(0, w2 - vim.fn.strdisplaywidth(r[2]))), r[3]))
  end
  table.insert(out, '')
  local source = M.key_source()
  if held and held.error then
    table.insert(out, 'Key: the server did not take the settings: ' .. held.error)
  elseif held and held.pending then
    table.insert(out, 'Key: being sent to the server')
  elseif held and field(held, 'apiKeySet') then
    table.insert(out, ('Key: from %s; held by the server (in memory only) as %s'):format(source or 'setup{}', tostring(field(held, 'apiKeyEnv'))))
  elseif problem then
    table.insert(out, 'Key: not sent: ' .. problem)
  else
    table.insert(out, "Key: none from Neovim (no :AutoCode key, no model.key or model.key_env in setup{}); the server reads the key variable from its own environment")
  end
  local provider = field(settings.provider, 'value')
  if provider == nil or provider == 'fixture' then
    vim.list_extend(out, {
      '',
      'The fixture provider only replays patches named in a brief: for a real model, set',
      "setup{ model = { provider = 'openai', model = '…', base_url = '…', key_env = 'OPENAI_API_KEY' } }  (:help autocode-model)",
    })
  end
  vim.list_extend(out, { '', ':AutoCode model check  sends one tiny request to the endpoint, as a task would' })
  return out
end

local function client_mod()
  return require('autocode.client')
end

--- :AutoCode model: the settings a task of this workspace gets, and where each came from.
function M.show()
  local client = client_mod()
  local ui = require('autocode.ui')
  client.run(function()
    local c, cerr = client.ensure()
    if not c then
      ui.error(cerr)
      return
    end
    local root = client.workspace_for()
    if not root then
      ui.error('model needs a workspace folder (the repository\'s settings count too): open a file inside a git repository')
      return
    end
    local err, result = client.await(protocol.commands.doctor, { workspace = root }, c)
    if err then
      ui.error('model: doctor failed: ' .. client.describe(err))
      return
    end
    local lines = M.render(field(result, 'report') or {}, M.last[c.id], M.problems[c.id], root)
    ui.scratch('model', lines, 'markdown', { c = { M.check, 'check the provider' }, r = { M.show, 'refresh' } }, nil, { enter = false })
  end)
end

--- The provider check as one sentence, and whether it went well (as VS Code says it).
--- @return string text, boolean ok
function M.summary(check)
  local provider = tostring(field(check, 'provider') or 'fixture')
  local result = tostring(field(check, 'result') or '')
  local model = field(check, 'model') and (' ' .. tostring(check.model)) or ''
  local endpoint = field(check, 'endpoint') and (' at ' .. tostring(check.endpoint)) or ''
  local variable = field(check, 'api_key_env')
  local key = variable and (' Key %s: %s.'):format(tostring(variable), field(check, 'api_key_set') and 'set' or 'not set')
    or (provider ~= 'fixture' and ' No key is sent.' or '')
  if result == 'answered' then
    local tools = field(check, 'tools') == 'refused' and ' It takes no tools (edit blocks will be used).' or ''
    return ('the %s provider%s%s answered.%s%s'):format(provider, model, endpoint, tools, key), true
  end
  if result == 'failed' or result == 'not configured' then
    return ('the %s provider%s%s %s: %s.%s'):format(
      provider,
      model,
      endpoint,
      result == 'failed' and 'failed' or 'is not configured',
      tostring(field(check, 'error') or 'no reason given'),
      key
    ),
      false
  end
  return ('%s: set setup{ model = { provider, model, base_url } } for a real model.'):format(
    result ~= '' and result or ('the ' .. provider .. ' provider has nothing to check')
  ),
    provider ~= 'fixture'
end

--- :AutoCode model check: the server's provider check (one tiny request to the implementer's
--- endpoint, the settings from setup{} and the key included), in a buffer next to yours.
function M.check()
  local client = client_mod()
  local ui = require('autocode.ui')
  client.run(function()
    local root = client.workspace_for()
    if not root then
      ui.error('model check needs a workspace folder (the repository\'s settings count too): open a file inside a git repository')
      return
    end
    ui.notify('checking the model provider (one tiny request to its endpoint)…')
    local err, result = client.await(protocol.commands.provider_check, { workspace = root })
    if err then
      ui.error('model check failed: ' .. client.describe(err))
      return
    end
    local check = field(result, 'check') or {}
    local text, ok = M.summary(check)
    M.checks[root] = { check = check, text = text, ok = ok }
    local lines = { '# AutoCode: model provider check', '', text:sub(1, 1):upper() .. text:sub(2), '' }
    vim.list_extend(lines, ui.lines(field(result, 'text') or ''))
    if not ok then
      vim.list_extend(lines, { '', 'Change the model in setup{ model = { ... } } (:help autocode-model), then :AutoCode model check again.' })
    end
    ui.scratch('provider-check', lines, 'markdown', { r = { M.check, 'check again' } }, nil, { enter = false })
    if ok then
      ui.notify(text)
    else
      ui.warn(text)
    end
  end)
end

--- :checkhealth autocode's "Model" section. Sends nothing to the endpoint (a health check
--- should not spend a request): it shows the settings, the key's source and whether the server
--- holds it, and the last :AutoCode model check; with setup{ model = { health_check = true } } it
--- runs the check itself.
function M.health(c, report, root)
  local health = vim.health
  local client = client_mod()
  local config = require('autocode.config')
  health.start('Model')
  local settings = field(report, 'settings') or {}
  local parts = {}
  for _, name in ipairs({ 'provider', 'model', 'base_url', 'engine' }) do
    local item = settings[name] or {}
    local v = field(item, 'value')
    if v ~= nil then
      local origin = tostring(field(item, 'origin') or '?')
      table.insert(parts, ('%s %s (%s)'):format(LABELS[name], tostring(v), origin == 'flag' and 'setup{}' or origin))
    end
  end
  local provider = field(settings.provider, 'value')
  if provider == nil or provider == 'fixture' then
    health.warn('the fixture provider runs: it only replays patches named in a brief, so a real brief fails after the plan', {
      "Set a real model: require('autocode').setup{ model = { provider = 'openai', model = '…', base_url = '…', key_env = 'OPENAI_API_KEY' } }",
      ':help autocode-model',
    })
  else
    health.ok(table.concat(parts, ', '))
  end
  local held = M.last[c.id]
  local problem = M.problems[c.id]
  if held and held.error then
    health.error('the server did not take the model settings: ' .. held.error)
  elseif held and held.pending then
    health.info('the model settings are on their way to the server (no answer yet)')
  elseif problem then
    health.warn('key not sent: ' .. problem)
  elseif held and field(held, 'apiKeySet') then
    health.ok(('key from %s, held by the server in memory as %s'):format(M.key_source() or 'setup{}', tostring(field(held, 'apiKeyEnv'))))
  elseif provider ~= nil and provider ~= 'fixture' then
    health.info("no key from Neovim (:AutoCode key, or setup{ model.key or model.key_env }): the server reads the key variable from its own environment")
  end
  local last = root and M.checks[root]
  if options().health_check and root then
    local err, result = client.call_sync(protocol.commands.provider_check, { workspace = root }, config.options.timeout_ms, c)
    if err then
      health.error('the provider check failed: ' .. client.describe(err))
      return
    end
    local text, ok = M.summary(field(result, 'check') or {})
    last = { text = text, ok = ok }
    M.checks[root] = { check = field(result, 'check'), text = text, ok = ok }
  end
  if not last then
    health.info('no provider check yet: :AutoCode model check sends one tiny request to the endpoint (checkhealth sends none unless setup{ model = { health_check = true } })')
  elseif last.ok then
    health.ok('provider check: ' .. last.text)
  else
    health.warn('provider check: ' .. last.text, { 'Fix setup{ model = { ... } }, then :AutoCode model check' })
  end
end

return M
