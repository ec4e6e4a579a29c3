-- The AutoCode protocol names this plugin speaks: command and method names,
-- error kinds and the capability it opts in with. Kept in one place so that a
-- change in the server's protocol module is a change here only.
local M = {}

M.commands = {
  task_start = 'autocode.task.start',
  task_answer = 'autocode.task.answer',
  task_approve_plan = 'autocode.task.approvePlan',
  task_reject_plan = 'autocode.task.rejectPlan',
  task_approve_completion = 'autocode.task.approveCompletion',
  task_resolve_conflicts = 'autocode.task.resolveConflicts',
  task_cancel = 'autocode.task.cancel',
  task_resume = 'autocode.task.resume',
  task_retry_verification = 'autocode.task.retryVerification',
  task_preview = 'autocode.task.preview',
  task_transcript = 'autocode.task.transcript',
  task_get = 'autocode.task.get',
  task_list = 'autocode.task.list',
  doctor = 'autocode.doctor',
  project_forget = 'autocode.project.forget',
  project_trust = 'autocode.project.trust',
  memory_save = 'autocode.memory.save',
  memory_search = 'autocode.memory.search',
  memory_delete = 'autocode.memory.delete',
  memory_list = 'autocode.memory.list',
  memory_recall = 'autocode.memory.recall',
  memory_plan_promotion = 'autocode.memory.planPromotion',
  memory_apply_promotion = 'autocode.memory.applyPromotion',
  prep_run = 'autocode.prep.run',
  protocol_info = 'autocode.protocol.info',
}

M.methods = {
  task_did_change = 'autocode/task/didChange',
  ask_question = 'autocode/task/askQuestion',
  review_plan = 'autocode/task/reviewPlan',
  save_documents = 'autocode/task/saveDocuments',
}

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
