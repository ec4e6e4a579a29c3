-- What the person sees: prompts through vim.ui.select / vim.ui.input (so
-- telescope, fzf-lua or dressing take over where installed), scratch buffers
-- for plans, diffs, reports and lists, and notifications.
local M = {}

--- vim.notify with the plugin's title.
function M.notify(msg, level)
  vim.notify('AutoCode: ' .. msg, level or vim.log.levels.INFO, { title = 'AutoCode' })
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

--- Asks for one of `items` (strings). Returns the item and its index, or nil.
function M.select(items, prompt)
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

--- Asks a yes/no question through vim.ui.select; true only for an explicit yes.
function M.confirm(prompt, yes_label)
  local choice = M.select({ yes_label or 'Yes', 'No' }, prompt)
  return choice == (yes_label or 'Yes')
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
