"""Every command's and custom method's wire name as a constant, and each command's feature area.

Generated from the specs in `protocol/spec.py` by `scripts/gen_protocol_types.py`: do not edit
(a test fails when it is stale). `autocode_lsp.protocol.names` re-exports it.
"""

from __future__ import annotations

PROTOCOL_INFO = "autocode.protocol.info"
DOCTOR = "autocode.doctor"
VERIFY = "autocode.verify"
PROJECT_FORGET = "autocode.project.forget"
PROJECT_TRUST = "autocode.project.trust"
PREP_RUN = "autocode.prep.run"
TASK_START = "autocode.task.start"
TASK_ANSWER = "autocode.task.answer"
TASK_APPROVE_PLAN = "autocode.task.approvePlan"
TASK_REJECT_PLAN = "autocode.task.rejectPlan"
TASK_APPROVE_COMPLETION = "autocode.task.approveCompletion"
TASK_RESOLVE_CONFLICTS = "autocode.task.resolveConflicts"
TASK_CANCEL = "autocode.task.cancel"
TASK_RESUME = "autocode.task.resume"
TASK_RETRY_VERIFICATION = "autocode.task.retryVerification"
TASK_PREVIEW = "autocode.task.preview"
TASK_GET = "autocode.task.get"
TASK_LIST = "autocode.task.list"
TASK_TRANSCRIPT = "autocode.task.transcript"
MEMORY_SAVE = "autocode.memory.save"
MEMORY_SEARCH = "autocode.memory.search"
MEMORY_DELETE = "autocode.memory.delete"
MEMORY_LIST = "autocode.memory.list"
MEMORY_RECALL = "autocode.memory.recall"
MEMORY_PLAN_PROMOTION = "autocode.memory.planPromotion"
MEMORY_APPLY_PROMOTION = "autocode.memory.applyPromotion"
TASK_ASK = "autocode.task.ask"
TASK_REVIEW = "autocode.task.review"
TASK_REQUEST_CHANGES = "autocode.task.requestChanges"
TASK_COMPOSE = "autocode.task.compose"
DOCTOR_OPEN = "autocode.doctor.open"
MEMORY_COMPOSE_SEARCH = "autocode.memory.composeSearch"
SESSION_CONFIGURE = "autocode.session.configure"
PROVIDER_CHECK = "autocode.provider.check"

TASK_DID_CHANGE = "autocode/task/didChange"
TASK_ASK_QUESTION = "autocode/task/askQuestion"
TASK_SAVE_DOCUMENTS = "autocode/task/saveDocuments"
TASK_REVIEW_PLAN = "autocode/task/reviewPlan"

COMMAND_FEATURES: dict[str, str] = {
    PROTOCOL_INFO: "core",
    DOCTOR: "doctor",
    VERIFY: "verify",
    PROJECT_FORGET: "forget",
    PROJECT_TRUST: "trust",
    PREP_RUN: "prep",
    TASK_START: "tasks",
    TASK_ANSWER: "tasks",
    TASK_APPROVE_PLAN: "tasks",
    TASK_REJECT_PLAN: "tasks",
    TASK_APPROVE_COMPLETION: "tasks",
    TASK_RESOLVE_CONFLICTS: "tasks",
    TASK_CANCEL: "tasks",
    TASK_RESUME: "tasks",
    TASK_RETRY_VERIFICATION: "tasks",
    TASK_PREVIEW: "tasks",
    TASK_GET: "tasks",
    TASK_LIST: "tasks",
    TASK_TRANSCRIPT: "tasks",
    MEMORY_SAVE: "memory",
    MEMORY_SEARCH: "memory",
    MEMORY_DELETE: "memory",
    MEMORY_LIST: "memory",
    MEMORY_RECALL: "memory",
    MEMORY_PLAN_PROMOTION: "memory",
    MEMORY_APPLY_PROMOTION: "memory",
    TASK_ASK: "actions",
    TASK_REVIEW: "actions",
    TASK_REQUEST_CHANGES: "actions",
    TASK_COMPOSE: "actions",
    DOCTOR_OPEN: "actions",
    MEMORY_COMPOSE_SEARCH: "actions",
    SESSION_CONFIGURE: "session",
    PROVIDER_CHECK: "session",
}
"""Every command, in documentation order, and its feature area."""
