-- What the person sees: prompts through vim.ui.select / vim.ui.input (so
-- telescope, fzf-lua or dressing take over where installed), scratch buffers
-- for plans, diffs, reports and lists, and notifications.
local M = {}

--- True when `fn` is Neovim's own (defined in its runtime file `vim/<file>`), not a plugin's.
local function builtin(fn, file)
  local info = type(fn) == 'function' and debug.getinfo(fn, 'S') or nil
  local tail = info and info.source:sub(-#file - 5) or ''
  -- `@vim/_editor.lua` is built into Neovim; `…/runtime/lua/vim/ui.lua` is read from its runtime.
  return tail == ('/vim/' .. file) or tail == ('@vim/' .. file)
end

--- True when vim.ui.select is Neovim's own inputlist() picker (no telescope, fzf-lua, snacks...).
function M.builtin_select()
  return builtin(vim.ui.select, 'ui.lua')
end

--- The messages too long for one line, newest last (:AutoCode messages shows them).
M.long_messages = {}
local float_win
-- Made on first use: this module may first be loaded in a fast context (a server's on_exit).
local key_ns

--- Closes the float of the last long message, if it is open.
function M.close_float()
  if float_win and vim.api.nvim_win_is_valid(float_win) then
    pcall(vim.api.nvim_win_close, float_win, true)
  end
  float_win = nil
end

--- Shows `text` in a small float at the top right that never takes the cursor; it closes
--- at the person's next key or the next long message.
local function show_float(text)
  M.close_float()
  local width = math.max(20, math.min(80, vim.o.columns - 4))
  local lines = {}
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    while vim.fn.strdisplaywidth(l) > width do
      local cut = width
      local space = l:sub(1, width):match('.*() ')
      if space and space > width / 2 then
        cut = space
      end
      table.insert(lines, l:sub(1, cut))
      l = l:sub(cut + 1)
    end
    table.insert(lines, l)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = 'wipe'
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = 'editor',
    anchor = 'NE',
    row = 1,
    col = vim.o.columns,
    width = width,
    height = math.min(#lines, math.max(1, vim.o.lines - 4)),
    style = 'minimal',
    border = 'rounded',
    focusable = false,
    zindex = 60,
    noautocmd = true,
  })
  if not ok then
    return
  end
  float_win = win
  key_ns = key_ns or vim.api.nvim_create_namespace('autocode.float')
  -- Closed by the person's next key (which still does what it always does).
  vim.on_key(function()
    vim.on_key(nil, key_ns)
    vim.schedule(function()
      if float_win == win then
        M.close_float()
      end
    end)
  end, key_ns)
end

--- How many messages the plugin has said (a step that must not add a second line compares it).
M.said = 0

--- vim.notify with the plugin's title. With Neovim's own vim.notify (which echoes), a message
--- wider than the screen would stop at a "Press ENTER" prompt: it is said in one line that
--- fits, and the whole text opens in a float (and stays in :AutoCode messages).
function M.notify(msg, level)
  M.said = M.said + 1
  local text = 'AutoCode: ' .. msg
  level = level or vim.log.levels.INFO
  if builtin(vim.notify, '_editor.lua') then
    -- v:echospace: the columns a message has before it would scroll (ruler and showcmd taken).
    local room = math.max(1, vim.v.echospace - 1)
    if text:find('\n', 1, true) or vim.fn.strdisplaywidth(text) > room then
      table.insert(M.long_messages, text)
      if #M.long_messages > 50 then
        table.remove(M.long_messages, 1)
      end
      local first = vim.split(text, '\n', { plain = true })[1]
      local tail = '… (:AutoCode messages)'
      local short = room > #tail + 10 and (vim.fn.strcharpart(first, 0, room - vim.fn.strdisplaywidth(tail)) .. tail)
        or (vim.fn.strcharpart(first, 0, room - 1) .. '…')
      local whole = text
      vim.schedule(function()
        show_float(whole)
      end)
      text = short
    end
  end
  vim.notify(text, level, { title = 'AutoCode' })
end

function M.error(msg)
  M.notify(msg, vim.log.levels.ERROR)
end

function M.warn(msg)
  M.notify(msg, vim.log.levels.WARN)
end

--- Runs vim.ui.select / vim.ui.input and returns its answer. Inside a coroutine
--- it yields until the person answers (a picker may answer later); outside one
--- it waits on the event loop.
--- @param fn fun(cb: fun(value: any))
local function await(fn)
  local co = coroutine.running()
  local done, value = false, nil
  local function cb(v)
    if done then
      return
    end
    done, value = true, v
    if co and coroutine.status(co) == 'suspended' then
      require('autocode.client').resume(co, v)
    end
  end
  fn(cb)
  if done then
    return value
  end
  if co and coroutine.isyieldable() then
    return coroutine.yield()
  end
  vim.wait(24 * 3600 * 1000, function()
    return done
  end, 50)
  return value
end

--- Asks for free text. Returns nil when dismissed.
function M.input(prompt, default)
  return await(function(cb)
    vim.ui.input({ prompt = prompt, default = default }, cb)
  end)
end

--- Neovim's own picker is inputlist(), where Enter alone means "cancel": with a default,
--- the same numbered list is asked through input() instead, where Enter alone takes it and
--- Esc cancels. Returns the index or nil.
local function numbered(items, prompt, default)
  local lines = { prompt }
  for i, item in ipairs(items) do
    table.insert(lines, ('%d: %s'):format(i, item))
  end
  table.insert(lines, ('Number and Enter (Enter alone: %d; Esc cancels): '):format(default))
  local typed = M.input(table.concat(lines, '\n'))
  if typed == nil then
    return nil
  end
  typed = vim.trim(typed)
  if typed == '' then
    return default
  end
  local n = tonumber(typed)
  if n and items[n] then
    return n
  end
  M.warn(('%q is not one of 1-%d: nothing was chosen'):format(typed, #items))
  return nil
end

--- Asks for one of `items` (strings). Returns the item and its index, or nil.
--- `opts.default` (an index) is what Enter alone takes in Neovim's own picker.
function M.select(items, prompt, opts)
  local default = opts and opts.default
  if default and M.builtin_select() then
    local idx = numbered(items, prompt, default)
    if idx then
      return items[idx], idx
    end
    return nil
  end
  local pair = await(function(cb)
    vim.ui.select(items, { prompt = prompt }, function(item, idx)
      cb(item and { item, idx } or false)
    end)
  end)
  if pair then
    return pair[1], pair[2]
  end
  return nil
end

--- Asks a yes/no question; true only for an explicit yes. Neovim's own picker asks it as
--- "[y/N]" in the command line (Enter alone is no); another picker gets Yes / No.
function M.confirm(prompt, yes_label)
  yes_label = yes_label or 'Yes'
  if M.builtin_select() then
    local label = yes_label == 'Yes' and '' or (' (y: %s)'):format(yes_label)
    local typed = M.input(('%s [y/N]%s: '):format(prompt, label))
    return typed ~= nil and vim.tbl_contains({ 'y', 'yes' }, vim.trim(typed):lower())
  end
  local choice = M.select({ yes_label, 'No' }, prompt)
  return choice == yes_label
end

-- Scratch buffers --------------------------------------------------------

local scratch_by_name = {}

--- Opens (or reuses) a scratch buffer named `autocode://<name>` with `lines`
--- and `filetype`; `keys` maps lhs -> {fn, desc, confirm?}. A key with
--- `confirm` (a question) asks Yes/No through vim.ui.select before it acts, so
--- a stray keystroke never decides anything. Returns the buffer.
--- @param name string
--- @param lines string[]
--- @param filetype string
--- @param keys table<string, {[1]: function, [2]: string, confirm?: string}>|nil
--- @param vars table|nil buffer variables (b:autocode_*)
--- @param opts {enter?: boolean}|nil enter = false shows the buffer without moving the cursor to it
function M.scratch(name, lines, filetype, keys, vars, opts)
  local enter = not (opts and opts.enter == false)
  local bufname = 'autocode://' .. name
  local buf = scratch_by_name[bufname]
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, bufname)
    scratch_by_name[bufname] = buf
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  M.set_lines(buf, lines)
  -- Setting the same filetype again would reload its runtime files (markdown's take ~100 ms).
  if vim.bo[buf].filetype ~= filetype then
    vim.bo[buf].filetype = filetype
  end
  for k, v in pairs(vars or {}) do
    vim.b[buf]['autocode_' .. k] = v
  end
  local help = {}
  for lhs, spec in pairs(keys or {}) do
    local fn = spec[1]
    if spec.confirm then
      local question = spec.confirm
      fn = function()
        require('autocode.client').run(function()
          if M.confirm(question) then
            spec[1]()
          end
        end)
      end
    end
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'AutoCode: ' .. spec[2] })
    table.insert(help, lhs .. ' ' .. spec[2])
  end
  vim.keymap.set('n', 'q', function()
    M.close(buf)
  end, { buffer = buf, nowait = true, desc = 'AutoCode: close' })
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    if enter then
      vim.cmd('botright split')
      vim.api.nvim_win_set_buf(0, buf)
      win = vim.api.nvim_get_current_win()
    else
      win = vim.api.nvim_open_win(buf, false, { split = 'below', win = -1 })
    end
  elseif enter then
    vim.api.nvim_set_current_win(win)
  end
  table.sort(help)
  if #help > 0 then
    vim.api.nvim_set_option_value('winbar', 'AutoCode  ' .. table.concat(help, '  ') .. '  q close', { win = win, scope = 'local' })
  end
  return buf
end

--- Replaces a scratch buffer's text; values with embedded newlines become several lines.
function M.set_lines(buf, lines)
  local flat = {}
  for _, l in ipairs(lines) do
    vim.list_extend(flat, vim.split(tostring(l), '\n', { plain = true }))
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, flat)
  vim.bo[buf].modifiable = false
