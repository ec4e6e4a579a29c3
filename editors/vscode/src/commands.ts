// The palette and view commands. Each shapes one argument object (model/args),
// runs one server command, and feeds the result back into the views.

import { agentNameFor, confirmPromotion, saveFromInputBox, scopeDescription, showPromotionResult } from './memoryflows';
import { Failures } from './failures';
import { noticeWhile } from './notices';
import { OPEN_TRANSCRIPT } from './model/failures';
import type { ModelSetup } from './setup';
import * as vscode from 'vscode';
import { ServerManager } from './client';
import { NOT_RUNNING } from './status';
import * as args from './model/args';
import { memoriesFromResult, NOTHING_TO_PROMOTE, promotionCandidates, promotionMessage } from './model/memory';
import { Awaiting, normaliseSnapshot, phaseLabel, questionFrom, Question, TaskNode, TaskStore, TaskView } from './model/tasks';
import { arrayField, Commands, field, stringField } from './protocol';
import { DoctorPanel, folders, pickFolder, showError, showMarkdownPreview, VirtualDocuments } from './ui';
import { announceQuestion, pickAnswer, sendAnswer } from './questions';
import { Review } from './review';
import { writtenFiles } from './model/review';
import { TasksView } from './views/tasks';
import type { AskQuestionParams, ReviewPlanParams, TaskList } from './generated/protocol';
import { MemoryView, PromotionView } from './views/memory';
import { askAndTrust, NOT_NOW_LABEL, runWithTrust, TRUST_LABEL, trustMessage, TrustSteps, trustRequestOfReport, trustRequestOfResult } from './model/trust';

export interface Context {
  server: ServerManager;
  store: TaskStore;
  tasksView: TasksView;
  memoryView: MemoryView;
  promotionView: PromotionView;
  docs: VirtualDocuments;
  doctor: DoctorPanel;
  output: vscode.LogOutputChannel;
  /** Plan and change review (set by registerCommands). */
  review?: Review;
  /** The ways out of failed and interrupted tasks (set by registerCommands). */
  failures?: Failures;
  /** The model settings and API key (set by the extension before registerCommands). */
  setup?: ModelSetup;
  /** Re-reads the learned record's state for the language status item. */
  refreshRecord?: () => void;
}

function agentSetting(): string {
  return vscode.workspace.getConfiguration('autocode').get<string>('memory.agent', '');
}

/** Takes a snapshot from any command result or notification into the store, telling the person about milestones. */
export function acceptSnapshot(ctx: Context, raw: unknown, workspace?: string): TaskView | undefined {
  try {
    const view = normaliseSnapshot(raw, workspace ?? '');
    if (!view.workspace) view.workspace = ctx.store.get(view.id)?.workspace ?? folders()[0]?.path ?? '';
    const before = ctx.store.get(view.id);
    if (ctx.store.apply(view)) {
      announce(ctx, before, view);
      // What the task learned changes the record the status item shows.
      if (before && before.raw.learning?.status !== view.raw.learning?.status) ctx.refreshRecord?.();
    }
    return ctx.store.get(view.id);
  } catch (err) {
    ctx.output.warn(`ignored a task snapshot: ${(err as Error).message}`);
    return undefined;
  }
}


function announce(ctx: Context, before: TaskView | undefined, now: TaskView): void {
  if (before?.state === now.state && before?.awaiting === now.awaiting) return;
  if (now.interrupted && !before?.interrupted) {
    ctx.failures?.announceInterrupted([now]);
  } else if (now.awaiting === 'answer') {
    for (const q of now.questions) announceQuestion(ctx.store, now, q);
  } else if (now.awaiting === 'planApproval' && before?.awaiting !== 'planApproval') {
    void ctx.review?.openPlan(now, now.plan?.markdown ?? '', now.plan?.revision, false);
  } else if (now.awaiting === 'conflicts') {
    ctx.review?.announceConflicts(now);
  } else if (now.awaiting === 'completionApproval') {
    noticeWhile(ctx.store, now.id, (t) => t.awaiting === 'completionApproval', `AutoCode: “${now.brief}” is verified in its copy. Review the changes and approve them to apply.`,
      [{ label: 'Review Changes', command: 'autocode.approveCompletion', arg: now.id }]);
  } else if (now.done && before && !before.done) {
    const state = now.state.toLowerCase();
    if (state === 'failed') ctx.failures?.announceFailure(now);
    else if (state === 'completed') {
      const written = writtenFiles(now.raw);
      const summary = now.summary ? ` The agent says: ${now.summary.text}` : '';
      void vscode.window.showInformationMessage(`AutoCode: “${now.brief}” completed and was applied to the workspace${written ? ` (written: ${written.length ? written.join(', ') : 'nothing'})` : ''}.${summary}`, ...(now.raw.agent ? [OPEN_TRANSCRIPT] : []))
        .then((choice) => choice && vscode.commands.executeCommand('autocode.openTranscript', now.id));
    }
    ctx.refreshRecord?.();
  }
  ctx.output.info(`task ${now.id}: ${phaseLabel(now)} (revision ${now.revision})`);
}

