// Task snapshots as the Tasks view needs them: normalising the server's
// snapshot, keeping the newest revision per task, and building the tree
// nodes. No editor API here, so all of it is unit-tested under node.

import { arrayField, field, isObject, Json, JsonObject, numberField, stringField } from '../protocol';

export interface Question {
  id: string;
  text: string;
  choices: string[];
  /** Free text is accepted besides the choices. */
  allowOther: boolean;
}

export interface PlanView {
  revision: number | undefined;
  markdown: string;
  approved: boolean;
}

export interface EvidenceView {
  label: string;
  detail: string;
  ok: boolean | undefined;
}

export type Awaiting = 'answer' | 'planApproval' | 'completionApproval';

export interface TaskView {
  id: string;
  /** Workspace folder path the task belongs to ('' when unknown). */
  workspace: string;
  brief: string;
  state: string;
  phase: string;
  revision: number;
  questions: Question[];
  plan: PlanView | undefined;
  evidence: EvidenceView[];
  awaiting: Awaiting | undefined;
  done: boolean;
  /** Where the task's isolated copy lives, for the completion diff. */
  copyPath: string | undefined;
  changedFiles: string[];
  error: string | undefined;
  raw: JsonObject;
}

const TERMINAL_STATES = new Set(['completed', 'complete', 'done', 'cancelled', 'canceled', 'failed', 'error', 'rejected']);

function textOf(value: Json | undefined): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function normaliseKind(kind: string): string {
  return kind.replace(/[-_\s]/g, '').toLowerCase();
}

export function questionFrom(raw: Json, index: number): Question {
  if (typeof raw === 'string') return { id: String(index), text: raw, choices: [], allowOther: true };
  const choices = arrayField(raw, 'choices', 'options').map((c) =>
    isObject(c) ? stringField(c, 'label', 'value', 'text') ?? JSON.stringify(c) : textOf(c),
  );
  const allowOther = field(raw, 'allowOther', 'allow_other', 'allowFreeText', 'allow_free_text');
  return {
    id: stringField(raw, 'id', 'questionId', 'question_id') ?? String(index),
    text: stringField(raw, 'question', 'text', 'prompt', 'title') ?? '(question without text)',
    choices,
    allowOther: typeof allowOther === 'boolean' ? allowOther : choices.length === 0,
  };
}

function planFrom(raw: Json | undefined, needsPlanApproval: boolean, needRevision: number | undefined): PlanView | undefined {
  if (raw === undefined || raw === null) {
    return needsPlanApproval ? { revision: needRevision, markdown: '', approved: false } : undefined;
  }
  if (typeof raw === 'string') return { revision: needRevision, markdown: raw, approved: !needsPlanApproval };
  const steps = arrayField(raw, 'steps');
  let markdown = stringField(raw, 'markdown', 'text', 'body', 'content') ?? '';
  if (!markdown && steps.length > 0) {
    markdown = steps.map((s, i) => `${i + 1}. ${isObject(s) ? stringField(s, 'title', 'text', 'summary') ?? JSON.stringify(s) : textOf(s)}`).join('\n');
  }
  const approved = field(raw, 'approved');
  return {
    revision: numberField(raw, 'revision', 'planRevision', 'plan_revision') ?? needRevision,
    markdown,
    approved: typeof approved === 'boolean' ? approved : !needsPlanApproval,
  };
}

function evidenceFrom(raw: Json): EvidenceView {
  if (!isObject(raw)) return { label: textOf(raw), detail: '', ok: undefined };
  const ok = field(raw, 'ok', 'passed', 'success');
  const exit = numberField(raw, 'exitCode', 'exit_code', 'returncode');
  return {
    label: stringField(raw, 'label', 'title', 'name', 'kind', 'command') ?? 'evidence',
    detail: stringField(raw, 'summary', 'detail', 'command', 'path') ?? '',
    ok: typeof ok === 'boolean' ? ok : exit !== undefined ? exit === 0 : undefined,
  };
}

