// Task snapshots as the Tasks view needs them: what the views show of the server's
// snapshot, keeping the newest revision per task, and building the tree nodes. No
// editor API here, so all of it is unit-tested under node.

import type { Needs, Proof, Question as WireQuestion, Review, TaskDidChangeParams, TaskSnapshot, TestRun } from '../generated/protocol';
import { isObject } from '../protocol';
import { agentSummary, failedInVerification, interruptedWhile, isInterrupted, resumableFailure, testOutputFile } from './failures';

// The snapshot is read as the generated protocol types state it (docs/protocol.schema.json, the
// engine's own models): one spelling (camelCase), every field present, `needs` narrowed by its
// `kind`. A field renamed or dropped there fails to type-check here; nothing is re-checked by hand.

export interface Question {
  id: string;
  text: string;
  /** Suggested answers (the proposed default among them); the person may always type another. */
  choices: string[];
  defaultAnswer: string | undefined;
  /** Set when the answer may be learned as a project convention. */
  convention: string | undefined;
}

export interface PlanView {
  revision: number | undefined;
  markdown: string;
  approved: boolean;
  /** `file://` URI of the plan document, when the server wrote one. */
  uri: string | undefined;
}

export interface EvidenceView {
  label: string;
  detail: string;
  ok: boolean | undefined;
  /** A file of the run's evidence the row opens (the test output, the proof). */
  file?: string;
}

export type Awaiting = 'answer' | 'planApproval' | 'completionApproval' | 'conflicts' | 'save';

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
  /** The prep copy the task works in, for the completion diff. */
  copyPath: string | undefined;
  changedFiles: string[];
  /** The verified change as a unified diff, when the task waits for completion approval. */
  diff: string | undefined;
  error: string | undefined;
  /** A working step lost its process and nothing works on it now: Resume continues it. */
  interrupted: boolean;
  /** The agent's final answer (the implementer's), once it gave one. */
  summary: { role: string; text: string } | undefined;
  raw: TaskSnapshot;
}

/** A protocol `Question` as the prompts use it (the proposed default offered first). */
export function questionFrom(q: WireQuestion): Question {
  const choices = q.default && !q.choices.includes(q.default) ? [q.default, ...q.choices] : [...q.choices];
  return { id: q.id, text: q.text, choices, defaultAnswer: q.default ?? undefined, convention: q.convention ?? undefined };
}

/** What each `Needs` kind asks of the person, in the views' words. */
const AWAITING: Record<NonNullable<Needs['kind']>, Awaiting> = {
  answer_questions: 'answer',
  approve_plan: 'planApproval',
  approve_completion: 'completionApproval',
  resolve_conflicts: 'conflicts',
  save_files: 'save',
};

function testsEvidence(tests: TestRun): EvidenceView {
  const detail = `${tests.status.replace(/_/g, ' ')}, exit code ${tests.exitCode}, ${tests.seconds.toFixed(1)} s`;
  return { label: `Tests: ${tests.command}`, detail, ok: tests.exitCode === 0 };
}

function reviewEvidence(review: Review): EvidenceView {
  const n = review.concerns.length;
  const concerns = n ? `${n} concern${n === 1 ? '' : 's'}: ${review.concerns.join('; ')}` : '';
  return { label: 'Review', detail: [review.summary, concerns].filter(Boolean).join(' — '), ok: n === 0 };
}

/** The verdict row: verified only when named tests proved the change; each concern named. */
export function proofEvidence(proof: Proof): EvidenceView {
  const concerns = proof.concerns.map((c) => c.sentence);
  const detail = [proof.summary, ...concerns].join(' — ');
  return { label: `Verdict: ${proof.status}`, detail, ok: proof.status === 'verified' && !concerns.length };
}

function evidenceOf({ needs, result, learning, runDir }: TaskSnapshot): EvidenceView[] {
  const completion = needs.kind === 'approve_completion' ? needs : undefined;
  const out: EvidenceView[] = [];
  const proof = completion?.proof ?? result?.proof;
  // The verdict opens the proof (every run and test named), the tests row the whole output.
  if (proof) out.push({ ...proofEvidence(proof), file: `${runDir}/evidence/proof.json` });
  const tests = completion?.tests ?? result?.tests;
  if (tests) out.push({ ...testsEvidence(tests), file: `${runDir}/evidence/test-output.txt` });
  if (completion?.review) out.push(reviewEvidence(completion.review));
  if (result?.apply) out.push({ label: 'Applied to the workspace', detail: result.apply.message, ok: result.apply.applied });
  if (learning && learning.status !== 'pending') {
    const detail = learning.error ?? (learning.errors.join('; ') || learning.status);
    out.push({ label: 'Learned into .autocode/project.json', detail, ok: learning.status === 'failed' ? false : undefined });
  }
  return out;
}