export async function refreshTasks(ctx: Context): Promise<void> {
  for (const folder of folders()) {
    try {
      const result = await ctx.server.execute(Commands.taskList, { workspace: folder.path });
      const list = (result as TaskList).tasks;
      const views: TaskView[] = [];
      for (const raw of list) {
        try {
          views.push(normaliseSnapshot(raw, folder.path));
        } catch (err) {
          ctx.output.warn(`ignored a listed task: ${(err as Error).message}`);
        }
      }
      ctx.failures?.announceInterrupted(ctx.store.replaceWorkspace(folder.path, views));
      ctx.failures?.updateContext();
    } catch (err) {
      ctx.output.warn(`listing tasks in ${folder.name}: ${(err as Error).message}`);
    }
  }
}

/** The task a command acts on: from a tree node or id, else the only one waiting, else a pick. */
async function chooseTask(ctx: Context, arg: unknown, waitingFor: Awaiting | undefined, verb: string): Promise<TaskView | undefined> {
  const id = typeof arg === 'string' ? arg : typeof arg === 'object' && arg !== null ? (arg as TaskNode).taskId : undefined;
  if (id) {
    const known = ctx.store.get(id);
    if (known) return known;
  }
  const candidates = waitingFor ? ctx.store.awaiting(waitingFor) : ctx.store.all().filter((t) => !t.done);
  if (!candidates.length) {
    void vscode.window.showInformationMessage(`AutoCode: no task is waiting for you to ${verb}.`);
    return undefined;
  }
  if (candidates.length === 1) return candidates[0];
  const picked = await vscode.window.showQuickPick(
    candidates.map((t) => ({ label: t.brief, description: t.phase, detail: t.id, task: t })),
    { placeHolder: `Task to ${verb}` },
  );
  return picked?.task;
}

async function freshTask(ctx: Context, task: TaskView): Promise<TaskView> {
  try {
    return acceptSnapshot(ctx, await ctx.server.execute(Commands.taskGet, args.taskArgs(task.id, task.workspace || undefined)), task.workspace) ?? task;
  } catch (err) {
    ctx.output.warn(`refreshing task ${task.id}: ${(err as Error).message}`);
    return task;
  }
}

async function startTask(ctx: Context): Promise<void> {
  if (!folders().length) {
    void vscode.window.showErrorMessage('AutoCode: a task runs in a git repository. Open the repository folder first (File > Open Folder); without a folder only global memory is available.');
    return;
  }
  const folder = await pickFolder('run the task in');
  if (!folder) return;
  const brief = await vscode.window.showInputBox({
    title: 'AutoCode: Start Task',
    prompt: `What should AutoCode do in ${folder.name}?`,
    placeHolder: 'Describe the change, e.g. "Add a test for the slugify helper"',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'Describe the task in a few words.'),
  });
  if (brief === undefined) return;
  const started = await runWithTrust(() => ctx.server.execute(Commands.taskStart, args.startTaskArgs(brief, folder.path)), trustSteps(ctx, folder));
  if (!started.ran) {
    void vscode.window.showInformationMessage(`AutoCode: not trusted, so nothing was started; the settings of ${folder.name} stay ignored. Start the task again to be asked again.`);
    return;
  }
  const task = acceptSnapshot(ctx, started.value, folder.path);
  // The server may already be asking its first question: reveal without taking the keyboard.
  if (task) await ctx.tasksView.reveal(task.id, false);
}

/** Asks a question and sends the answer with how it was given; false when the person dismissed it. */
async function askAndAnswer(ctx: Context, task: TaskView, question: Question): Promise<boolean> {
  const reply = await pickAnswer(question, task.brief);
  if (reply === undefined) return false;
  acceptSnapshot(ctx, await sendAnswer(ctx, task, question, reply), task.workspace);
  return true;
}

