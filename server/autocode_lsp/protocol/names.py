"""The protocol's names: its version, every command and custom method, the JSON-RPC error codes
and which feature area each command belongs to. Plain constants with no imports, so both the
package (`autocode_lsp.protocol`, which re-exports them) and `protocol.spec` can use them
without importing each other."""

from __future__ import annotations

PROTOCOL_VERSION = "1.0"
"""Bumped in its major part when a client written for an older version would break."""

EXPERIMENTAL_KEY = "autocode"
"""`capabilities.experimental.autocode`: the client's opt-in and the server's advertisement."""

# JSON-RPC error codes the server uses.
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803

C = "autocode."

PROTOCOL_INFO = C + "protocol.info"
DOCTOR = C + "doctor"
PROJECT_FORGET = C + "project.forget"
PROJECT_TRUST = C + "project.trust"
PREP_RUN = C + "prep.run"
VERIFY = C + "verify"
TASK_START = C + "task.start"
TASK_ANSWER = C + "task.answer"
TASK_APPROVE_PLAN = C + "task.approvePlan"
TASK_REJECT_PLAN = C + "task.rejectPlan"
TASK_APPROVE_COMPLETION = C + "task.approveCompletion"
TASK_RESOLVE_CONFLICTS = C + "task.resolveConflicts"
TASK_CANCEL = C + "task.cancel"
TASK_RESUME = C + "task.resume"
TASK_RETRY_VERIFICATION = C + "task.retryVerification"
TASK_PREVIEW = C + "task.preview"
TASK_GET = C + "task.get"
TASK_LIST = C + "task.list"
TASK_TRANSCRIPT = C + "task.transcript"
MEMORY_SAVE = C + "memory.save"
MEMORY_SEARCH = C + "memory.search"
MEMORY_DELETE = C + "memory.delete"
MEMORY_LIST = C + "memory.list"
MEMORY_RECALL = C + "memory.recall"
MEMORY_PLAN_PROMOTION = C + "memory.planPromotion"
MEMORY_APPLY_PROMOTION = C + "memory.applyPromotion"
TASK_ASK = C + "task.ask"
TASK_REVIEW = C + "task.review"
TASK_REQUEST_CHANGES = C + "task.requestChanges"
TASK_COMPOSE = C + "task.compose"
DOCTOR_OPEN = C + "doctor.open"
MEMORY_COMPOSE_SEARCH = C + "memory.composeSearch"
SESSION_CONFIGURE = C + "session.configure"
PROVIDER_CHECK = C + "provider.check"

TASK_DID_CHANGE = "autocode/task/didChange"
TASK_ASK_QUESTION = "autocode/task/askQuestion"
TASK_REVIEW_PLAN = "autocode/task/reviewPlan"
TASK_SAVE_DOCUMENTS = "autocode/task/saveDocuments"

FEATURES: tuple[str, ...] = (
    "doctor", "forget", "trust", "prep", "tasks", "memory", "progress", "actions", "verify", "session",
)
"""What `features` in `autocode.protocol.info` and `experimental.autocode` may list."""


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
