-- Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.
-- Every command and method name of the AutoCode protocol (use these, never a copied string).
local M = {}

M.commands = {
  protocol_info = 'autocode.protocol.info',
  doctor = 'autocode.doctor',
  verify = 'autocode.verify',
  project_forget = 'autocode.project.forget',
  project_trust = 'autocode.project.trust',
  prep_run = 'autocode.prep.run',
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
  task_get = 'autocode.task.get',
  task_list = 'autocode.task.list',
  task_transcript = 'autocode.task.transcript',
  memory_save = 'autocode.memory.save',
  memory_search = 'autocode.memory.search',
  memory_delete = 'autocode.memory.delete',
  memory_list = 'autocode.memory.list',
  memory_recall = 'autocode.memory.recall',
  memory_plan_promotion = 'autocode.memory.planPromotion',
  memory_apply_promotion = 'autocode.memory.applyPromotion',
  task_ask = 'autocode.task.ask',
  task_review = 'autocode.task.review',
  task_request_changes = 'autocode.task.requestChanges',
  task_compose = 'autocode.task.compose',
  doctor_open = 'autocode.doctor.open',
  memory_compose_search = 'autocode.memory.composeSearch',
  session_configure = 'autocode.session.configure',
  provider_check = 'autocode.provider.check',
}

M.methods = {
  task_did_change = 'autocode/task/didChange',
  task_ask_question = 'autocode/task/askQuestion',
  task_save_documents = 'autocode/task/saveDocuments',
  task_review_plan = 'autocode/task/reviewPlan',
}

return M