/** Turns one server snapshot (camelCase or snake_case) into what the views show. */
export function normaliseSnapshot(raw: unknown, workspace = ''): TaskView {
  if (!isObject(raw)) throw new Error('task snapshot is not an object');
  const snapshot = isObject(raw.task) ? (raw.task as JsonObject) : raw;
  const id = stringField(snapshot, 'id', 'taskId', 'task_id');
  if (!id) throw new Error('task snapshot has no id');
  const state = stringField(snapshot, 'state', 'status') ?? 'unknown';
  const phase = stringField(snapshot, 'phase') ?? state;

  const questions: Question[] = [];
  let awaiting: Awaiting | undefined;
  let planRevisionFromNeed: number | undefined;
  for (const [index, need] of arrayField(snapshot, 'needs', 'pending').entries()) {
    const kind = normaliseKind(stringField(need, 'kind', 'type') ?? 'question');
    if (kind === 'question' || kind === 'answer' || kind === 'clarification') {
      questions.push(questionFrom(need, index));
      awaiting ??= 'answer';
    } else if (kind.includes('plan')) {
      awaiting ??= 'planApproval';
      planRevisionFromNeed = numberField(need, 'revision', 'planRevision', 'plan_revision');
    } else if (kind.includes('completion') || kind.includes('complete')) {
      awaiting ??= 'completionApproval';
    }
  }
  for (const [index, q] of arrayField(snapshot, 'questions', 'pendingQuestions', 'pending_questions').entries()) {
    const question = questionFrom(q, index);
    const answered = field(q, 'answered', 'answer');
    if (answered !== undefined && answered !== null && answered !== false) continue;
    if (!questions.some((existing) => existing.id === question.id)) questions.push(question);
    awaiting ??= 'answer';
  }
  if (!awaiting) {
    const s = normaliseKind(state);
    if (s.includes('plan') && (s.includes('approv') || s.includes('review'))) awaiting = 'planApproval';
    else if (s.includes('complet') && (s.includes('approv') || s.includes('review'))) awaiting = 'completionApproval';
    else if (s.includes('question') || s.includes('input') || s.includes('waitingforuser')) awaiting = questions.length ? 'answer' : undefined;
  }

  const done = field(snapshot, 'done') === true || TERMINAL_STATES.has(state.toLowerCase());
  const result = field(snapshot, 'result');
  const copy = stringField(snapshot, 'copy', 'copyPath', 'copy_path', 'worktree') ?? stringField(result, 'copy', 'copyPath', 'copy_path', 'worktree');
  const changed = [...arrayField(snapshot, 'changedFiles', 'changed_files'), ...arrayField(result, 'changedFiles', 'changed_files')]
    .map((f) => (isObject(f) ? stringField(f, 'path') ?? '' : textOf(f)))
    .filter((f) => f !== '');
  return {
    id,
    workspace: stringField(snapshot, 'workspace') ?? workspace,
    brief: stringField(snapshot, 'brief', 'title', 'description') ?? id,
    state,
    phase,
    revision: numberField(snapshot, 'revision') ?? 0,
    questions,
    plan: planFrom(field(snapshot, 'plan'), awaiting === 'planApproval', planRevisionFromNeed),
    evidence: [...arrayField(snapshot, 'evidence'), ...arrayField(result, 'evidence')].map(evidenceFrom),
    awaiting: done ? undefined : awaiting,
    done,
    copyPath: copy,
    changedFiles: [...new Set(changed)],
    error: stringField(snapshot, 'error') ?? stringField(result, 'error'),
    raw: snapshot,
  };
}

/** Keeps the newest snapshot of each task; older or repeated revisions are ignored. */
export class TaskStore {
  private readonly tasks = new Map<string, TaskView>();
  private readonly order: string[] = [];
  private listeners: Array<(task: TaskView | undefined) => void> = [];

