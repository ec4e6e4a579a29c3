-- The AutoCode protocol names this plugin speaks: command and method names,
-- error kinds and the capability it opts in with. Kept in one place so that a
-- change in the server's protocol module is a change here only.
local M = {}

-- Command and method names come from the generated table (scripts/gen_protocol_types.py writes
-- protocol_names.lua from the server's protocol module): none is copied here by hand.
local names = require('autocode.protocol_names')
M.commands = names.commands
M.methods = names.methods

M.kinds = {
  confirmation_required = 'confirmationRequired',
  no_repository = 'noRepository',
  task_not_found = 'taskNotFound',
  not_awaiting_input = 'notAwaitingInput',
  plan_revision_mismatch = 'planRevisionMismatch',
  memory_refused = 'memoryRefused',
  memory_not_found = 'memoryNotFound',
  invalid_arguments = 'invalidArguments',
  already_decided = 'alreadyDecided',
  trust_required = 'trustRequired',
  trust_changed = 'trustChanged',
}

-- `needs.kind` of a task snapshot.
M.needs = {
  question = 'question',
  approve_plan = 'approve_plan',
  approve_completion = 'approve_completion',
  resolve_conflicts = 'resolve_conflicts',
  save_files = 'save_files',
}

-- How an answer was given (`how` of autocode.task.answer). Only typed and
-- chosen answers are the person's own and may be learned.
M.how = {
  typed = 'typed',
  chosen = 'chosen',
  accepted_default = 'acceptedDefault',
  delegated = 'delegated',
}

M.version = '1.0'

--- The `experimental.autocode` capability this client declares: an object
--- opts in to autocode/task/didChange, askQuestion and reviewPlan.
function M.client_capability()
  return { protocolVersion = M.version }
end

return M
