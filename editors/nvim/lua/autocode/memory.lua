-- Memory and project commands: memory save/search/delete/list, promotion of
-- team memories to skills, doctor and forget.
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local C = protocol.commands
local M = {}

local field = require('autocode.util').field

local function with_workspace(args)
  local root = client.workspace_for()
  if root then
    args.workspace = root
  end
  return args
end

--- Splits `--scope=global --shared --category=x rest of text` into options and text.
--- @param words string[]
--- @return table opts, string text
function M.parse_flags(words)
  local opts, rest = {}, {}
  for _, w in ipairs(words) do
    local k, v = w:match('^%-%-([%w_-]+)=(.*)$')
    if k and #rest == 0 then
      opts[k] = v
    elseif w:match('^%-%-[%w_-]+$') and #rest == 0 then
      opts[w:sub(3)] = true
    else
      table.insert(rest, w)
    end
  end
  return opts, table.concat(rest, ' ')
end

--- One line for a memory item.
function M.format_item(item)
  local id = field(item, 'id') or '?'
  local scope = field(item, 'scope') or '?'
  local agent = field(item, 'owner', 'agent')
  local owner = agent and ('agent ' .. tostring(agent)) or 'team'
  local content = tostring(field(item, 'content', 'text') or ''):gsub('\n', ' ')
  return ('- [%s] (%s, %s) %s'):format(id, scope, owner, content)
end

local function items_of(result)
  if type(result) ~= 'table' then
    return {}
  end
  return field(result, 'memories') or {}
end

