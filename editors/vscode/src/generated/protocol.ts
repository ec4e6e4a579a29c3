// Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.
// Wire names are camelCase; optional fields may be left out of argument objects.
/* eslint-disable */

export const PROTOCOL_VERSION = "1.0";

/** The limits an agent loop ran under. */
export interface AgentBudgets {
  maxTurns: number;
  tokenBudget: number;
  /** Seconds. */
  timeBudget: number;
}

/** One role's work with the model (a tool loop, an edit-block loop, or plain JSON requests). */
export interface AgentRole {
  role: string;
  /** tools (a tool loop), edit_blocks (the endpoint takes no tools), json (plain requests) or engine (an agent CLI played the role: `engine` names it). */
  mode: "tools" | "edit_blocks" | "json" | "engine";
  /** Why the loop fell back to edit blocks. */
  fallbackReason: string | null;
  /** Requests made. */
  turns: number;
  toolCalls: number;
  usage: TokenUsage;
  /** Time spent (loops only). */
  seconds: number | null;
  /** The loop's limits (loops only). */
  budgets: AgentBudgets | null;
  /** answered, max_turns, token_budget or time_budget once the loop ended; null while it runs. */
  stopped: string | null;
  /** The loop's transcript file in the run's agent folder. */
  transcript: string | null;
  /** The model's final answer once the loop answered (its reasoning left out); null before. */
  summary: string | null;
  /** The agent CLI that played the role (mode engine), e.g. claude-code or aider. */
  engine: string | null;
  /** Its version, as `--version` printed it. */
  engineVersion: string | null;
  /** The cost the engine reported, in US dollars (null when it reports none). */
  costUsd: number | null;
}

/** The model's work in a task: per role, with usage summed over them. */
export interface AgentStatus {
  /** Per role (investigator, requirements, planner, implementer, reviewer) that asked the model. */
  roles: Record<string, AgentRole>;
  /** Summed over the roles. */
  usage: TokenUsage;
  /** Roles whose endpoint took no tools (they worked with edit blocks). */
  editBlocksFallback: string[];
}

export interface AnswerQuestions {
  kind: "answer_questions";
  /** The open questions; a client may ask them one by one. */
  questions: Question[];
}

/** One answer in the task's ledger. */
export interface AnswerRecord {
  questionId: string;
  text: string;
  /** typed, chosen, acceptedDefault, delegated (or machine for the model's own decisions). */
  how: string;
  /** The ledger kind: human (typed or chosen), proposed_default, delegated or machine. */
  kind: string;
  channel: string | null;
  time: string | null;
}

/** One attempt to apply the verified change to the work tree. */
export interface ApplyResult {
  status: "applied" | "conflicts" | "not_applied";
  applied: boolean;
  /** Files written (through the editor or on disk). */
  written: string[];
  /** The files the editor changed (unsaved edits and undo kept). */
  writtenByEditor: string[];
  /** Paths both the person and the task changed (nothing was written). */
  conflicts: string[];
  via: "editor" | "disk" | null;
  /** The person's choice per conflicted file that this apply used. */
  choices: Record<string, string>;
  headMoved: HeadMoved | null;
  /** What happened, in words a person can read. */
  message: string;
  /** Files changed in the editor's buffers and not on disk yet (they held unsaved edits, kept and merged): the task completes once each is saved with the change; a file given conflict markers, once its file on disk holds something other than before the apply (the markers resolved or not). */
  unsaved: string[];
  /** With a per-hunk choice: the ids of the hunks applied. */
  hunksKept: string[];
  /** With a per-hunk choice: the ids of the hunks the person left out (not applied). */
  hunksUndone: string[];
}

export interface ApproveCompletion {
  kind: "approve_completion";
  /** The verified change, as a unified diff against the prep copy's base. */
  diff: string;
  files: string[];
  /** The test run in the copy. */
  tests: TestRun | null;
  /** The verdict on the change, by named tests. */
  proof: Proof | null;
  /** Set when applying needs the person's typed confirmation (the change is unproven or weakens the tests): the word to send as `confirm`. */
  confirmation: string | null;
  review: Review | null;
  /** Set when HEAD moved since the task started (shown before applying). */
  headMoved: HeadMoved | null;
  /** The last apply attempt when it did not go through (e.g. the editor refused the edit). */
  apply: ApplyResult | null;
}

export interface ApprovePlan {
  kind: "approve_plan";
  /** The plan revision to approve (`autocode.task.approvePlan`'s `revision`). */
  planRevision: number;
  plan: Plan;
  /** The plan as Markdown. */
  markdown: string;
  /** `file://` URI of the plan document (what `window/showDocument` opens). */
  planUri: string | null;
}