  /** Applies a snapshot; returns true when it changed what the store shows. */
  apply(view: TaskView): boolean {
    const current = this.tasks.get(view.id);
    if (current && current.revision >= view.revision) return false;
    this.tasks.set(view.id, view);
    const at = this.order.indexOf(view.id);
    if (at >= 0) this.order.splice(at, 1);
    this.order.push(view.id);
    this.emit(view);
    return true;
  }

  /** Replaces every task of one workspace with a fresh listing (newer revisions already held win). */
  replaceWorkspace(workspace: string, views: TaskView[]): void {
    const keep = new Set(views.map((v) => v.id));
    for (const [id, task] of this.tasks) {
      if (task.workspace === workspace && !keep.has(id)) {
        this.tasks.delete(id);
        this.order.splice(this.order.indexOf(id), 1);
      }
    }
    for (const view of views) {
      const current = this.tasks.get(view.id);
      if (!current || current.revision < view.revision) {
        this.tasks.set(view.id, view);
        if (!this.order.includes(view.id)) this.order.push(view.id);
      }
    }
    this.emit(undefined);
  }

  clear(): void {
    this.tasks.clear();
    this.order.length = 0;
    this.emit(undefined);
  }

  get(id: string): TaskView | undefined {
    return this.tasks.get(id);
  }

  /** Most recently changed first. */
  all(): TaskView[] {
    return [...this.order].reverse().map((id) => this.tasks.get(id) as TaskView);
  }

  /** The task the status bar follows: the most recently changed one still running, else the latest. */
  active(): TaskView | undefined {
    const all = this.all();
    return all.find((t) => !t.done) ?? all[0];
  }

  /** Tasks waiting for the given kind of input, most recent first. */
  awaiting(kind: Awaiting): TaskView[] {
    return this.all().filter((t) => t.awaiting === kind);
  }

  onDidChange(listener: (task: TaskView | undefined) => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }

  private emit(task: TaskView | undefined): void {
    for (const listener of this.listeners) listener(task);
  }
}

export type TaskNodeKind = 'workspace' | 'task' | 'phase' | 'question' | 'plan' | 'evidence' | 'result' | 'error';

export interface TaskNode {
  id: string;
  kind: TaskNodeKind;
  taskId: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon: string;
  contextValue: string;
  children: TaskNode[];
  questionId?: string;
}

const PHASE_ICONS: Array<[RegExp, string]> = [
  [/fail|error/i, 'error'],
  [/cancel/i, 'circle-slash'],
  [/complete|done/i, 'pass'],
  [/question|input|clarif|requirement/i, 'comment-discussion'],
  [/plan/i, 'checklist'],
  [/verif|test/i, 'beaker'],
];

export function phaseIcon(task: TaskView): string {
  if (task.awaiting === 'answer') return 'comment-discussion';
  if (task.awaiting === 'planApproval') return 'checklist';
  if (task.awaiting === 'completionApproval') return 'check-all';
  for (const [pattern, icon] of PHASE_ICONS) if (pattern.test(task.state) || pattern.test(task.phase)) return icon;
  return task.done ? 'pass' : 'sync~spin';
}