local function show_items(title, items)
  local lines = { '# ' .. title, '' }
  if #items == 0 then
    table.insert(lines, '(no memories)')
  end
  for _, it in ipairs(items) do
    table.insert(lines, M.format_item(it))
  end
  return ui.scratch('memory', lines, 'markdown', {}, { count = #items })
end

--- The message shown for a save that was not stored: a `saved: false`
--- result (duplicate, turned into a skill) or a memoryRefused error.
function M.refusal_message(r)
  local data = type(field(r, 'data')) == 'table' and r.data or r
  local message = tostring(field(r, 'message') or 'refused'):gsub('^[Nn]ot saved:%s*', '')
  local parts = { 'memory not saved: ' .. message }
  local reason = field(data, 'reason')
  if reason and not message:find(tostring(reason), 1, true) then
    parts[1] = parts[1] .. ' (' .. tostring(reason) .. ')'
  end
  local dup = field(data, 'duplicateOf')
  if dup and not message:find(tostring(dup), 1, true) then
    table.insert(parts, 'it duplicates memory ' .. tostring(dup))
  end
  local skill = field(data, 'skill')
  if skill and not message:find(tostring(skill), 1, true) then
    table.insert(parts, 'it was saved as the skill ' .. tostring(skill))
  end
  local suggestion = field(data, 'suggestion')
  if suggestion and not message:find(tostring(suggestion), 1, true) then
    table.insert(parts, 'try instead: ' .. tostring(suggestion))
  end
  return table.concat(parts, '; ')
end

function M.save(words)
  local opts, text = M.parse_flags(words)
  client.run(function()
    if text == '' then
      text = ui.input('Memory to save: ') or ''
    end
    if vim.trim(text) == '' then
      ui.warn('nothing to save: give the memory text, e.g. :AutoCode memory save --scope=global <text>')
      return
    end
    local args = with_workspace({ content = text })
    if opts.scope then
      args.scope = opts.scope
    end
    if opts.shared then
      args.shared = true
    end
    if opts.category then
      args.category = opts.category
    end
    local err, result = client.await(C.memory_save, args)
    if client.kind(err) == protocol.kinds.memory_refused then
      ui.warn(M.refusal_message(err))
      return
    elseif client.kind(err) == protocol.kinds.no_repository then
      ui.warn(
        'memory not saved: '
          .. tostring(err.message)
          .. ' (without a workspace folder only global memory is reachable: use --scope=global)'
      )
      return
    elseif err then
      ui.error('memory not saved: ' .. client.describe(err))
      return
    end
    if field(result, 'saved') == false then
      ui.warn(M.refusal_message(result))
      return
    end
    ui.notify(('memory %s saved (%s)'):format(tostring(field(result, 'id') or '?'), tostring(field(result, 'scope') or '?')))
  end)
end

function M.search(words)
  local opts, query = M.parse_flags(words)
  client.run(function()
    if query == '' then
      query = ui.input('Search memories for: ') or ''
    end
    local args = with_workspace({ query = query })
    for _, k in ipairs({ 'scope', 'owner', 'limit' }) do
      if opts[k] then
        args[k] = k == 'limit' and tonumber(opts[k]) or opts[k]
      end
    end
    local err, result = client.await(C.memory_search, args)
    if err then
      ui.error('memory search failed: ' .. client.describe(err))
      return
    end
    show_items(('Memories matching %q'):format(query), items_of(result))
  end)
end

function M.list(words)
  local opts = M.parse_flags(words or {})
  client.run(function()
    local args = with_workspace({})
    for _, k in ipairs({ 'scope', 'owner' }) do
      if opts[k] then
        args[k] = opts[k]
      end
    end
    local err, result = client.await(C.memory_list, args)
    if err then
      ui.error('memory list failed: ' .. client.describe(err))
      return
    end
    show_items('Memories', items_of(result))
  end)
end

function M.delete(words)
  local id = words[1]
  client.run(function()
    if not id or id == '' then
      local err, result = client.await(C.memory_list, with_workspace({}))
      if err then
        ui.error('memory delete failed: ' .. client.describe(err))
        return
      end
      local items = items_of(result)
      if #items == 0 then
        ui.notify('no memories to delete')
        return
      end
      local labels = vim.tbl_map(M.format_item, items)
      local _, idx = ui.select(labels, 'Delete which memory?')
      if not idx then
        return
      end
      id = field(items[idx], 'id')
      if not ui.confirm(('Delete memory %s (%s)?'):format(tostring(id), labels[idx]), 'Yes, delete it') then
        ui.notify(('memory %s was kept'):format(tostring(id)))
        return
      end
    end
    local err, result = client.await(C.memory_delete, with_workspace({ id = tostring(id) }))
    if err then
      ui.error('memory delete failed: ' .. client.describe(err))
      return
    end
    if field(result, 'deleted') == false then
      ui.warn(('memory %s was not deleted'):format(tostring(id)))
      return
    end
    ui.notify(('memory %s deleted'):format(tostring(id)))
  end)
end

--- Plans a promotion of team memories to skills and shows it; `x` selects a
--- candidate, `a` applies the selected ones. Nothing is written before `a`.
function M.promote()
  client.run(function()
    local err, result = client.await(C.memory_plan_promotion, with_workspace({}))
    if err then
      ui.error('promotion plan failed: ' .. client.describe(err))
      return
    end
    local candidates = field(result, 'candidates') or {}
    if #candidates == 0 then
      ui.notify('no team memory is a candidate for a skill')
      return
    end
    local selected = {}
    local function render()
      local lines = { '# Promote team memories to skills', '', 'x toggles a candidate, a applies the selected ones.', '' }
      local line_of = {}
      for i, cand in ipairs(candidates) do
        local mid = field(cand, 'memoryId')
        local mark = selected[i] and '[x]' or '[ ]'
        table.insert(lines, ('%s %d. %s (memory %s)'):format(mark, i, tostring(field(cand, 'name', 'skillName') or '?'), tostring(mid)))
        line_of[#lines] = i
        for _, l in ipairs(ui.lines(field(cand, 'description'))) do
          table.insert(lines, '    ' .. l)
        end
      end
      return lines, line_of
    end
    local buf
    local lines, line_of = render()
    local function redraw()
      lines, line_of = render()
      ui.set_lines(buf, lines)
    end
    buf = ui.scratch('promote', lines, 'markdown', {
      x = {
        function()
          local i = line_of[vim.api.nvim_win_get_cursor(0)[1]]
          if i then
            selected[i] = not selected[i]
            redraw()
          end
        end,
        'toggle candidate',
      },
      a = {
        function()
          local ids = {}
          for i, cand in ipairs(candidates) do
            if selected[i] then
              table.insert(ids, field(cand, 'memoryId'))
            end
          end
          if #ids == 0 then
            ui.warn('select candidates with x first')
            return
          end
          client.run(function()
            local aerr = client.await(C.memory_apply_promotion, with_workspace({ ids = ids }))
            if aerr then
              ui.error('promotion failed: ' .. client.describe(aerr))
              return
            end
            ui.notify(('%d team memor%s promoted to skills'):format(#ids, #ids == 1 and 'y' or 'ies'))
            ui.close(buf)
          end)
        end,
        'apply selected',
      },
    })
  end)
end

-- Project ----------------------------------------------------------------------

--- Markdown lines for a doctor result: its own text when it has one, else the fields.
function M.render_doctor(result)
  local text = field(result, 'markdown', 'text', 'report')
  if type(text) == 'string' then
    return ui.lines(text)
  end
  local out = { '# AutoCode doctor', '' }
  local keys = vim.tbl_keys(type(result) == 'table' and result or {})
  table.sort(keys)
  for _, k in ipairs(keys) do
    vim.list_extend(out, { '## ' .. k, '' })
    ui.render_value(result[k], out)
    table.insert(out, '')
  end
  return out
end

function M.doctor()
  client.run(function()
    local err, result = client.await(C.doctor, with_workspace({}))
    if err then
      ui.error('doctor failed: ' .. client.describe(err))
      return
    end
    ui.scratch('doctor', M.render_doctor(result), 'markdown', {
      r = { M.doctor, 'refresh' },
    }, nil, { enter = false })
  end)
end

--- Removes the workspace's learned record after the person confirms.
function M.forget()
  client.run(function()
    local root = client.workspace_for()
    if not root then
      ui.error('forget needs a workspace folder: open a file inside a git repository or :cd into one')
      return
    end
    local yes = ui.confirm(
      ('Remove the learned record %s/.autocode/project.json? Settings, runs and memories stay.'):format(root),
      'Yes, forget it'
    )
    if not yes then
      ui.notify('forget cancelled; the learned record was kept')
      return
    end
    local err, result = client.await(C.project_forget, { workspace = root, confirm = true })
    if err then
      ui.error('forget failed: ' .. client.describe(err))
      return
    end
    if field(result, 'removed') == false then
      ui.notify('there was no learned record to forget')
    else
      ui.notify('the learned record was removed')
    end
  end)
end

return M