export interface AskQuestionParams {
  taskId: string;
  revision: number;
  question: Question;
}

export interface AskQuestionResult {
  /** `null` leaves the question open (it can be answered later with `autocode.task.answer`), unless `how` is `acceptedDefault` or `delegated`. */
  answer?: string | null;
  /** As in `autocode.task.answer`. */
  how?: "typed" | "chosen" | "acceptedDefault" | "delegated" | null;
}

export interface Conflict {
  path: string;
  reason: "overlap" | "deletedInWorkspace" | "deletedByTask" | "renamed";
  hunks: ConflictHunk[];
}

/** Where the two sides changed the same lines (1-based lines; 0 lines means an insertion point). */
export interface ConflictHunk {
  mineStart: number;
  mineLines: number;
  theirsStart: number;
  theirsLines: number;
}

export interface DoctorResult {
  /** The engine's doctor report (the shape of `autocode doctor --json`). */
  report: Record<string, unknown>;
  /** The same report as readable text; the server also logs it. */
  text: string;
}

/** `data.kind` of a JSON-RPC error (docs/protocol.md says what each means). */
export type ErrorKind = "invalidArguments" | "noRepository" | "confirmationRequired" | "taskNotFound" | "notAwaitingInput" | "alreadyDecided" | "planRevisionMismatch" | "memoryRefused" | "memoryNotFound" | "memoryStoreUnavailable" | "setupError" | "manifestInvalid" | "inputIgnored" | "preflightFailed" | "aliasToIgnored" | "changedDuringCopy" | "unreadableFile" | "copyFailed" | "workspaceInvalid" | "destinationUnsafe" | "autocodeFolderUnsafe" | "taskDamaged" | "emptyChange" | "patchDoesNotApply" | "noTestCommand" | "sandboxUnavailable" | "testsFailed" | "testsRegressed" | "copyGone" | "hunksChanged" | "budgetExhausted" | "agentLoop" | "skillConflict" | "fileSystemFault" | "noSpace" | "readOnly" | "permissionDenied" | "tooDeep" | "settingsError" | "providerError" | "gitError" | "refused" | "trustRequired" | "trustChanged" | "notAvailable" | "taskChoiceNeeded" | "cancelled" | "engineMissing" | "engineVersion" | "engineLogin" | "engineIdle" | "engineCrashed" | "engineNetwork" | "engineRefused" | "workspaceOutsideSession" | "manifestOutsideWorkspace" | "clientOverrideRefused" | "unauthorized" | "serverNotInitialized";

/** A memory removed because its agent's bucket went over the cap. */
export interface Eviction {
  id: string;
  owner: string | null;
  repository: string | null;
  createdAt: string;
  excerpt: string;
}

/** One touched file as applying would leave it. */
export interface FilePreview {
  path: string;
  /** conflict: both sides changed the same lines (or one deleted the file). */
  action: "write" | "delete" | "none" | "conflict";
  /** For a conflict: overlap, deletedInWorkspace, deletedByTask or renamed. */
  reason: string | null;
  /** A file with no lines to show (its texts are null). */
  binary: boolean;
  /** The person's text now (the editor's buffer when given or open, else the disk); null when absent. */
  mine: string | null;
  /** What applying writes (with conflict markers for a conflict); null when the file is removed. */
  merged: string | null;
  hunks: PreviewHunk[];
}

export interface ForgetArgs {
  workspace?: string | null;
  /** Must be `true`: forgetting removes the learned record for good. */
  confirm?: boolean;
}

export interface ForgetResult {
  removed: boolean;
  path: string;
}

export interface HeadMoved {
  /** On the wire: `from`. */
  from: string | null;
  to: string | null;
}

/** What completion learned into `.autocode/project.json`. */
export interface Learning {
  /** pending until the task completed and learning ran. */
  status: "pending" | "done" | "failed";
  /** Whether the project record was written. */
  written: boolean;
  /** The project record's path. */
  path: string | null;
  /** Ids of the questions whose answers were learned as conventions. */
  conventions: string[];
  /** Ids of answers not learned because they carry a credential. */
  droppedForCredentials: string[];
  /** What the record left out, in words. */
  omitted: string[];
  /** The record's problems (status failed). */
  errors: string[];
  /** Set when learning itself broke (status failed); completion stands. */
  error: string | null;
  framework: string | null;
  /** The test command learned (only after it passed, never for --package runs). */
  testCommand: string | null;
}

export interface MemoryApplyPromotionArgs {
  /** Ids of memories from a plan returned by `autocode.memory.planPromotion`. */
  ids: string[];
  workspace?: string | null;
}

export interface MemoryDeleteArgs {
  id: string;
  workspace?: string | null;
  agent?: string | null;
}