/** A person-readable phase: "awaiting_plan_approval" becomes "awaiting plan approval". */
export function phaseLabel(task: TaskView): string {
  return task.phase.replace(/[_-]+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function taskContext(task: TaskView): string {
  if (task.done) return 'task-done';
  if (task.awaiting === 'completionApproval') return 'task-completion';
  return 'task';
}

export function buildTaskNode(task: TaskView): TaskNode {
  const base = `${task.workspace}::${task.id}`;
  const children: TaskNode[] = [
    { id: `${base}/phase`, kind: 'phase', taskId: task.id, label: 'Phase', description: phaseLabel(task), icon: phaseIcon(task), contextValue: 'phase', children: [] },
  ];
  for (const q of task.questions) {
    children.push({
      id: `${base}/question/${q.id}`,
      kind: 'question',
      taskId: task.id,
      questionId: q.id,
      label: q.text,
      description: q.choices.length ? q.choices.join(' · ') : 'awaiting your answer',
      tooltip: `${q.text}\n\nClick to answer.`,
      icon: 'question',
      contextValue: 'question',
      children: [],
    });
  }
  if (task.plan) {
    const status = task.plan.approved ? 'approved' : task.awaiting === 'planApproval' ? 'awaiting your review' : 'draft';
    children.push({
      id: `${base}/plan`,
      kind: 'plan',
      taskId: task.id,
      label: task.plan.revision !== undefined ? `Plan (revision ${task.plan.revision})` : 'Plan',
      description: status,
      tooltip: task.plan.markdown || undefined,
      icon: task.plan.approved ? 'checklist' : 'eye',
      contextValue: task.awaiting === 'planApproval' ? 'plan' : 'plan-reviewed',
      children: [],
    });
  }
  if (task.evidence.length) {
    children.push({
      id: `${base}/evidence`,
      kind: 'evidence',
      taskId: task.id,
      label: 'Evidence',
      description: `${task.evidence.length} item${task.evidence.length === 1 ? '' : 's'}`,
      icon: 'references',
      contextValue: 'evidence-group',
      children: task.evidence.map((e, i) => ({
        id: `${base}/evidence/${i}`,
        kind: 'evidence' as const,
        taskId: task.id,
        label: e.label,
        description: e.detail,
        icon: e.ok === undefined ? 'circle-outline' : e.ok ? 'pass' : 'error',
        contextValue: 'evidence',
        children: [],
      })),
    });
  }
  if (task.awaiting === 'completionApproval') {
    children.push({
      id: `${base}/completion`,
      kind: 'result',
      taskId: task.id,
      label: 'Completion',
      description: 'awaiting your approval',
      icon: 'check-all',
      contextValue: 'task-completion-node',
      children: [],
    });
  }
  if (task.error) {
    children.push({ id: `${base}/error`, kind: 'error', taskId: task.id, label: 'Error', description: task.error, tooltip: task.error, icon: 'error', contextValue: 'error', children: [] });
  }
  return {
    id: base,
    kind: 'task',
    taskId: task.id,
    label: task.brief,
    description: phaseLabel(task),
    tooltip: `${task.brief}\n\nTask ${task.id} · ${task.state} · revision ${task.revision}`,
    icon: phaseIcon(task),
    contextValue: taskContext(task),
    children,
  };
}

/** The whole tree: one node per task, grouped under workspace folders when there are several. */
export function buildTaskTree(tasks: TaskView[], folders: Array<{ name: string; path: string }>): TaskNode[] {
  if (folders.length <= 1) return tasks.map(buildTaskNode);
  const nodes: TaskNode[] = [];
  for (const folder of folders) {
    const mine = tasks.filter((t) => t.workspace === folder.path);
    nodes.push({
      id: `workspace::${folder.path}`,
      kind: 'workspace',
      taskId: '',
      label: folder.name,
      description: mine.length ? `${mine.length} task${mine.length === 1 ? '' : 's'}` : 'no tasks',
      icon: 'root-folder',
      contextValue: 'workspace',
      children: mine.map(buildTaskNode),
    });
  }
  const known = new Set(folders.map((f) => f.path));
  for (const t of tasks) if (!known.has(t.workspace)) nodes.push(buildTaskNode(t));
  return nodes;
}

/** Status bar text for the active task. */
export function statusText(task: TaskView | undefined): string {
  if (!task) return '$(code) AutoCode';
  const brief = task.brief.length > 30 ? `${task.brief.slice(0, 29)}…` : task.brief;
  return `$(${phaseIcon(task)}) AutoCode: ${phaseLabel(task)} — ${brief}`;
}