/** Turns one server snapshot (protocol 1.0 `TaskSnapshot`, or a didChange's `{task}`) into what the views show. */
export function normaliseSnapshot(raw: unknown, workspace = ''): TaskView {
  if (!isObject(raw)) throw new Error('task snapshot is not an object');
  const task = (raw as Partial<TaskDidChangeParams>).task;
  const snapshot = (isObject(task) ? task : raw) as unknown as TaskSnapshot;
  if (typeof snapshot.id !== 'string' || !snapshot.id) throw new Error('task snapshot has no id');
  const { id, needs, result, done } = snapshot;
  const awaiting = done || needs.kind === null ? undefined : AWAITING[needs.kind];

  let plan: PlanView | undefined;
  if (!done && needs.kind === 'approve_plan') {
    plan = { revision: needs.planRevision, markdown: needs.markdown, approved: false, uri: needs.planUri ?? undefined };
  } else if (snapshot.planRevision > 0) {
    const uri = `file://${snapshot.runDir.split('/').map(encodeURIComponent).join('/')}/plan.md`;
    plan = { revision: snapshot.planRevision, markdown: '', approved: true, uri };
  }
  const files = [...('files' in needs ? needs.files : []), ...(result?.files ?? [])].filter((f) => f !== '');
  return {
    id,
    workspace: snapshot.workspace || workspace,
    brief: snapshot.brief || id,
    state: snapshot.state,
    phase: snapshot.phase,
    revision: snapshot.revision,
    questions: !done && needs.kind === 'answer_questions' ? needs.questions.map(questionFrom) : [],
    plan,
    evidence: evidenceOf(snapshot),
    awaiting,
    done,
    copyPath: snapshot.copy || undefined,
    changedFiles: [...new Set(files)],
    diff: (needs.kind === 'approve_completion' && needs.diff) || undefined,
    error: snapshot.error?.message,
    interrupted: isInterrupted(snapshot),
    summary: agentSummary(snapshot),
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

  /**
   * Replaces every task of one workspace with a fresh listing (newer revisions already held win).
   * Returns the interrupted tasks of the listing (announced once each by the caller).
   */
  replaceWorkspace(workspace: string, views: TaskView[]): TaskView[] {
    const newlyInterrupted: TaskView[] = [];
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
      const held = this.tasks.get(view.id) as TaskView;
      if (held.interrupted) newlyInterrupted.push(held);
    }
    this.emit(undefined);
    return newlyInterrupted;
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

export type TaskNodeKind = 'workspace' | 'task' | 'phase' | 'question' | 'plan' | 'evidence' | 'result' | 'error' | 'summary';

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
  /** A file the node opens when clicked (evidence rows). */
  file?: string;
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
  if (task.awaiting === 'conflicts') return 'git-merge';
  if (task.awaiting === 'save') return 'save';
  for (const [pattern, icon] of PHASE_ICONS) if (pattern.test(task.state) || pattern.test(task.phase)) return icon;
  if (task.done) return 'pass';
  return 'sync~spin';
}

/** A person-readable phase, saying what the task waits for when it waits for the person. */
export function phaseLabel(task: TaskView): string {
  if (task.interrupted) return `interrupted while ${interruptedWhile(task.raw)}: Resume to continue`;
  if (task.awaiting === 'answer') return 'waiting for your answer';
  if (task.awaiting === 'planApproval') return 'waiting for plan approval';
  if (task.awaiting === 'completionApproval') return 'waiting for completion approval';
  if (task.awaiting === 'conflicts') return 'waiting for your choice on conflicting files';
  if (task.awaiting === 'save') return 'applied in your unsaved editors: save them to complete';
  return task.phase.replace(/[_-]+/g, ' ').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function taskContext(task: TaskView): string {
  if (task.interrupted) return 'task-interrupted';
  if (failedInVerification(task.raw)) return 'task-failed-tests';
  if (resumableFailure(task.raw)) return 'task-failed-resumable';
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
      description: q.defaultAnswer ? `suggested: ${q.defaultAnswer}` : 'waiting for your answer',
      tooltip: `${q.text}\n\nClick to answer.`,
      icon: 'question',
      contextValue: 'question',
      children: [],
    });
  }
  if (task.plan) {
    const status = task.plan.approved ? 'approved' : 'waiting for your review';
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
        file: e.file,
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
      description: `${task.changedFiles.length} changed file${task.changedFiles.length === 1 ? '' : 's'}, waiting for your approval`,
      icon: 'check-all',
      contextValue: 'task-completion-node',
      children: [],
    });
  }
  if (task.summary) {
    children.push({
      id: `${base}/summary`,
      kind: 'summary',
      taskId: task.id,
      label: 'Agent summary',
      description: task.summary.text,
      tooltip: `${task.summary.role}: ${task.summary.text}\n\nClick to open the transcript.`,
      icon: 'hubot',
      contextValue: 'agent-summary',
      children: [],
    });
  }
  if (task.error) {
    // The error opens what explains it: the test output for a failed verification.
    const file = failedInVerification(task.raw) ? testOutputFile(task.raw) : undefined;
    children.push({ id: `${base}/error`, kind: 'error', taskId: task.id, label: 'Error', description: task.error, tooltip: task.error, icon: 'error', contextValue: 'error', file, children: [] });
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
/** Visible status bar text stays under this many characters (the brief and phase go in the tooltip). */
export const STATUS_MAX = 29;

function shortPhase(task: TaskView): string {
  if (task.awaiting === 'answer') return 'answer needed';
  if (task.awaiting === 'planApproval') return 'plan review';
  if (task.awaiting === 'completionApproval') return 'review changes';
  return phaseLabel(task);
}

export function statusText(task: TaskView | undefined): string {
  if (!task) return '$(code) AutoCode';
  const prefix = 'AutoCode: ';
  let phase = shortPhase(task);
  if (prefix.length + phase.length > STATUS_MAX) phase = `${phase.slice(0, STATUS_MAX - prefix.length - 1)}…`;
  return `$(${phaseIcon(task)}) ${prefix}${phase}`;
}