/** The memory a delete removed. */
export interface MemoryDeleteResult {
  deleted: MemoryView;
}

/** Memories in a listing, newest first. */
export interface MemoryList {
  memories: MemoryView[];
}

export interface MemoryListArgs {
  workspace?: string | null;
  scope?: "all" | "project" | "global";
  owner?: "all" | "self" | "team";
  agent?: string | null;
}

export interface MemoryPlanPromotionArgs {
  workspace?: string | null;
}

export interface MemoryRecallArgs {
  brief: string;
  workspace?: string | null;
  agent?: string | null;
}

export interface MemorySaveArgs {
  content: string;
  workspace?: string | null;
  category?: string | null;
  /** Default: `project` when the session has a repository, else `global`. */
  scope?: "project" | "global" | null;
  /** With `agent`: `true` saves a team memory, `false` a memory of that agent only. */
  shared?: boolean;
  /** The agent whose memory this is. Default: none, a person saving for the team. */
  agent?: string | null;
}

export interface MemorySearchArgs {
  query: string;
  workspace?: string | null;
  scope?: "all" | "project" | "global";
  owner?: "all" | "self" | "team";
  limit?: number;
  agent?: string | null;
}

export interface MemoryStoresInfo {
  /** Memory services this server process holds open now (one per distinct store configuration). */
  open: number;
  /** Memory services opened since the process started; repeated memory commands on one configuration reuse its service, so this grows only with new configurations. */
  opened: number;
}

/** One memory. `scope` is `project` or `global`; `shared` means a team memory (no owner). */
export interface MemoryView {
  id: string;
  content: string;
  category: string | null;
  scope: string;
  /** The portable repository key (never a path of this machine) of a project memory. */
  repository: string | null;
  /** The agent the memory belongs to; null for a team memory. */
  owner: string | null;
  shared: boolean;
  createdAt: string;
  updatedAt: string;
  runId: string | null;
  /** Relevance for search and recall results; null elsewhere. */
  score: number | null;
}

export type Needs = NoNeeds | AnswerQuestions | ApprovePlan | ApproveCompletion | ResolveConflicts | SaveFiles;

/** The command takes no arguments (an empty object or no argument at all). */
export interface NoArgs {
}

/** The task is working or has ended: it waits for nobody. */
export interface NoNeeds {
  kind: null;
}

/** A file the server wrote for the person to read or fill in, and whether it asked the editor to open it (`window/showDocument`); otherwise its path was shown in a message. */
export interface OpenedDocument {
  path: string;
  uri: string;
  shown: boolean;
}

/** The plan a person approves before anything is changed. */
export interface Plan {
  summary: string;
  steps: string[];
  /** Files (and answers, as `answer:<id>`) the plan rests on. */
  citations: string[];
  acceptanceCriteria: string[];
}

/** A checked prep copy; it stays on disk (`copy`) for inspection and for tasks. */
export interface PrepResult {
  id: string;
  workspace: string | null;
  copy: string;
  head: string | null;
  /** The declared inputs, each verified in the workspace and in the copy. */
  inputs: Record<string, unknown>[];
  counts: Record<string, unknown>;
  nestedComponents: unknown[];
  handoff: Record<string, unknown> | null;
}

export interface PrepRunArgs {
  workspace?: string | null;
  /** Path of a JSON manifest of declared public inputs (relative to the workspace or absolute). */
  manifest?: string | null;
}

/** One change between the person's text and the merged result (1-based lines; 0 lines is an insertion point before `start`). */
export interface PreviewHunk {
  /** Stable while the hunk's own lines are the same (edits elsewhere in the file keep it). */
  id: string;
  mineStart: number;
  mineLines: number;
  mergedStart: number;
  mergedLines: number;
  /** The hunk touches lines the person changed since the task started. */
  overlaps: boolean;
  /** git could not merge these lines: the merged text holds conflict markers here. */
  conflict: boolean;
}

/** Skills made from team memories, and the memories that became them. */
export interface PromotionApplied {
  skills: SkillView[];
  /** Ids of the memories that became skills (and are gone). */
  removed: string[];
}

/** A team memory that could become a skill, and the skill it would be. */
export interface PromotionCandidate {
  memoryId: string;
  name: string;
  description: string;
  category: string | null;
  content: string;
  /** The roles the skill would be given to. */
  agents: string[];
  scope: string;
  repository: string | null;
}

/** Team memories worth turning into skills (nothing is written until they are applied). */
export interface PromotionPlan {
  /** Team memories looked at. */
  scanned: number;
  candidates: PromotionCandidate[];
}

