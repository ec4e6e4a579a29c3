-- Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.
-- LuaLS annotations of the AutoCode protocol's shapes (wire names, camelCase); no code runs here.
---@meta

--- The limits an agent loop ran under.
---@class autocode.AgentBudgets
---@field maxTurns integer
---@field tokenBudget integer
---@field timeBudget number Seconds.

--- One role's work with the model (a tool loop, an edit-block loop, or plain JSON requests).
---@class autocode.AgentRole
---@field role string
---@field mode 'tools'|'edit_blocks'|'json'|'engine' tools (a tool loop), edit_blocks (the endpoint takes no tools), json (plain requests) or engine (an agent CLI played the role: `engine` names it).
---@field fallbackReason string|nil Why the loop fell back to edit blocks.
---@field turns integer Requests made.
---@field toolCalls integer
---@field usage autocode.TokenUsage
---@field seconds number|nil Time spent (loops only).
---@field budgets autocode.AgentBudgets|nil The loop's limits (loops only).
---@field stopped string|nil answered, max_turns, token_budget or time_budget once the loop ended; null while it runs.
---@field transcript string|nil The loop's transcript file in the run's agent folder.
---@field summary string|nil The model's final answer once the loop answered (its reasoning left out); null before.
---@field engine string|nil The agent CLI that played the role (mode engine), e.g. claude-code or aider.
---@field engineVersion string|nil Its version, as `--version` printed it.
---@field costUsd number|nil The cost the engine reported, in US dollars (null when it reports none).

--- The model's work in a task: per role, with usage summed over them.
---@class autocode.AgentStatus
---@field roles table<string, autocode.AgentRole> Per role (investigator, requirements, planner, implementer, reviewer) that asked the model.
---@field usage autocode.TokenUsage Summed over the roles.
---@field editBlocksFallback string[] Roles whose endpoint took no tools (they worked with edit blocks).

---@class autocode.AnswerQuestions
---@field kind 'answer_questions'
---@field questions autocode.Question[] The open questions; a client may ask them one by one.