async function answerQuestion(ctx: Context, arg: unknown): Promise<void> {
  const task = await chooseTask(ctx, arg, 'answer', 'answer');
  if (!task) return;
  const questionId = typeof arg === 'object' && arg !== null ? (arg as TaskNode).questionId : undefined;
  let question = task.questions.find((q) => q.id === questionId);
  if (!question && task.questions.length > 1) {
    const picked = await vscode.window.showQuickPick(task.questions.map((q) => ({ label: q.text, q })), { placeHolder: 'Question to answer' });
    question = picked?.q;
    if (!question) return;
  }
  question ??= task.questions[0];
  if (!question) {
    void vscode.window.showInformationMessage(`AutoCode: "${task.brief}" has no open question.`);
    return;
  }
  await askAndAnswer(ctx, task, question);
}

async function reviewPlan(ctx: Context, arg: unknown): Promise<void> {
  const chosen = await chooseTask(ctx, arg, 'planApproval', 'review a plan');
  if (!chosen) return;
  const task = await freshTask(ctx, chosen);
  if (task.awaiting !== 'planApproval') {
    if (task.plan?.uri) await showMarkdownPreview(vscode.Uri.parse(task.plan.uri));
    void vscode.window.showInformationMessage(`AutoCode: the plan for “${task.brief}” is not waiting for review (phase: ${task.phase}).`);
    return;
  }
  await ctx.review?.openPlan(task, task.plan?.markdown ?? '', task.plan?.revision, true);
}

/** Opens the task's change as diffs with Apply / Discard in their title bar (no dialog covers them). */
async function approveCompletion(ctx: Context, arg: unknown): Promise<void> {
  const chosen = await chooseTask(ctx, arg, 'completionApproval', 'approve');
  if (!chosen) return;
  const task = await freshTask(ctx, chosen);
  const shown = (await ctx.review?.openChanges(task, true)) ?? 0;
  const evidence = task.evidence.map((e) => `${e.ok === false ? '✗' : e.ok ? '✓' : '•'} ${e.label}${e.detail ? `: ${e.detail}` : ''}`).join('; ');
  noticeWhile(ctx.store, task.id, (t) => t.awaiting === 'completionApproval',
    `AutoCode: ${shown ? `${shown} changed file${shown === 1 ? ' is' : 's are'} open (your file as it is now left, what Apply leaves there right)` : 'the task reported no changed files'}. Apply or Discard from the diff's title bar; Choose Hunks leaves hunks out.${evidence ? ` Evidence: ${evidence}` : ''}`,
  );
}

async function cancelTask(ctx: Context, arg: unknown): Promise<void> {
  const task = await chooseTask(ctx, arg, undefined, 'cancel');
  if (!task) return;
  const choice = await vscode.window.showWarningMessage(`Cancel the task “${task.brief}”?`, { modal: true, detail: 'Its copy and records are kept for inspection.' }, 'Cancel Task');
  if (choice !== 'Cancel Task') return;
  acceptSnapshot(ctx, await ctx.server.execute(Commands.taskCancel, args.taskArgs(task.id, task.workspace || undefined)), task.workspace);
}

/** Continues a task whose server stopped while it worked (an earlier window, a crash). */
async function resumeTask(ctx: Context, arg: unknown): Promise<void> {
  const task = await chooseTask(ctx, arg, undefined, 'resume');
  if (!task) return;
  acceptSnapshot(ctx, await ctx.server.execute(Commands.taskResume, args.taskArgs(task.id, task.workspace || undefined)), task.workspace);
}

/**
 * The one prompt naming what a repository's settings ask for, as a non-modal warning: only a
 * click on Trust is a yes (closing it, or Not now, trusts nothing).
 */
function trustSteps(ctx: Context, folder: args.Folder): TrustSteps {
  return {
    ask: async (request) => (await vscode.window.showWarningMessage(trustMessage(folder.name, request), TRUST_LABEL, NOT_NOW_LABEL)) === TRUST_LABEL,
    trust: (digest) => ctx.server.execute(Commands.projectTrust, args.trustArgs(folder.path, digest)),
  };
}