/** The verdict on the change, proved by named tests (evidence in `evidence/proof.json`). */
export interface Proof {
  /** verified: a named test failed before the change and passes with it, and nothing regressed; unproven: nothing proves the change; regressed: a test that passed before no longer does; failed. */
  status: "verified" | "unproven" | "regressed" | "failed";
  /** True only for status verified. */
  verified: boolean;
  summary: string;
  /** Tests that failed on the base and pass with the change. */
  proofs: string[];
  regressions: Regression[];
  /** Tests that fail with the change. */
  failing: string[];
  /** Tests that failed before the change too (not counted against it). */
  alreadyFailing: string[];
  /** Why the verdict is not verified, in words. */
  reasons: string[];
  concerns: ProofConcern[];
  /** The change's test files. */
  testFiles: string[];
  runs: ProofRun[];
}

/** Something in the change that weakens the tests (a person sees it before approving). */
export interface ProofConcern {
  /** testDeleted, testRenamed, skipAdded, assertionRemoved, assertionLoosened, expectationChanged, testConfigChanged, testOnlyChange, ... */
  kind: string;
  /** The file ("" for the change as a whole). */
  path: string;
  /** The concern in words a person can read. */
  sentence: string;
  /** 1-based, in the new file (in the base file for what the change removed). */
  line: number | null;
}

/** One run of the suite behind the verdict. */
export interface ProofRun {
  /** candidate (with the change), base (before it) or probe (the change's tests over the base source). */
  role: "candidate" | "base" | "probe";
  command: string;
  status: string;
  exitCode: number | null;
  seconds: number;
  /** The sandbox that confined the run (bwrap), or none. */
  sandbox: string;
  framework: string;
  /** Whether the run gave per-test results. */
  perTest: boolean;
  reason: string | null;
  /** Tests per outcome (passed, failed, error, skipped). */
  counts: Record<string, number>;
  /** The base run came from the cache (same base tree and command). */
  cached: boolean;
}

export interface ProtocolInfo {
  protocolVersion: string;
  serverVersion: string;
  features: string[];
  commands: string[];
  /** Whether this session receives the `autocode/*` notifications and requests. */
  clientOptedIn: boolean;
  /** The session's workspace folders as paths (empty: no repository in context). */
  workspaces: string[];
  /** The server process's memory services (shared by every session of the process). */
  memoryStores: MemoryStoresInfo;
}

/** `autocode doctor --check-provider` for the session: one tiny request to the implementer's endpoint. */
export interface ProviderCheck {
  /** The endpoint, model, family, whether the key variable is set (never its value), tool support, the result. */
  check: Record<string, unknown>;
  /** The same as readable lines. */
  text: string;
}

/** One question a task asks a person. */
export interface Question {
  id: string;
  text: string;
  category: string | null;
  /** Set when the answer may be learned as a project convention. */
  convention: string | null;
  /** The proposed default answer, if any. */
  default: string | null;
  /** Answers a client may offer as buttons (the proposed default when there is one). */
  choices: string[];
}

/** What a task would be given at its start for a brief, in two sections. */
export interface RecallView {
  method: string;
  reason: string;
  repository: string | null;
  project: MemoryView[];
  global: MemoryView[];
  /** Both sections as Markdown, as a task would receive them. */
  text: string;
}

/** Why content is not a memory, where it belongs instead, and a durable version when there is one. */
export interface Refusal {
  /** What made it task-bound: `task_key`, `credential`, `machine_path`, ... */
  kind: string;
  reason: string;
  /** Where the note belongs instead. */
  belongs: string;
  /** A durable version of the content that could be saved instead. */
  suggestion?: string | null;
}

/** A test that passed on the base and does not pass with the change. */
export interface Regression {
  id: string;
  base: string;
  /** failed, error, skipped or missing. */
  now: string;
}

export interface ResolveConflicts {
  kind: "resolve_conflicts";
  /** The conflicted files (nothing was written yet). */
  conflicts: Conflict[];
  files: string[];
  headMoved: HeadMoved | null;
  apply: ApplyResult;
}

/** The reviewer's verdict on the verified change. */
export interface Review {
  summary: string;
  /** What the reviewer thinks a person should look at before applying. */
  concerns: string[];
  /** Repository-independent lessons offered to memory reflection at completion. */
  lessons: string[];
}

export interface ReviewPlanParams {
  taskId: string;
  revision: number;
  planRevision: number;
  /** The plan as Markdown. */
  plan: string;
  planUri: string | null;
}

export interface ReviewPlanResult {
  decision: "approve" | "reject" | "later";
  /** Required when `decision` is `reject`. */
  feedback?: string | null;
}

export interface SaveDocumentsParams {
  taskId: string;
  /** Documents the change just went into through `workspace/applyEdit` that held no unsaved edits before it: save each one as it is now. */
  uris: string[];
}

