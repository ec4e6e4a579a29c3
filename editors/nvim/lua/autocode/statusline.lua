-- The statusline text of one window: the task of that window's repository (by name), what
-- it waits for, and the progress of the server serving it; a lualine component uses the same.
local M = {}

--- What the statusline says a task waits for, by needs kind.
local waiting = {
  question = 'question: :AutoCode answer',
  approve_plan = 'plan: :AutoCode review',
  approve_completion = 'change: :AutoCode review',
  resolve_conflicts = 'conflicts: :AutoCode review',
}

local function normalize(path)
  return type(path) == 'string' and path ~= '' and vim.fs.normalize(path) or nil
end

--- The repository a window's buffer belongs to (its root marker, else the cwd's).
local roots = {}
local function root_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  local key = name .. '\0' .. vim.fn.getcwd()
  local known = roots[key]
  if known == nil then
    known = normalize(require('autocode.client').workspace_for(buf)) or false
    roots[key] = known
  end
  return known or nil
end

--- The task to show for repository `root`: one waiting for the person first, then a running
--- one, then the newest; nil when the repository has none. Without a repository: the current task.
--- @return autocode.TaskSnapshot|nil
function M.task_for(root)
  local tasks = require('autocode.tasks')
  if not root then
    return tasks.current and tasks.snapshots[tasks.current] or nil
  end
  local best, best_rank
  for _, snap in pairs(tasks.snapshots) do
    if normalize(snap.workspace) == root then
      local rank = (tasks.needs_kind(snap) and 3 or (snap.done and 1 or 2))
      if
        not best
        or rank > best_rank
        or (rank == best_rank and tostring(snap.updated or '') > tostring(best.updated or ''))
      then
        best, best_rank = snap, rank
      end
    end
  end
  return best
end

--- Progress of the servers that serve `root` (all AutoCode servers when root is nil).
local function progress_for(root)
  local tasks = require('autocode.tasks')
  local parts = {}
  for key, p in pairs(tasks.progress) do
    local c = vim.lsp.get_client_by_id(tonumber(key:match('^(%d+):')) or -1)
    local serves = root == nil
    for _, folder in ipairs(c and c.workspace_folders or {}) do
      serves = serves or normalize(vim.uri_to_fname(folder.uri)) == root
    end
    if c and normalize(c.root_dir) == root then
      serves = true
    end
    if serves then
      local s = p.title or ''
      if p.message and p.message ~= '' then
        s = s .. ': ' .. p.message
      end
      if p.percentage then
        s = s .. (' %d%%'):format(p.percentage)
      end
      table.insert(parts, s)
    end
  end
  table.sort(parts)
  return parts
end

--- The text for window `winid` (default: the window being drawn, else the current one).
--- @param winid integer|nil
--- @return string
function M.text(winid)
  winid = winid or vim.g.statusline_winid or vim.api.nvim_get_current_win()
  if not vim.api.nvim_win_is_valid(winid) then
    return ''
  end
  local root = root_of(vim.api.nvim_win_get_buf(winid))
  local snap = M.task_for(root)
  local parts = progress_for(root)
  if #parts == 0 and not snap then
    return ''
  end
  local head = 'AutoCode'
  if snap then
    local repo = vim.fs.basename(normalize(snap.workspace) or root or '')
    head = repo ~= '' and ('%s %s: %s'):format(head, repo, tostring(snap.state or ''))
      or ('%s %s'):format(head, tostring(snap.state or ''))
    local kind = require('autocode.tasks').needs_kind(snap)
    if waiting[kind] then
      head = head .. ' (' .. waiting[kind] .. ')'
    elseif require('autocode.evidence').interrupted[snap.id] or snap.state == 'INTERRUPTED' then
      head = head .. ' (interrupted: :AutoCode resume)'
    elseif snap.state == 'FAILED' then
      head = head .. ' (:AutoCode status)'
    end
  end
  if #parts > 0 then
    head = head .. ' [' .. table.concat(parts, ', ') .. ']'
  end
  return head
end

--- Redraws every window's statusline (another window may show another repository's task).
function M.redraw()
  pcall(vim.cmd, 'redrawstatus!')
end

return M