async function doctor(ctx: Context): Promise<void> {
  if (!folders().length) {
    void vscode.window.showErrorMessage('AutoCode: Doctor reports on a repository: open its folder first (File > Open Folder).');
    return;
  }
  const folder = await pickFolder('check');
  if (!folder) return;
  const report = await ctx.server.execute(Commands.doctor, args.doctorArgs(folder?.path));
  ctx.doctor.show(report, `Workspace: ${folder.name}`);
  // Doctor lists the values ignored for want of trust; the same prompt offers to trust them.
  const request = trustRequestOfReport(report);
  if (request && (await askAndTrust(request, trustSteps(ctx, folder)))) {
    ctx.doctor.show(await ctx.server.execute(Commands.doctor, args.doctorArgs(folder.path)), `Workspace: ${folder.name}`);
  }
}

/** What the folder's settings ask for, and the same prompt when they are not trusted yet. */
async function trustRepository(ctx: Context): Promise<void> {
  if (!folders().length) {
    void vscode.window.showErrorMessage('AutoCode: Trust Repository needs an open folder: it trusts what that repository\'s settings ask for.');
    return;
  }
  const folder = await pickFolder('trust');
  if (!folder) return;
  const result = await ctx.server.execute(Commands.projectTrust, { workspace: folder.path });
  const request = trustRequestOfResult(result);
  if (!request) {
    const says = arrayField(result, 'says').filter((s) => typeof s === 'string');
    void vscode.window.showInformationMessage(says.length
      ? `AutoCode: ${folder.name} is trusted: its settings ask to ${says.join('; ')}.`
      : `AutoCode: the settings of ${folder.name} name no endpoint, key variable or memory store; nothing to trust.`);
    return;
  }
  const trusted = await askAndTrust(request, trustSteps(ctx, folder));
  void vscode.window.showInformationMessage(trusted ? `AutoCode: trusted the settings of ${folder.name}.` : `AutoCode: not trusted; the settings of ${folder.name} stay ignored.`);
}

async function forgetProject(ctx: Context): Promise<void> {
  if (!folders().length) {
    void vscode.window.showErrorMessage('AutoCode: Forget Project Memory needs an open folder: it removes that repository\'s learned record.');
    return;
  }
  const folder = await pickFolder('forget');
  if (!folder) return;
  const choice = await vscode.window.showWarningMessage(
    `Forget what AutoCode learned about ${folder.name}?`,
    { modal: true, detail: 'This deletes .autocode/project.json (the learned test command and conventions). Your configuration, saved task runs, evidence and memories are kept. A later task can learn again.' },
    'Forget',
  );
  if (choice !== 'Forget') return;
  const result = await ctx.server.execute(Commands.projectForget, args.forgetArgs(folder.path));
  const removed = field(result, 'removed');
  ctx.refreshRecord?.();
  void vscode.window.showInformationMessage(removed === false ? `AutoCode: ${folder.name} had no learned record; nothing was removed.` : `AutoCode: forgot the learned record of ${folder.name}.`);
}

function memoryFolder(): args.Folder | undefined {
  const all = folders();
  return args.folderForCommand(all, vscode.window.activeTextEditor?.document.uri.fsPath) ?? all[0];
}

export async function refreshMemory(ctx: Context): Promise<void> {
  const folder = memoryFolder();
  try {
    const result = await ctx.server.execute(Commands.memoryList, { ...args.memoryContextArgs(agentSetting(), folder?.path), scope: 'all', owner: 'all' });
    ctx.memoryView.show(memoriesFromResult(result), folder !== undefined, folder?.name);
  } catch (err) {
    // A request cut off by the server going away says so, like every other view.
    ctx.memoryView.showProblem(ctx.server.running ? `Could not list memories: ${(err as Error).message}` : NOT_RUNNING);
  }
}

async function searchMemory(ctx: Context): Promise<void> {
  const query = await vscode.window.showInputBox({ title: 'AutoCode: Search Memory', prompt: 'Search agent and team memories', ignoreFocusOut: true });
  if (!query?.trim()) return;
  const folder = memoryFolder();
  const result = await ctx.server.execute(Commands.memorySearch, args.memorySearchArgs(query, agentSetting(), folder?.path));
  ctx.memoryView.showSearch(query.trim(), memoriesFromResult(result));
  await vscode.commands.executeCommand('autocode.memory.focus');
}

/** A save that stored nothing (a duplicate, or know-how turned into a skill) says why. */
function reportSave(result: unknown): void {
  if (field(result, 'saved') === false) void vscode.window.showInformationMessage(`AutoCode: ${stringField(result, 'message') ?? 'the memory was not saved.'}`);
}

