-- Small helpers shared by the plugin's modules.
local M = {}

--- The first of the named fields of `t` that is set (vim.NIL counts as unset).
--- @param t any
--- @return any
function M.field(t, ...)
  if type(t) ~= 'table' then
    return nil
  end
  for _, k in ipairs({ ... }) do
    if t[k] ~= nil and t[k] ~= vim.NIL then
      return t[k]
    end
  end
  return nil
end

return M