end

--- Closes a scratch buffer's windows (the buffer stays for :buffer).
function M.close(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, true)
    else
      vim.api.nvim_win_set_buf(win, vim.api.nvim_create_buf(true, false))
    end
  end
end

--- Closes the windows of autocode://<name>, if it is open.
function M.close_named(name)
  local buf = M.find(name)
  if buf then
    M.close(buf)
  end
end

--- The buffer named autocode://<name>, if open.
function M.find(name)
  local buf = scratch_by_name['autocode://' .. name]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
end

-- Rendering --------------------------------------------------------------

--- Splits text into lines (a nil or vim.NIL gives none).
function M.lines(text)
  if text == nil or text == vim.NIL then
    return {}
  end
  return vim.split(tostring(text), '\n', { plain = true })
end

local function scalar(v)
  if v == vim.NIL or v == nil then
    return 'none'
  elseif type(v) == 'boolean' then
    return v and 'yes' or 'no'
  end
  return tostring(v)
end

--- Renders any JSON value as markdown list lines under the current indent.
--- @param value any
--- @param out string[]
--- @param indent string|nil
function M.render_value(value, out, indent)
  indent = indent or ''
  if type(value) ~= 'table' then
    table.insert(out, indent .. '- ' .. scalar(value))
    return
  end
  if vim.islist(value) then
    if #value == 0 then
      table.insert(out, indent .. '- (none)')
    end
    for _, item in ipairs(value) do
      if type(item) == 'table' and not vim.islist(item) then
        local first = true
        local keys = vim.tbl_keys(item)
        table.sort(keys)
        for _, k in ipairs(keys) do
          local v = item[k]
          local prefix = first and (indent .. '- ') or (indent .. '  ')
          first = false
          if type(v) == 'table' then
            table.insert(out, prefix .. k .. ':')
            M.render_value(v, out, indent .. '    ')
          else
            table.insert(out, prefix .. k .. ': ' .. scalar(v))
          end
        end
      else
        M.render_value(item, out, indent)
      end
    end
    return
  end
  local keys = vim.tbl_keys(value)
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = value[k]
    if type(v) == 'table' then
      table.insert(out, indent .. '- ' .. k .. ':')
      M.render_value(v, out, indent .. '  ')
    else
      table.insert(out, indent .. '- ' .. k .. ': ' .. scalar(v))
    end
  end
end

return M