export interface SaveDocumentsResult {
  /** The URIs the editor saved. The server reads the disk back; a file not saved is never written behind its open buffer: the task waits for the person's save. */
  saved: string[];
}

export interface SaveFiles {
  kind: "save_files";
  /** The files whose change is in the editor's buffer but not on disk: save them to complete. */
  paths: string[];
  apply: ApplyResult;
}

/** A refused save is the error `memoryRefused` on the wire (exit 3 in the CLI); these are all outcomes. */
export interface SaveResult {
  saved: boolean;
  /** The new memory's id when `saved`. */
  id?: string | null;
  /** Id of the memory that already says the same thing (then `saved` is false). */
  duplicateOf?: string | null;
  /** How the duplicate was found: `exact`, `terms` or `meaning`. */
  duplicateMethod?: string | null;
  /** Name of the skill made instead, when the content is reusable know-how. */
  skill?: string | null;
  /** Why the content was not saved (the server sends this as the `memoryRefused` error instead). */
  refused?: Refusal | null;
  /** Oldest memories removed because the agent's bucket went over its cap. */
  evicted?: Eviction[];
  scope?: string | null;
  repository?: string | null;
  /** Id of the closest memory when this one was saved beside it because they differ in a number, identifier, quoted token, negation or word (nothing is merged away unless it says the same thing). */
  similarTo?: string | null;
  /** What happened, in words a person can read. */
  message?: string;
}

/** Memories found for a query, best first. */
export interface SearchResult {
  query: string;
  /** How results were ranked: by meaning and keywords, or keywords and recency. */
  method: string;
  memories: MemoryView[];
}

/** The model settings an editor holds for its person, for this session's tasks and checks. */
export interface SessionConfigureArgs {
  provider?: string | null;
  model?: string | null;
  baseUrl?: string | null;
  /** Which engine runs the implementer, where this server knows the `engine` setting. */
  engine?: string | null;
  /** The variable the key is read from. Default: the `api_key_env` setting, else the provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY). */
  apiKeyEnv?: string | null;
  /** The provider's key, kept in the server process's memory only (never logged, never written); an empty string forgets it. Left out: the key given before stays. */
  apiKey?: string | null;
}

/** What this session's tasks and checks get from the editor. */
export interface SessionSettings {
  /** The values given, as the flag layer of every task this session starts. */
  settings: Record<string, string>;
  /** Names this server does not know as settings (an older engine), so not used. */
  ignored: string[];
  apiKeyEnv: string | null;
  /** Whether a key from the editor is held (its value is never sent back). */
  apiKeySet: boolean;
}

/** One skill: know-how given to agents, made from a memory or written by a person. */
export interface SkillView {
  id: string;
  name: string;
  /** The agent the skill belongs to; null for a team skill. */
  owner: string | null;
  description: string;
  category: string | null;
  content: string;
  scope: string;
  /** The portable repository key of a project skill. */
  repository: string | null;
  origin: string;
  sourceMemoryId: string | null;
  createdAt: string;
}

export interface TaskAnswerArgs {
  taskId: string;
  questionId: string;
  /** The answer; may be empty with `how` `acceptedDefault` or `delegated`. */
  text?: string;
  /** How the person answered. Only `typed` and `chosen` are the person's own answer and may be learned. Missing: a `text` equal to the question's `default` is `acceptedDefault`, else `typed`. */
  how?: "typed" | "chosen" | "acceptedDefault" | "delegated" | null;
  workspace?: string | null;
}

export interface TaskApproveCompletionArgs {
  taskId: string;
  /** The word `needs.confirmation` names (`unproven`), typed by the person, when the change is not proved by named tests or weakens them; refused with `confirmationRequired` without it. */
  confirm?: string | null;
  /** The ids of the hunks the person kept (from `autocode.task.preview`); the others are left out of the apply. Default: every hunk. An id the change no longer has is refused (`hunksChanged`, nothing written). */
  keep?: string[] | null;
  workspace?: string | null;
}

export interface TaskApprovePlanArgs {
  taskId: string;
  /** The plan revision the person reviewed; a newer plan fails with `planRevisionMismatch`. */
  revision: number;
  workspace?: string | null;
}

export interface TaskAskArgs {
  taskId: string;
  /** Which open question; default: the first one still open. */
  questionId?: string | null;
  workspace?: string | null;
}

export interface TaskDidChangeParams {
  task: TaskSnapshot;
  /** Equal to `task.revision`; a client drops a notification older than the last it saw. */
  revision: number;
}

/** Why a task failed. */
export interface TaskError {
  /** The error kind (`testsFailed`, `budgetExhausted`, `internalError`, ...; see the error table). */
  kind: string;
  message: string;
  /** The phase the task was in when it failed. */
  phase: string;
  /** The remedy in `message` as data, when it has one a face words its own way. */
  remedy: TaskRemedy | null;
}