--- One answer in the task's ledger.
---@class autocode.AnswerRecord
---@field questionId string
---@field text string
---@field how string typed, chosen, acceptedDefault, delegated (or machine for the model's own decisions).
---@field kind string The ledger kind: human (typed or chosen), proposed_default, delegated or machine.
---@field channel string|nil
---@field time string|nil

--- One attempt to apply the verified change to the work tree.
---@class autocode.ApplyResult
---@field status 'applied'|'conflicts'|'not_applied'
---@field applied boolean
---@field written string[] Files written (through the editor or on disk).
---@field writtenByEditor string[] The files the editor changed (unsaved edits and undo kept).
---@field conflicts string[] Paths both the person and the task changed (nothing was written).
---@field via 'editor'|'disk'|nil
---@field choices table<string, string> The person's choice per conflicted file that this apply used.
---@field headMoved autocode.HeadMoved|nil
---@field message string What happened, in words a person can read.
---@field unsaved string[] Files changed in the editor's buffers and not on disk yet (they held unsaved edits, kept and merged): the task completes once each is saved with the change; a file given conflict markers, once its file on disk holds something other than before the apply (the markers resolved or not).
---@field hunksKept string[] With a per-hunk choice: the ids of the hunks applied.
---@field hunksUndone string[] With a per-hunk choice: the ids of the hunks the person left out (not applied).

---@class autocode.ApproveCompletion
---@field kind 'approve_completion'
---@field diff string The verified change, as a unified diff against the prep copy's base.
---@field files string[]
---@field tests autocode.TestRun|nil The test run in the copy.
---@field proof autocode.Proof|nil The verdict on the change, by named tests.
---@field confirmation string|nil Set when applying needs the person's typed confirmation (the change is unproven or weakens the tests): the word to send as `confirm`.
---@field review autocode.Review|nil
---@field headMoved autocode.HeadMoved|nil Set when HEAD moved since the task started (shown before applying).
---@field apply autocode.ApplyResult|nil The last apply attempt when it did not go through (e.g. the editor refused the edit).

---@class autocode.ApprovePlan
---@field kind 'approve_plan'
---@field planRevision integer The plan revision to approve (`autocode.task.approvePlan`'s `revision`).
---@field plan autocode.Plan
---@field markdown string The plan as Markdown.
---@field planUri string|nil `file://` URI of the plan document (what `window/showDocument` opens).

---@class autocode.AskQuestionParams
---@field taskId string
---@field revision integer
---@field question autocode.Question

---@class autocode.AskQuestionResult
---@field answer? string|nil `null` leaves the question open (it can be answered later with `autocode.task.answer`), unless `how` is `acceptedDefault` or `delegated`.
---@field how? 'typed'|'chosen'|'acceptedDefault'|'delegated'|nil As in `autocode.task.answer`.

---@class autocode.Conflict
---@field path string
---@field reason 'overlap'|'deletedInWorkspace'|'deletedByTask'|'renamed'
---@field hunks autocode.ConflictHunk[]

--- Where the two sides changed the same lines (1-based lines; 0 lines means an insertion point).
---@class autocode.ConflictHunk
---@field mineStart integer
---@field mineLines integer
---@field theirsStart integer
---@field theirsLines integer

---@class autocode.DoctorResult
---@field report table<string, any> The engine's doctor report (the shape of `autocode doctor --json`).
---@field text string The same report as readable text; the server also logs it.

--- `data.kind` of a JSON-RPC error (docs/protocol.md says what each means).
---@alias autocode.ErrorKind 'invalidArguments'|'noRepository'|'confirmationRequired'|'taskNotFound'|'notAwaitingInput'|'alreadyDecided'|'planRevisionMismatch'|'memoryRefused'|'memoryNotFound'|'memoryStoreUnavailable'|'setupError'|'manifestInvalid'|'inputIgnored'|'preflightFailed'|'aliasToIgnored'|'changedDuringCopy'|'unreadableFile'|'copyFailed'|'workspaceInvalid'|'destinationUnsafe'|'autocodeFolderUnsafe'|'taskDamaged'|'emptyChange'|'patchDoesNotApply'|'noTestCommand'|'sandboxUnavailable'|'testsFailed'|'testsRegressed'|'copyGone'|'hunksChanged'|'budgetExhausted'|'agentLoop'|'skillConflict'|'fileSystemFault'|'noSpace'|'readOnly'|'permissionDenied'|'tooDeep'|'settingsError'|'providerError'|'gitError'|'refused'|'trustRequired'|'trustChanged'|'notAvailable'|'taskChoiceNeeded'|'cancelled'|'engineMissing'|'engineVersion'|'engineLogin'|'engineIdle'|'engineCrashed'|'engineNetwork'|'engineRefused'|'workspaceOutsideSession'|'manifestOutsideWorkspace'|'clientOverrideRefused'|'unauthorized'|'serverNotInitialized'

--- A memory removed because its agent's bucket went over the cap.
---@class autocode.Eviction
---@field id string
---@field owner string|nil
---@field repository string|nil
---@field createdAt string
---@field excerpt string

--- One touched file as applying would leave it.
---@class autocode.FilePreview
---@field path string
---@field action 'write'|'delete'|'none'|'conflict' conflict: both sides changed the same lines (or one deleted the file).
---@field reason string|nil For a conflict: overlap, deletedInWorkspace, deletedByTask or renamed.
---@field binary boolean A file with no lines to show (its texts are null).
---@field mine string|nil The person's text now (the editor's buffer when given or open, else the disk); null when absent.
---@field merged string|nil What applying writes (with conflict markers for a conflict); null when the file is removed.
---@field hunks autocode.PreviewHunk[]

---@class autocode.ForgetArgs
---@field workspace? string|nil
---@field confirm? boolean Must be `true`: forgetting removes the learned record for good.

---@class autocode.ForgetResult
---@field removed boolean
---@field path string

---@class autocode.HeadMoved
---@field from string|nil On the wire: `from`.
---@field to string|nil

--- What completion learned into `.autocode/project.json`.
---@class autocode.Learning
---@field status 'pending'|'done'|'failed' pending until the task completed and learning ran.
---@field written boolean Whether the project record was written.
---@field path string|nil The project record's path.
---@field conventions string[] Ids of the questions whose answers were learned as conventions.
---@field droppedForCredentials string[] Ids of answers not learned because they carry a credential.
---@field omitted string[] What the record left out, in words.
---@field errors string[] The record's problems (status failed).
---@field error string|nil Set when learning itself broke (status failed); completion stands.
---@field framework string|nil
---@field testCommand string|nil The test command learned (only after it passed, never for --package runs).

---@class autocode.MemoryApplyPromotionArgs
---@field ids string[] Ids of memories from a plan returned by `autocode.memory.planPromotion`.
---@field workspace? string|nil

---@class autocode.MemoryDeleteArgs
---@field id string
---@field workspace? string|nil
---@field agent? string|nil

--- The memory a delete removed.
---@class autocode.MemoryDeleteResult
---@field deleted autocode.MemoryView

--- Memories in a listing, newest first.
---@class autocode.MemoryList
---@field memories autocode.MemoryView[]

---@class autocode.MemoryListArgs
---@field workspace? string|nil
---@field scope? 'all'|'project'|'global'
---@field owner? 'all'|'self'|'team'
---@field agent? string|nil

---@class autocode.MemoryPlanPromotionArgs
---@field workspace? string|nil

---@class autocode.MemoryRecallArgs
---@field brief string
---@field workspace? string|nil
---@field agent? string|nil

---@class autocode.MemorySaveArgs
---@field content string
---@field workspace? string|nil
---@field category? string|nil
---@field scope? 'project'|'global'|nil Default: `project` when the session has a repository, else `global`.
---@field shared? boolean With `agent`: `true` saves a team memory, `false` a memory of that agent only.
---@field agent? string|nil The agent whose memory this is. Default: none, a person saving for the team.

---@class autocode.MemorySearchArgs
---@field query string
---@field workspace? string|nil
---@field scope? 'all'|'project'|'global'
---@field owner? 'all'|'self'|'team'
---@field limit? integer
---@field agent? string|nil

---@class autocode.MemoryStoresInfo
---@field open integer Memory services this server process holds open now (one per distinct store configuration).
---@field opened integer Memory services opened since the process started; repeated memory commands on one configuration reuse its service, so this grows only with new configurations.

--- One memory. `scope` is `project` or `global`; `shared` means a team memory (no owner).
---@class autocode.MemoryView
---@field id string
---@field content string
---@field category string|nil
---@field scope string
---@field repository string|nil The portable repository key (never a path of this machine) of a project memory.
---@field owner string|nil The agent the memory belongs to; null for a team memory.
---@field shared boolean
---@field createdAt string
---@field updatedAt string
---@field runId string|nil
---@field score number|nil Relevance for search and recall results; null elsewhere.

---@alias autocode.Needs autocode.NoNeeds|autocode.AnswerQuestions|autocode.ApprovePlan|autocode.ApproveCompletion|autocode.ResolveConflicts|autocode.SaveFiles

--- The command takes no arguments (an empty object or no argument at all).
---@class autocode.NoArgs

--- The task is working or has ended: it waits for nobody.
---@class autocode.NoNeeds
---@field kind nil

--- A file the server wrote for the person to read or fill in, and whether it asked the editor to open it (`window/showDocument`); otherwise its path was shown in a message.
---@class autocode.OpenedDocument
---@field path string
---@field uri string
---@field shown boolean

--- The plan a person approves before anything is changed.
---@class autocode.Plan
---@field summary string
---@field steps string[]
---@field citations string[] Files (and answers, as `answer:<id>`) the plan rests on.
---@field acceptanceCriteria string[]

--- A checked prep copy; it stays on disk (`copy`) for inspection and for tasks.
---@class autocode.PrepResult
---@field id string
---@field workspace string|nil
---@field copy string
---@field head string|nil
---@field inputs table<string, any>[] The declared inputs, each verified in the workspace and in the copy.
---@field counts table<string, any>
---@field nestedComponents any[]
---@field handoff table<string, any>|nil

---@class autocode.PrepRunArgs
---@field workspace? string|nil
---@field manifest? string|nil Path of a JSON manifest of declared public inputs (relative to the workspace or absolute).

--- One change between the person's text and the merged result (1-based lines; 0 lines is an insertion point before `start`).
---@class autocode.PreviewHunk
---@field id string Stable while the hunk's own lines are the same (edits elsewhere in the file keep it).
---@field mineStart integer
---@field mineLines integer
---@field mergedStart integer
---@field mergedLines integer
---@field overlaps boolean The hunk touches lines the person changed since the task started.
---@field conflict boolean git could not merge these lines: the merged text holds conflict markers here.

--- Skills made from team memories, and the memories that became them.
---@class autocode.PromotionApplied
---@field skills autocode.SkillView[]
---@field removed string[] Ids of the memories that became skills (and are gone).

--- A team memory that could become a skill, and the skill it would be.
---@class autocode.PromotionCandidate
---@field memoryId string
---@field name string
---@field description string
---@field category string|nil
---@field content string
---@field agents string[] The roles the skill would be given to.
---@field scope string
---@field repository string|nil

--- Team memories worth turning into skills (nothing is written until they are applied).
---@class autocode.PromotionPlan
---@field scanned integer Team memories looked at.
---@field candidates autocode.PromotionCandidate[]

--- The verdict on the change, proved by named tests (evidence in `evidence/proof.json`).
---@class autocode.Proof
---@field status 'verified'|'unproven'|'regressed'|'failed' verified: a named test failed before the change and passes with it, and nothing regressed; unproven: nothing proves the change; regressed: a test that passed before no longer does; failed.
---@field verified boolean True only for status verified.
---@field summary string
---@field proofs string[] Tests that failed on the base and pass with the change.
---@field regressions autocode.Regression[]
---@field failing string[] Tests that fail with the change.
---@field alreadyFailing string[] Tests that failed before the change too (not counted against it).
---@field reasons string[] Why the verdict is not verified, in words.
---@field concerns autocode.ProofConcern[]
---@field testFiles string[] The change's test files.
---@field runs autocode.ProofRun[]

--- Something in the change that weakens the tests (a person sees it before approving).
---@class autocode.ProofConcern
---@field kind string testDeleted, testRenamed, skipAdded, assertionRemoved, assertionLoosened, expectationChanged, testConfigChanged, testOnlyChange, ...
---@field path string The file ("" for the change as a whole).
---@field sentence string The concern in words a person can read.
---@field line integer|nil 1-based, in the new file (in the base file for what the change removed).

--- One run of the suite behind the verdict.
---@class autocode.ProofRun
---@field role 'candidate'|'base'|'probe' candidate (with the change), base (before it) or probe (the change's tests over the base source).
---@field command string
---@field status string
---@field exitCode integer|nil
---@field seconds number
---@field sandbox string The sandbox that confined the run (bwrap), or none.
---@field framework string
---@field perTest boolean Whether the run gave per-test results.
---@field reason string|nil
---@field counts table<string, integer> Tests per outcome (passed, failed, error, skipped).
---@field cached boolean The base run came from the cache (same base tree and command).

---@class autocode.ProtocolInfo
---@field protocolVersion string
---@field serverVersion string
---@field features string[]
---@field commands string[]
---@field clientOptedIn boolean Whether this session receives the `autocode/*` notifications and requests.
---@field workspaces string[] The session's workspace folders as paths (empty: no repository in context).
---@field memoryStores autocode.MemoryStoresInfo The server process's memory services (shared by every session of the process).

--- `autocode doctor --check-provider` for the session: one tiny request to the implementer's endpoint.
---@class autocode.ProviderCheck
---@field check table<string, any> The endpoint, model, family, whether the key variable is set (never its value), tool support, the result.
---@field text string The same as readable lines.

--- One question a task asks a person.
---@class autocode.Question
---@field id string
---@field text string
---@field category string|nil
---@field convention string|nil Set when the answer may be learned as a project convention.
---@field default string|nil The proposed default answer, if any.
---@field choices string[] Answers a client may offer as buttons (the proposed default when there is one).

--- What a task would be given at its start for a brief, in two sections.
---@class autocode.RecallView
---@field method string
---@field reason string
---@field repository string|nil
---@field project autocode.MemoryView[]
---@field global autocode.MemoryView[]
---@field text string Both sections as Markdown, as a task would receive them.

--- Why content is not a memory, where it belongs instead, and a durable version when there is one.
---@class autocode.Refusal
---@field kind string What made it task-bound: `task_key`, `credential`, `machine_path`, ...
---@field reason string
---@field belongs string Where the note belongs instead.
---@field suggestion? string|nil A durable version of the content that could be saved instead.

--- A test that passed on the base and does not pass with the change.
---@class autocode.Regression
---@field id string
---@field base string
---@field now string failed, error, skipped or missing.

---@class autocode.ResolveConflicts
---@field kind 'resolve_conflicts'
---@field conflicts autocode.Conflict[] The conflicted files (nothing was written yet).
---@field files string[]
---@field headMoved autocode.HeadMoved|nil
---@field apply autocode.ApplyResult

--- The reviewer's verdict on the verified change.
---@class autocode.Review
---@field summary string
---@field concerns string[] What the reviewer thinks a person should look at before applying.
---@field lessons string[] Repository-independent lessons offered to memory reflection at completion.

---@class autocode.ReviewPlanParams
---@field taskId string
---@field revision integer
---@field planRevision integer
---@field plan string The plan as Markdown.
---@field planUri string|nil

---@class autocode.ReviewPlanResult
---@field decision 'approve'|'reject'|'later'
---@field feedback? string|nil Required when `decision` is `reject`.

---@class autocode.SaveDocumentsParams
---@field taskId string
---@field uris string[] Documents the change just went into through `workspace/applyEdit` that held no unsaved edits before it: save each one as it is now.

---@class autocode.SaveDocumentsResult
---@field saved string[] The URIs the editor saved. The server reads the disk back; a file not saved is never written behind its open buffer: the task waits for the person's save.

---@class autocode.SaveFiles
---@field kind 'save_files'
---@field paths string[] The files whose change is in the editor's buffer but not on disk: save them to complete.
---@field apply autocode.ApplyResult

--- A refused save is the error `memoryRefused` on the wire (exit 3 in the CLI); these are all outcomes.
---@class autocode.SaveResult
---@field saved boolean
---@field id? string|nil The new memory's id when `saved`.
---@field duplicateOf? string|nil Id of the memory that already says the same thing (then `saved` is false).
---@field duplicateMethod? string|nil How the duplicate was found: `exact`, `terms` or `meaning`.
---@field skill? string|nil Name of the skill made instead, when the content is reusable know-how.
---@field refused? autocode.Refusal|nil Why the content was not saved (the server sends this as the `memoryRefused` error instead).
---@field evicted? autocode.Eviction[] Oldest memories removed because the agent's bucket went over its cap.
---@field scope? string|nil
---@field repository? string|nil
---@field similarTo? string|nil Id of the closest memory when this one was saved beside it because they differ in a number, identifier, quoted token, negation or word (nothing is merged away unless it says the same thing).
---@field message? string What happened, in words a person can read.

--- Memories found for a query, best first.
---@class autocode.SearchResult
---@field query string
---@field method string How results were ranked: by meaning and keywords, or keywords and recency.
---@field memories autocode.MemoryView[]

--- The model settings an editor holds for its person, for this session's tasks and checks.
---@class autocode.SessionConfigureArgs
---@field provider? string|nil
---@field model? string|nil
---@field baseUrl? string|nil
---@field engine? string|nil Which engine runs the implementer, where this server knows the `engine` setting.
---@field apiKeyEnv? string|nil The variable the key is read from. Default: the `api_key_env` setting, else the provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY).
---@field apiKey? string|nil The provider's key, kept in the server process's memory only (never logged, never written); an empty string forgets it. Left out: the key given before stays.

--- What this session's tasks and checks get from the editor.
---@class autocode.SessionSettings
---@field settings table<string, string> The values given, as the flag layer of every task this session starts.
---@field ignored string[] Names this server does not know as settings (an older engine), so not used.
---@field apiKeyEnv string|nil
---@field apiKeySet boolean Whether a key from the editor is held (its value is never sent back).

--- One skill: know-how given to agents, made from a memory or written by a person.
---@class autocode.SkillView
---@field id string
---@field name string
---@field owner string|nil The agent the skill belongs to; null for a team skill.
---@field description string
---@field category string|nil
---@field content string
---@field scope string
---@field repository string|nil The portable repository key of a project skill.
---@field origin string
---@field sourceMemoryId string|nil
---@field createdAt string

---@class autocode.TaskAnswerArgs
---@field taskId string
---@field questionId string
---@field text? string The answer; may be empty with `how` `acceptedDefault` or `delegated`.
---@field how? 'typed'|'chosen'|'acceptedDefault'|'delegated'|nil How the person answered. Only `typed` and `chosen` are the person's own answer and may be learned. Missing: a `text` equal to the question's `default` is `acceptedDefault`, else `typed`.
---@field workspace? string|nil

---@class autocode.TaskApproveCompletionArgs
---@field taskId string
---@field confirm? string|nil The word `needs.confirmation` names (`unproven`), typed by the person, when the change is not proved by named tests or weakens them; refused with `confirmationRequired` without it.
---@field keep? string[]|nil The ids of the hunks the person kept (from `autocode.task.preview`); the others are left out of the apply. Default: every hunk. An id the change no longer has is refused (`hunksChanged`, nothing written).
---@field workspace? string|nil

---@class autocode.TaskApprovePlanArgs
---@field taskId string
---@field revision integer The plan revision the person reviewed; a newer plan fails with `planRevisionMismatch`.
---@field workspace? string|nil

---@class autocode.TaskAskArgs
---@field taskId string
---@field questionId? string|nil Which open question; default: the first one still open.
---@field workspace? string|nil

---@class autocode.TaskDidChangeParams
---@field task autocode.TaskSnapshot
---@field revision integer Equal to `task.revision`; a client drops a notification older than the last it saw.

--- Why a task failed.
---@class autocode.TaskError
---@field kind string The error kind (`testsFailed`, `budgetExhausted`, `internalError`, ...; see the error table).
---@field message string
---@field phase string The phase the task was in when it failed.
---@field remedy autocode.TaskRemedy|nil The remedy in `message` as data, when it has one a face words its own way.

---@class autocode.TaskList
---@field tasks autocode.TaskSnapshot[]

--- What approving the completion would do, before anything is written.
---@class autocode.TaskPreview
---@field taskId string
---@field revision integer The task revision the preview was made from.
---@field files autocode.FilePreview[]
---@field overlaps integer Hunks that touch the person's own edits, over all files.
---@field conflicts integer Hunks git could not merge, over all files.

---@class autocode.TaskPreviewArgs
---@field taskId string
---@field documents? table<string, string>|nil The texts the editor holds now, by workspace-relative path or `file://` URI (unsaved edits included). A touched file not given here is read from the documents the client synchronises, else from disk.
---@field workspace? string|nil

---@class autocode.TaskRefArgs
---@field taskId string
---@field workspace? string|nil Where the task lives. Default: the session's folders are searched for the task.

---@class autocode.TaskRejectPlanArgs
---@field taskId string
---@field feedback string
---@field workspace? string|nil

--- The remedy in a failed task's message as data: the message is `before`, the remedy in the reader's words, then `after` (`message` has the CLI's words; each face words it its own way).
---@class autocode.TaskRemedy
---@field kind 'setSettings'|'setTestCommand'|'turnOffSandbox'|'useRealModel'|'resumeTask'|'giveWorkspace'|'listTasks'|'listMemories'|'trustRepository'|'nameArgument' What the person can do (`autocode.remedy.RemedyKind`).
---@field keys string[] The settings to set (`setSettings`): `base_url`, `model`.
---@field taskId string The task to resume (`resumeTask`), when the message names one.
---@field workspace string The repository the remedy is about (`listTasks`, `trustRepository`), when it names one.
---@field argument string The command argument the message talks of (`nameArgument`): `agent`, `brief`, `feedback`, `package`, `test_command` (each face names it its own way).
---@field before string
---@field after string

---@class autocode.TaskResolveConflictsArgs
---@field taskId string
---@field choices table<string, 'mine'|'theirs'|'markers'> For each conflicted path: keep `mine` (the workspace file as it is), take `theirs` (the task's version) or write git-style conflict `markers` into the workspace file.
---@field workspace? string|nil

--- How a task ended.
---@class autocode.TaskResult
---@field status 'completed'|'failed'|'cancelled'
---@field verified boolean True only when the change was proved by named tests (proof status verified); never from an exit code alone.
---@field proof autocode.Proof|nil The verdict and its evidence (when the tests ran).
---@field tests autocode.TestRun|nil The last test run (completed and failed tasks, when the tests ran).
---@field apply autocode.ApplyResult|nil What the apply wrote (completed tasks).
---@field partial boolean True when the person left hunks out: only part of the change was applied. The proof covered the whole change, so a partial apply is never `verified`.
---@field files string[] The files the change touches (completed tasks).
---@field error autocode.TaskError|nil Why it failed (failed tasks).

--- The full state of one task run. `revision` increases with every change.
---@class autocode.TaskSnapshot
---@field id string
---@field workspace string
---@field brief string
---@field state string REQUIREMENTS, WAITING_FOR_USER, PLANNING, WAITING_FOR_PLAN_APPROVAL, IMPLEMENTING, VERIFYING, WAITING_FOR_COMPLETION_APPROVAL, APPLYING, WAITING_FOR_SAVE (applied into buffers that held unsaved edits: complete once saved), COMPLETED, FAILED or CANCELLED; INTERRUPTED when a working step's process stopped (a killed server) and nothing works on it now: `autocode.task.resume` continues it.
---@field interruptedIn string|nil For INTERRUPTED: the working state the step stopped in.
---@field phase string
---@field revision integer
---@field needs autocode.Needs
---@field done boolean
---@field result autocode.TaskResult|nil How the task ended (null while it runs).
---@field error autocode.TaskError|nil Why the task failed (null unless it did).
---@field learning autocode.Learning|nil What completion learned into `.autocode/project.json`.
---@field runDir string
---@field copy string|nil The prep copy the task works in.
---@field planRevision integer The latest plan revision (0 before the first plan).
---@field humanPauseStates string[]
---@field created string
---@field updated string
---@field answers autocode.AnswerRecord[] The answer ledger: every answer with how it was given.
---@field agent autocode.AgentStatus|nil The model's work with an OpenAI-compatible provider (per role, usage summed); null with the fixture provider.

---@class autocode.TaskStartArgs
---@field brief string
---@field workspace? string|nil
---@field package? string|nil A package folder inside a monorepo; the learned test command is then not used.
---@field testCommand? string|nil Overrides every other source of the test command for this task (the `flag` layer).
---@field manifest? string|nil Make a checked prep copy with these declared inputs first (see `autocode.prep.run`).

--- The model's work in a task as a Markdown page (the agent loops' transcripts, readable).
---@class autocode.TaskTranscript
---@field path string transcript.md in the run folder, written by this call: an editor can open it.
---@field markdown string

--- The project's test command as run in the prep copy (its full output is in `evidence/test-output.txt`).
---@class autocode.TestRun
---@field command string
---@field cwd string The folder the command ran in, by name (the prep copy's, or the package's within it).
---@field exitCode integer The command's exit code (127 when it could not be started; negative when it was killed).
---@field status 'finished'|'timed_out'|'cancelled'|'could_not_run'
---@field seconds number
---@field outputTail string The last 8000 characters of its output.
---@field sandbox string What confined the command: `bwrap`, or `none` when it ran without a sandbox (`sandbox = "off"`).
---@field sandboxNotes string[] What the sandbox did beyond the rule (folders shown from the workspace, names refused).

--- Token counts the endpoint reported.
---@class autocode.TokenUsage
---@field promptTokens integer
---@field completionTokens integer
---@field totalTokens integer

---@class autocode.TrustArgs
---@field workspace? string|nil
---@field confirm? boolean `true` records the person's trust; without it the command only says what the repository asks.
---@field digest? string|nil With `confirm`: the `digest` of the values the person was shown (a `trustRequired` error's `data.digest`, or this command's answer without `confirm`).
---@field revoke? boolean `true` forgets the person's trust in this repository instead.

--- What the repository's files ask for, in words, and whether its person trusted exactly that.
---@class autocode.TrustResult
---@field workspace string
---@field status string `nothing-asked`, `trusted`, `not-trusted` or `changed` (trusted before, with other values).
---@field trusted boolean True when the repository's destination values apply (trusted, or it sets none).
---@field says string[] One sentence per destination, for the editor's one prompt ("send the variable X to URL").
---@field digest string Pass it back with `confirm: true` to trust exactly these values.
---@field asks table<string, any>[] Each value: `name`, `value` (passwords masked), `origin`, `source`.
---@field recorded? boolean True when this call recorded (or, with `revoke`, removed) a trust record.

---@class autocode.VerifyArgs
---@field workspace? string|nil
---@field range? string|nil Commits `A..B`: B is the change, A its base. Default: the work tree against HEAD.
---@field branch? string|nil A branch, against its merge base with HEAD.
---@field testCommand? string|nil The test command for this verification only (never learned).

---@class autocode.VerifyResult
---@field change string What was verified, in words (the work tree against HEAD, or a range of commits).
---@field files string[]
---@field evidence string The folder holding `proof.json`, `tests.json` and the test output.
---@field proof autocode.Proof The verdict; `proof.verified` is true only for `verified`.

---@class autocode.WorkspaceArgs
---@field workspace? string|nil A folder path or `file://` URI. Default: the session's workspace folder.

return {}
