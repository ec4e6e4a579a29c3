-- Signs that say a task waits for the person, on the buffers it concerns: a
-- question or a plan on every loaded buffer of the task's repository, a change
-- or its conflicts on the buffers of the files it touches. Nothing opens; the
-- sign (in the sign column, first line) goes once the task stops waiting.
local M = {}

M.ns = vim.api.nvim_create_namespace('autocode.waiting')

--- Sign text and what it says, by needs kind (kinds of protocol.needs).
M.SIGNS = {
  question = { text = 'A?', says = 'a question waits (:AutoCode answer)' },
  approve_plan = { text = 'AP', says = 'a plan waits (:AutoCode review)' },
  approve_completion = { text = 'AC', says = 'a change to this file waits (:AutoCode review)' },
  resolve_conflicts = { text = 'A!', says = 'a choice on conflicting files waits (:AutoCode resolve)' },
}

local function under(path, dir)
  return path == dir or vim.startswith(path, dir .. '/')
end

--- Buffer -> {kind, task id} for every loaded file buffer a waiting task concerns.
local function wanted()
  local tasks = require('autocode.tasks')
  local out = {}
  for id, snap in pairs(tasks.snapshots) do
    local kind = tasks.needs_kind(snap)
    local ws = type(snap.workspace) == 'string' and snap.workspace ~= '' and vim.fs.normalize(snap.workspace) or nil
    if snap.done ~= true and M.SIGNS[kind] and ws then
      local files = {}
      if kind == 'approve_completion' or kind == 'resolve_conflicts' then
        for _, rel in ipairs(tasks.files(snap)) do
          files[vim.fs.normalize(vim.fs.joinpath(ws, rel))] = true
        end
      end
      for _, buf in ipairs(vim.api.nvim_list_bufs()) do
        local name = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) or ''
        if name ~= '' then
          name = vim.fs.normalize(name)
          local fits = next(files) and files[name] or (not next(files) and under(name, ws))
          if fits and not out[buf] then
            out[buf] = { kind = kind, id = id }
          end
        end
      end
    end
  end
  return out
end

--- Puts the signs where a task waits and takes them off where none does any more.
function M.refresh()
  local want = wanted()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
      local w = want[buf]
      if w then
        local sign = M.SIGNS[w.kind]
        vim.api.nvim_buf_set_extmark(buf, M.ns, 0, 0, {
          sign_text = sign.text,
          sign_hl_group = 'DiagnosticSignInfo',
        })
        vim.b[buf].autocode_waiting = ('AutoCode task %s: %s'):format(w.id, sign.says)
      else
        vim.b[buf].autocode_waiting = nil
      end
    end
  end
end

--- The sign a buffer shows (its text and what it says, also b:autocode_waiting), or nil.
function M.at(buf)
  local marks = vim.api.nvim_buf_get_extmarks(buf, M.ns, 0, -1, { details = true })
  local d = marks[1] and marks[1][4]
  return d and { text = vim.trim(d.sign_text or ''), says = vim.b[buf].autocode_waiting } or nil
end

vim.api.nvim_create_autocmd('BufReadPost', {
  group = vim.api.nvim_create_augroup('autocode.waiting', { clear = true }),
  callback = function()
    vim.schedule(M.refresh)
  end,
})

return M