export interface TaskList {
  tasks: TaskSnapshot[];
}

/** What approving the completion would do, before anything is written. */
export interface TaskPreview {
  taskId: string;
  /** The task revision the preview was made from. */
  revision: number;
  files: FilePreview[];
  /** Hunks that touch the person's own edits, over all files. */
  overlaps: number;
  /** Hunks git could not merge, over all files. */
  conflicts: number;
}

export interface TaskPreviewArgs {
  taskId: string;
  /** The texts the editor holds now, by workspace-relative path or `file://` URI (unsaved edits included). A touched file not given here is read from the documents the client synchronises, else from disk. */
  documents?: Record<string, string> | null;
  workspace?: string | null;
}

export interface TaskRefArgs {
  taskId: string;
  /** Where the task lives. Default: the session's folders are searched for the task. */
  workspace?: string | null;
}

export interface TaskRejectPlanArgs {
  taskId: string;
  feedback: string;
  workspace?: string | null;
}

/** The remedy in a failed task's message as data: the message is `before`, the remedy in the reader's words, then `after` (`message` has the CLI's words; each face words it its own way). */
export interface TaskRemedy {
  /** What the person can do (`autocode.remedy.RemedyKind`). */
  kind: "setSettings" | "setTestCommand" | "turnOffSandbox" | "useRealModel" | "resumeTask" | "giveWorkspace" | "listTasks" | "listMemories" | "trustRepository" | "nameArgument";
  /** The settings to set (`setSettings`): `base_url`, `model`. */
  keys: string[];
  /** The task to resume (`resumeTask`), when the message names one. */
  taskId: string;
  /** The repository the remedy is about (`listTasks`, `trustRepository`), when it names one. */
  workspace: string;
  /** The command argument the message talks of (`nameArgument`): `agent`, `brief`, `feedback`, `package`, `test_command` (each face names it its own way). */
  argument: string;
  before: string;
  after: string;
}

export interface TaskResolveConflictsArgs {
  taskId: string;
  /** For each conflicted path: keep `mine` (the workspace file as it is), take `theirs` (the task's version) or write git-style conflict `markers` into the workspace file. */
  choices: Record<string, "mine" | "theirs" | "markers">;
  workspace?: string | null;
}

/** How a task ended. */
export interface TaskResult {
  status: "completed" | "failed" | "cancelled";
  /** True only when the change was proved by named tests (proof status verified); never from an exit code alone. */
  verified: boolean;
  /** The verdict and its evidence (when the tests ran). */
  proof: Proof | null;
  /** The last test run (completed and failed tasks, when the tests ran). */
  tests: TestRun | null;
  /** What the apply wrote (completed tasks). */
  apply: ApplyResult | null;
  /** True when the person left hunks out: only part of the change was applied. The proof covered the whole change, so a partial apply is never `verified`. */
  partial: boolean;
  /** The files the change touches (completed tasks). */
  files: string[];
  /** Why it failed (failed tasks). */
  error: TaskError | null;
}

/** The full state of one task run. `revision` increases with every change. */
export interface TaskSnapshot {
  id: string;
  workspace: string;
  brief: string;
  /** REQUIREMENTS, WAITING_FOR_USER, PLANNING, WAITING_FOR_PLAN_APPROVAL, IMPLEMENTING, VERIFYING, WAITING_FOR_COMPLETION_APPROVAL, APPLYING, WAITING_FOR_SAVE (applied into buffers that held unsaved edits: complete once saved), COMPLETED, FAILED or CANCELLED; INTERRUPTED when a working step's process stopped (a killed server) and nothing works on it now: `autocode.task.resume` continues it. */
  state: string;
  /** For INTERRUPTED: the working state the step stopped in. */
  interruptedIn: string | null;
  phase: string;
  revision: number;
  needs: Needs;
  done: boolean;
  /** How the task ended (null while it runs). */
  result: TaskResult | null;
  /** Why the task failed (null unless it did). */
  error: TaskError | null;
  /** What completion learned into `.autocode/project.json`. */
  learning: Learning | null;
  runDir: string;
  /** The prep copy the task works in. */
  copy: string | null;
  /** The latest plan revision (0 before the first plan). */
  planRevision: number;
  humanPauseStates: string[];
  created: string;
  updated: string;
  /** The answer ledger: every answer with how it was given. */
  answers: AnswerRecord[];
  /** The model's work with an OpenAI-compatible provider (per role, usage summed); null with the fixture provider. */
  agent: AgentStatus | null;
}