async function chooseMemoryTarget(hasFolder: boolean): Promise<args.MemoryTarget | undefined> {
  const items: Array<vscode.QuickPickItem & { target: args.MemoryTarget }> = [];
  if (hasFolder) items.push({ label: 'Agent · this project', description: scopeDescription('agent'), target: { owner: 'agent', scope: 'project' } });
  items.push({ label: 'Agent · global', description: scopeDescription('agent'), target: { owner: 'agent', scope: 'global' } });
  if (hasFolder) items.push({ label: 'Team · this project', target: { owner: 'team', scope: 'project' } });
  items.push({ label: 'Team · global', target: { owner: 'team', scope: 'global' } });
  return (await vscode.window.showQuickPick(items, { placeHolder: 'Where should the memory live?' }))?.target;
}

async function addMemory(ctx: Context): Promise<void> {
  const folder = memoryFolder();
  const target = await chooseMemoryTarget(folder !== undefined);
  if (!target) return;
  if ((await agentNameFor(target.owner)) === undefined) return; // an agent scope without a name saves nothing
  const save = (text: string): Promise<unknown> => ctx.server.execute(Commands.memorySave, args.memorySaveArgs(text, target, undefined, agentSetting(), folder?.path));
  const result = await saveFromInputBox({ title: 'AutoCode: Add Memory', prompt: 'What should be remembered? (Credentials and machine paths are refused.)' }, save);
  if (result !== undefined) reportSave(result);
  await refreshMemory(ctx);
}

/**
 * Replaces a memory's text. The store has no update, so this saves the new text and then deletes the
 * old memory, ordered so that a refusal never loses the old one.
 */
async function editMemory(ctx: Context, arg: unknown): Promise<void> {
  const memory = ctx.memoryView.memoryOf(arg);
  if (!memory) return;
  const folder = memoryFolder();
  const target = { owner: memory.owner, scope: memory.scope };
  const save = (text: string): Promise<unknown> => ctx.server.execute(Commands.memorySave, args.memorySaveArgs(text, target, memory.category || undefined, agentSetting(), folder?.path));
  const remove = (): Promise<unknown> => ctx.server.execute(Commands.memoryDelete, args.memoryDeleteArgs(memory.id, agentSetting(), folder?.path));
  let content = memory.content;
  const unchanged = Symbol('unchanged');
  // The first save runs from the input box, so a refusal shows there with the edited text kept.
  const first = await saveFromInputBox({ title: 'AutoCode: Edit Memory', prompt: 'The memory\'s new text. (Credentials and machine paths are refused.)', value: memory.content }, (text) => {
    if (text.trim() === memory.content.trim()) return Promise.resolve(unchanged);
    content = text;
    return save(text);
  });
  if (first === undefined || first === unchanged) return;
  if (field(first, 'saved') === true) {
    await remove();
  } else if (field(first, 'duplicateOf') === memory.id) {
    // The new text reads as the same memory: replace the old one, and put it back if the new one is refused.
    await remove();
    let second: unknown;
    try {
      second = await save(content);
    } catch (err) {
      await save(memory.content);
      throw err;
    }
    if (field(second, 'saved') !== true) {
      await save(memory.content);
      reportSave(second);
    }
  } else {
    reportSave(first);
  }
  ctx.memoryView.clearSearch();
  await refreshMemory(ctx);
}

async function deleteMemory(ctx: Context, arg: unknown): Promise<void> {
  const memory = ctx.memoryView.memoryOf(arg);
  if (!memory) return;
  const choice = await vscode.window.showWarningMessage(`Delete this ${memory.owner} memory?`, { modal: true, detail: memory.content }, 'Delete');
  if (choice !== 'Delete') return;
  await ctx.server.execute(Commands.memoryDelete, args.memoryDeleteArgs(memory.id, agentSetting(), memoryFolder()?.path));
  ctx.memoryView.clearSearch();
  await refreshMemory(ctx);
}

async function planPromotion(ctx: Context): Promise<void> {
  const folder = memoryFolder();
  const plan = await ctx.server.execute(Commands.memoryPlanPromotion, args.planPromotionArgs(folder?.path));
  const candidates = promotionCandidates(plan);
  ctx.promotionView.show(candidates);
  if (!candidates.length) void vscode.window.showInformationMessage(NOTHING_TO_PROMOTE);
  await vscode.commands.executeCommand('autocode.promotion.focus');
}

async function applyPromotion(ctx: Context): Promise<void> {
  const ids = ctx.promotionView.selectedIds();
  if (!(await confirmPromotion(ctx.promotionView.candidatesOf(ids)))) return;
  const result = await ctx.server.execute(Commands.memoryApplyPromotion, args.applyPromotionArgs(ids, memoryFolder()?.path));
  showPromotionResult(result, promotionMessage(result), ctx.docs);
  await planPromotion(ctx);
  await refreshMemory(ctx);
}