export interface TaskStartArgs {
  brief: string;
  workspace?: string | null;
  /** A package folder inside a monorepo; the learned test command is then not used. */
  package?: string | null;
  /** Overrides every other source of the test command for this task (the `flag` layer). */
  testCommand?: string | null;
  /** Make a checked prep copy with these declared inputs first (see `autocode.prep.run`). */
  manifest?: string | null;
}

/** The model's work in a task as a Markdown page (the agent loops' transcripts, readable). */
export interface TaskTranscript {
  /** transcript.md in the run folder, written by this call: an editor can open it. */
  path: string;
  markdown: string;
}

/** The project's test command as run in the prep copy (its full output is in `evidence/test-output.txt`). */
export interface TestRun {
  command: string;
  /** The folder the command ran in, by name (the prep copy's, or the package's within it). */
  cwd: string;
  /** The command's exit code (127 when it could not be started; negative when it was killed). */
  exitCode: number;
  status: "finished" | "timed_out" | "cancelled" | "could_not_run";
  seconds: number;
  /** The last 8000 characters of its output. */
  outputTail: string;
  /** What confined the command: `bwrap`, or `none` when it ran without a sandbox (`sandbox = "off"`). */
  sandbox: string;
  /** What the sandbox did beyond the rule (folders shown from the workspace, names refused). */
  sandboxNotes: string[];
}

/** Token counts the endpoint reported. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface TrustArgs {
  workspace?: string | null;
  /** `true` records the person's trust; without it the command only says what the repository asks. */
  confirm?: boolean;
  /** With `confirm`: the `digest` of the values the person was shown (a `trustRequired` error's `data.digest`, or this command's answer without `confirm`). */
  digest?: string | null;
  /** `true` forgets the person's trust in this repository instead. */
  revoke?: boolean;
}

/** What the repository's files ask for, in words, and whether its person trusted exactly that. */
export interface TrustResult {
  workspace: string;
  /** `nothing-asked`, `trusted`, `not-trusted` or `changed` (trusted before, with other values). */
  status: string;
  /** True when the repository's destination values apply (trusted, or it sets none). */
  trusted: boolean;
  /** One sentence per destination, for the editor's one prompt ("send the variable X to URL"). */
  says: string[];
  /** Pass it back with `confirm: true` to trust exactly these values. */
  digest: string;
  /** Each value: `name`, `value` (passwords masked), `origin`, `source`. */
  asks: Record<string, unknown>[];
  /** True when this call recorded (or, with `revoke`, removed) a trust record. */
  recorded?: boolean;
}

export interface VerifyArgs {
  workspace?: string | null;
  /** Commits `A..B`: B is the change, A its base. Default: the work tree against HEAD. */
  range?: string | null;
  /** A branch, against its merge base with HEAD. */
  branch?: string | null;
  /** The test command for this verification only (never learned). */
  testCommand?: string | null;
}

export interface VerifyResult {
  /** What was verified, in words (the work tree against HEAD, or a range of commits). */
  change: string;
  files: string[];
  /** The folder holding `proof.json`, `tests.json` and the test output. */
  evidence: string;
  /** The verdict; `proof.verified` is true only for `verified`. */
  proof: Proof;
}

export interface WorkspaceArgs {
  /** A folder path or `file://` URI. Default: the session's workspace folder. */
  workspace?: string | null;
}

/** Every command by name: its arguments and its result. */
export interface Commands {
  "autocode.protocol.info": { arguments: NoArgs; result: ProtocolInfo };
  "autocode.doctor": { arguments: WorkspaceArgs; result: DoctorResult };
  "autocode.verify": { arguments: VerifyArgs; result: VerifyResult };
  "autocode.project.forget": { arguments: ForgetArgs; result: ForgetResult };
  "autocode.project.trust": { arguments: TrustArgs; result: TrustResult };
  "autocode.prep.run": { arguments: PrepRunArgs; result: PrepResult };
  "autocode.task.start": { arguments: TaskStartArgs; result: TaskSnapshot };
  "autocode.task.answer": { arguments: TaskAnswerArgs; result: TaskSnapshot };
  "autocode.task.approvePlan": { arguments: TaskApprovePlanArgs; result: TaskSnapshot };
  "autocode.task.rejectPlan": { arguments: TaskRejectPlanArgs; result: TaskSnapshot };
  "autocode.task.approveCompletion": { arguments: TaskApproveCompletionArgs; result: TaskSnapshot };
  "autocode.task.resolveConflicts": { arguments: TaskResolveConflictsArgs; result: TaskSnapshot };
  "autocode.task.cancel": { arguments: TaskRefArgs; result: TaskSnapshot };
  "autocode.task.resume": { arguments: TaskRefArgs; result: TaskSnapshot };
  "autocode.task.retryVerification": { arguments: TaskRefArgs; result: TaskSnapshot };
  "autocode.task.preview": { arguments: TaskPreviewArgs; result: TaskPreview };
  "autocode.task.get": { arguments: TaskRefArgs; result: TaskSnapshot };
  "autocode.task.list": { arguments: WorkspaceArgs; result: TaskList };
  "autocode.task.transcript": { arguments: TaskRefArgs; result: TaskTranscript };
  "autocode.memory.save": { arguments: MemorySaveArgs; result: SaveResult };
  "autocode.memory.search": { arguments: MemorySearchArgs; result: SearchResult };
  "autocode.memory.delete": { arguments: MemoryDeleteArgs; result: MemoryDeleteResult };
  "autocode.memory.list": { arguments: MemoryListArgs; result: MemoryList };
  "autocode.memory.recall": { arguments: MemoryRecallArgs; result: RecallView };
  "autocode.memory.planPromotion": { arguments: MemoryPlanPromotionArgs; result: PromotionPlan };
  "autocode.memory.applyPromotion": { arguments: MemoryApplyPromotionArgs; result: PromotionApplied };
  "autocode.task.ask": { arguments: TaskAskArgs; result: TaskSnapshot };
  "autocode.task.review": { arguments: TaskRefArgs; result: OpenedDocument };
  "autocode.task.requestChanges": { arguments: TaskRefArgs; result: OpenedDocument };
  "autocode.task.compose": { arguments: WorkspaceArgs; result: OpenedDocument };
  "autocode.doctor.open": { arguments: WorkspaceArgs; result: OpenedDocument };
  "autocode.memory.composeSearch": { arguments: WorkspaceArgs; result: OpenedDocument };
  "autocode.session.configure": { arguments: SessionConfigureArgs; result: SessionSettings };
  "autocode.provider.check": { arguments: WorkspaceArgs; result: ProviderCheck };
}

/** Every method by name: its params and its result. */
export interface Methods {
  "autocode/task/didChange": { params: TaskDidChangeParams; result: null };
  "autocode/task/askQuestion": { params: AskQuestionParams; result: AskQuestionResult };
  "autocode/task/saveDocuments": { params: SaveDocumentsParams; result: SaveDocumentsResult };
  "autocode/task/reviewPlan": { params: ReviewPlanParams; result: ReviewPlanResult };
}

/** Every command name, under a constant (use these, never a copied string). */
export const COMMANDS = {
  protocolInfo: "autocode.protocol.info",
  doctor: "autocode.doctor",
  verify: "autocode.verify",
  projectForget: "autocode.project.forget",
  projectTrust: "autocode.project.trust",
  prepRun: "autocode.prep.run",
  taskStart: "autocode.task.start",
  taskAnswer: "autocode.task.answer",
  taskApprovePlan: "autocode.task.approvePlan",
  taskRejectPlan: "autocode.task.rejectPlan",
  taskApproveCompletion: "autocode.task.approveCompletion",
  taskResolveConflicts: "autocode.task.resolveConflicts",
  taskCancel: "autocode.task.cancel",
  taskResume: "autocode.task.resume",
  taskRetryVerification: "autocode.task.retryVerification",
  taskPreview: "autocode.task.preview",
  taskGet: "autocode.task.get",
  taskList: "autocode.task.list",
  taskTranscript: "autocode.task.transcript",
  memorySave: "autocode.memory.save",
  memorySearch: "autocode.memory.search",
  memoryDelete: "autocode.memory.delete",
  memoryList: "autocode.memory.list",
  memoryRecall: "autocode.memory.recall",
  memoryPlanPromotion: "autocode.memory.planPromotion",
  memoryApplyPromotion: "autocode.memory.applyPromotion",
  taskAsk: "autocode.task.ask",
  taskReview: "autocode.task.review",
  taskRequestChanges: "autocode.task.requestChanges",
  taskCompose: "autocode.task.compose",
  doctorOpen: "autocode.doctor.open",
  memoryComposeSearch: "autocode.memory.composeSearch",
  sessionConfigure: "autocode.session.configure",
  providerCheck: "autocode.provider.check",
} as const;

/** Every method name, under a constant (use these, never a copied string). */
export const METHODS = {
  taskDidChange: "autocode/task/didChange",
  taskAskQuestion: "autocode/task/askQuestion",
  taskSaveDocuments: "autocode/task/saveDocuments",
  taskReviewPlan: "autocode/task/reviewPlan",
} as const;

export type CommandName = keyof Commands;
export type CommandArguments<K extends CommandName> = Commands[K]["arguments"];
export type CommandResult<K extends CommandName> = Commands[K]["result"];
export type MethodName = keyof Methods;
export type MethodParams<K extends MethodName> = Methods[K]["params"];
export type MethodResult<K extends MethodName> = Methods[K]["result"];