/**
 * Server-to-client request autocode/task/askQuestion. No prompt opens by itself (the person may be
 * typing): the question is announced and left open (`{answer: null}`); Answer opens the QuickPick and
 * the answer goes back as autocode.task.answer with how it was given.
 */
export async function onAskQuestion(ctx: Context, params: unknown): Promise<unknown> {
  const { taskId, question: asked } = params as AskQuestionParams;
  const question = questionFrom(asked);
  announceQuestion(ctx.store, { id: taskId, brief: ctx.store.get(taskId)?.brief ?? 'AutoCode task' }, question);
  return { answer: null };
}

/**
 * Server-to-client request autocode/task/reviewPlan: the plan opens beside the person's editor without
 * taking the keyboard, and the decision comes later from its title bar or lenses, so the reply is "later".
 */
export async function onReviewPlan(ctx: Context, params: unknown): Promise<unknown> {
  const { taskId, planRevision, plan } = params as ReviewPlanParams;
  const brief = ctx.store.get(taskId)?.brief ?? 'AutoCode task';
  await ctx.review?.openPlan({ id: taskId, brief }, plan, planRevision, false);
  return { decision: 'later' };
}

export function registerCommands(ctx: Context): vscode.Disposable[] {
  const wrap = (action: string, fn: (arg?: unknown) => Promise<void>) => async (arg?: unknown) => {
    try {
      await fn(arg);
    } catch (err) {
      showError(action, err);
    }
  };
  const r = (id: string, action: string, fn: (arg?: unknown) => Promise<void>): vscode.Disposable => vscode.commands.registerCommand(id, wrap(action, fn));
  ctx.review = new Review(ctx, (raw, workspace) => acceptSnapshot(ctx, raw, workspace));
  ctx.failures = new Failures({ server: ctx.server, store: ctx.store, output: ctx.output, accept: (raw, workspace) => acceptSnapshot(ctx, raw, workspace) });
  return [
    ...ctx.review.register(),
    ...ctx.failures.register(r),
    ...(ctx.setup?.register() ?? []),
    r('autocode.checkProvider', 'Check Model Provider', async () => ctx.setup?.check()),
    r('autocode.startTask', 'Start Task', () => startTask(ctx)),
    r('autocode.answerQuestion', 'Answer Question', (a) => answerQuestion(ctx, a)),
    r('autocode.reviewPlan', 'Review Plan', (a) => reviewPlan(ctx, a)),
    r('autocode.approveCompletion', 'Approve Completion', (a) => approveCompletion(ctx, a)),
    r('autocode.cancelTask', 'Cancel Task', (a) => cancelTask(ctx, a)),
    r('autocode.resumeTask', 'Resume Task', (a) => resumeTask(ctx, a)),
    r('autocode.openTask', 'Show Task', async (a) => ctx.tasksView.reveal(typeof a === 'string' ? a : ctx.store.active()?.id ?? '', true)),
    r('autocode.refreshTasks', 'Refresh Tasks', () => refreshTasks(ctx)),
    r('autocode.showDoctor', 'Doctor', () => doctor(ctx)),
    r('autocode.forgetProject', 'Forget Project Memory', () => forgetProject(ctx)),
    r('autocode.trustRepository', 'Trust Repository', () => trustRepository(ctx)),
    r('autocode.searchMemory', 'Search Memory', () => searchMemory(ctx)),
    r('autocode.clearMemorySearch', 'Clear Memory Search', async () => ctx.memoryView.clearSearch()),
    r('autocode.addMemory', 'Add Memory', () => addMemory(ctx)),
    r('autocode.editMemory', 'Edit Memory', (a) => editMemory(ctx, a)),
    r('autocode.deleteMemory', 'Delete Memory', (a) => deleteMemory(ctx, a)),
    r('autocode.refreshMemory', 'Refresh Memory', () => refreshMemory(ctx)),
    r('autocode.planPromotion', 'Plan Promotion', () => planPromotion(ctx)),
    r('autocode.applyPromotion', 'Apply Promotion', () => applyPromotion(ctx)),
    r('autocode.restartServer', 'Restart Language Server', () => ctx.server.restart()),
    r('autocode.showOutput', 'Show Output', async () => ctx.output.show()),
  ];
}
