// Non-modal review: the plan in an editor with Approve / Request Changes in
// its title bar and as CodeLenses; the change as diffs with Apply / Discard in
// the title bar: the person's file as it is now on the left (their open editor,
// unsaved edits included) and on the right what Apply will leave there (git's
// three-way merge from autocode.task.preview, only the kept hunks in), each hunk
// kept or undone (Keep / Undo This Hunk at the cursor, or Choose Hunks); a
// conflicted file settled per file (mine, theirs, conflict markers) through a
// QuickPick. Nothing here opens a modal dialog, and what the server starts
// never takes the keyboard.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { noticeWhile } from './notices';
import type { Context } from './commands';
import * as args from './model/args';
import type { TaskApproveCompletionArgs, TaskPreview } from './generated/protocol';
import { hunkAtResultLine, hunkLabel, keepIds, resultText } from './model/hunks';
import { conflictsOf, headMovedText, markedFiles, reasonText, Resolution, resolutionItems, waitingForSaveText, writtenFiles } from './model/review';
import { TaskView } from './model/tasks';
import { Commands, stringField } from './protocol';
import { showError } from './ui';

// Context keys: the title bar buttons show on AutoCode plan / result documents while a review is open.
const PLAN_KEY = 'autocode.planReviewOpen';
const CHANGES_KEY = 'autocode.changeReviewOpen';

interface PlanEntry {
  taskId: string;
  revision: number | undefined;
}

export class Review implements vscode.CodeLensProvider {
  /** Plan document path -> the plan it shows. */
  private readonly plans = new Map<string, PlanEntry>();
  /** Result document path -> task id. */
  private readonly changes = new Map<string, string>();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private features: Promise<Set<string>> | undefined;
  /** Task id -> its preview and the hunks the person undid. */
  private readonly hunks = new Map<string, { preview: TaskPreview; undone: Set<string> }>();

  constructor(private readonly ctx: Context, private readonly accept: (raw: unknown, workspace?: string) => TaskView | undefined) {}

  register(): vscode.Disposable[] {
    const run = (action: string, fn: (arg?: unknown) => Promise<void>) => async (arg?: unknown) => {
      try {
        await fn(arg);
      } catch (err) {
        showError(action, err);
      }
    };
    return [
      this.lensesChanged,
      this.closeWhenPassed(),
      vscode.languages.registerCodeLensProvider({ scheme: 'autocode', pattern: '**/plan-revision-*.md' }, this),
      vscode.commands.registerCommand('autocode.approvePlan', run('Approve Plan', (a) => this.approvePlan(a))),
      vscode.commands.registerCommand('autocode.requestPlanChanges', run('Request Changes', (a) => this.requestChanges(a))),
      vscode.commands.registerCommand('autocode.applyChanges', run('Apply Changes', (a) => this.applyChanges(a))),
      vscode.commands.registerCommand('autocode.discardChanges', run('Discard Changes', (a) => this.discardChanges(a))),
      vscode.commands.registerCommand('autocode.resolveConflicts', run('Resolve Conflicts', (a) => this.resolveConflicts(a))),
      vscode.commands.registerCommand('autocode.keepHunk', run('Keep Hunk', () => this.toggleHunkAtCursor(false))),
      vscode.commands.registerCommand('autocode.undoHunk', run('Undo Hunk', () => this.toggleHunkAtCursor(true))),
      vscode.commands.registerCommand('autocode.chooseHunks', run('Choose Hunks', (a) => this.chooseHunks(a))),
    ];
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!this.plans.has(document.uri.path)) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    return [
      new vscode.CodeLens(top, { title: '$(check) Approve plan', command: 'autocode.approvePlan', arguments: [document.uri] }),
      new vscode.CodeLens(top, { title: '$(comment-discussion) Request changes', command: 'autocode.requestPlanChanges', arguments: [document.uri] }),
    ];
  }

  private async syncContext(): Promise<void> {
    await vscode.commands.executeCommand('setContext', PLAN_KEY, this.plans.size > 0);
    await vscode.commands.executeCommand('setContext', CHANGES_KEY, this.changes.size > 0);
    this.lensesChanged.fire();
  }

  // ---- the plan

  /** Opens the plan. Server-initiated (focus false): beside, keeping the keyboard where it is. */
  async openPlan(task: { id: string; brief: string }, markdown: string, revision: number | undefined, focus: boolean): Promise<void> {
    const text = markdown.trim() ? markdown : `# Plan for “${task.brief}”\n\n(The server sent no plan text.)`;
    const uri = this.ctx.docs.set(`/${task.id}/plan-revision-${revision ?? 0}.md`, text);
    const already = this.plans.has(uri.path);
    for (const [p, entry] of this.plans) if (entry.taskId === task.id && p !== uri.path) this.plans.delete(p);
    this.plans.set(uri.path, { taskId: task.id, revision });
    await this.syncContext();
    if (already && !focus) return;
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: !focus, viewColumn: focus ? vscode.ViewColumn.Active : vscode.ViewColumn.Beside });
    if (!focus) {
      noticeWhile(this.ctx.store, task.id, (t) => t.awaiting === 'planApproval', `AutoCode: the plan for “${task.brief}” is ready. Approve it or request changes from its editor (title bar or the lens above the plan).`);
    }
  }

  private planOf(arg: unknown): { path: string; entry: PlanEntry } | undefined {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    if (uri && this.plans.has(uri.path)) return { path: uri.path, entry: this.plans.get(uri.path) as PlanEntry };
    const id = typeof arg === 'string' ? arg : undefined;
    for (const [p, entry] of this.plans) if (!id || entry.taskId === id) return { path: p, entry };
    return undefined;
  }

  private async planDone(planPath: string): Promise<void> {
    this.plans.delete(planPath);
    await this.syncContext();
    await closeTabs((input) => input instanceof vscode.TabInputText && input.uri.scheme === 'autocode' && input.uri.path === planPath);
  }

  async approvePlan(arg: unknown): Promise<void> {
    const plan = this.planOf(arg);
    if (!plan) {
      void vscode.window.showInformationMessage('AutoCode: no plan is open for review.');
      return;
    }
    const task = this.ctx.store.get(plan.entry.taskId);
    const workspace = task?.workspace || undefined;
    this.accept(await this.ctx.server.execute(Commands.taskApprovePlan, args.approvePlanArgs(plan.entry.taskId, plan.entry.revision, workspace)), workspace);
    await this.planDone(plan.path);
  }

  async requestChanges(arg: unknown): Promise<void> {
    const plan = this.planOf(arg);
    if (!plan) return;
    const feedback = await vscode.window.showInputBox({
      title: 'AutoCode: Request Changes',
      prompt: 'What should change in the plan?',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'Say what should change, or press Escape to decide later.'),
    });
    if (feedback === undefined) return;
    const task = this.ctx.store.get(plan.entry.taskId);
    const workspace = task?.workspace || undefined;
    this.accept(await this.ctx.server.execute(Commands.taskRejectPlan, args.rejectPlanArgs(plan.entry.taskId, feedback, workspace)), workspace);
    await this.planDone(plan.path);
  }

  // ---- the change

  /** The texts of the task's files open in editors (unsaved edits included), by URI. */
  private openTexts(task: TaskView): Record<string, string> {
    const out: Record<string, string> = {};
    for (const rel of task.changedFiles) {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === path.join(task.workspace, rel));
      if (doc) out[doc.uri.toString()] = doc.getText();
    }
    return out;
  }

  /**
   * With a server that previews: one diff per file whose result differs, the person's file as
   * it is now (their editor when open) left, what Apply leaves there right. Returns the number
   * of diffs, or undefined when the server has no preview (the older diff against the copy).
   */
  private async openPreview(task: TaskView, focus: boolean): Promise<number | undefined> {
    if (!(await this.serverHas(Commands.taskPreview))) return undefined;
    const documents = this.openTexts(task);
    const preview = (await this.ctx.server.execute(Commands.taskPreview, {
      ...args.taskArgs(task.id, task.workspace || undefined),
      ...(Object.keys(documents).length ? { documents } : {}),
    })) as TaskPreview;
    const kept = this.hunks.get(task.id);
    const known = new Set(preview.files.flatMap((f) => f.hunks.map((h) => h.id)));
    const undone = new Set([...(kept?.undone ?? [])].filter((id) => known.has(id)));
    this.hunks.set(task.id, { preview, undone });
    for (const [p, id] of this.changes) if (id === task.id) this.changes.delete(p);
    const opened: Array<[vscode.Uri, vscode.Uri, string]> = [];
    for (const file of preview.files) {
      if (!file.hunks.length) continue;
      const mine = path.join(task.workspace, file.path);
      const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === mine);
      const left = open?.uri ?? (fs.existsSync(mine) ? vscode.Uri.file(mine) : this.ctx.docs.set(`/${task.id}/absent/${file.path}`, ''));
      const right = this.ctx.docs.set(`/${task.id}/result/${file.path}`, resultText(file, undone));
      this.changes.set(right.path, task.id);
      opened.push([left, right, file.path]);
    }
    await this.syncContext();
    for (const [left, right, rel] of opened) {
      await vscode.commands.executeCommand('vscode.diff', left, right, `AutoCode: ${rel} now ↔ after Apply (“${task.brief}”)`, { preview: false, preserveFocus: !focus });
    }
    if (preview.overlaps || preview.conflicts) {
      void vscode.window.showWarningMessage(
        `AutoCode: ${preview.overlaps} hunk${preview.overlaps === 1 ? '' : 's'} of “${task.brief}” overlap${preview.overlaps === 1 ? 's' : ''} your own edits` +
          (preview.conflicts ? ` (${preview.conflicts} git cannot merge)` : '') + '. Check them before Apply, or undo them.',
        'Choose Hunks',
      ).then((choice) => choice && vscode.commands.executeCommand('autocode.chooseHunks', task.id));
    }
    return opened.length;
  }

  private refreshResults(taskId: string): void {
    const entry = this.hunks.get(taskId);
    if (!entry) return;
    for (const file of entry.preview.files) {
      if (file.hunks.length) this.ctx.docs.set(`/${taskId}/result/${file.path}`, resultText(file, entry.undone));
    }
  }

  /** Keep or undo the hunk under the cursor of an "after Apply" editor. */
  async toggleHunkAtCursor(undo: boolean): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const uri = editor?.document.uri;
    const match = uri && uri.scheme === 'autocode' ? /^\/([^/]+)\/result\/(.+)$/.exec(uri.path) : null;
    const entry = match ? this.hunks.get(match[1]) : undefined;
    const file = entry?.preview.files.find((f) => f.path === match?.[2]);
    if (!editor || !match || !entry || !file) {
      void vscode.window.showInformationMessage('AutoCode: put the cursor on a hunk of an “after Apply” editor (the right side of the review), or use AutoCode: Choose Hunks.');
      return;
    }
    const hunk = hunkAtResultLine(file, entry.undone, editor.selection.active.line + 1);
    if (!hunk) {
      void vscode.window.showInformationMessage('AutoCode: no hunk at the cursor; move onto a changed line.');
      return;
    }
    if (undo) entry.undone.add(hunk.id);
    else entry.undone.delete(hunk.id);
    this.refreshResults(match[1]);
  }

  /** A picker of every hunk, the kept ones ticked; what is left unticked is undone. */
  async chooseHunks(arg: unknown): Promise<void> {
    const id = typeof arg === 'string' ? arg : this.taskOfChanges(arg)?.id;
    const entry = id ? this.hunks.get(id) : undefined;
    if (!id || !entry) {
      void vscode.window.showInformationMessage('AutoCode: no change is open for review (AutoCode: Review Changes opens it).');
      return;
    }
    const rows = entry.preview.files.flatMap((file) => file.hunks.map((h) => ({ ...hunkLabel(file, h), id: h.id, picked: !entry.undone.has(h.id) })));
    const picked = await vscode.window.showQuickPick(rows, {
      canPickMany: true,
      title: 'AutoCode: hunks to apply',
      placeHolder: 'Ticked hunks are applied; untick the ones to leave out (nothing is written until Apply)',
      ignoreFocusOut: true,
    });
    if (!picked) return;
    const keep = new Set(picked.map((p) => p.id));
    entry.undone = new Set(rows.filter((r) => !keep.has(r.id)).map((r) => r.id));
    this.refreshResults(id);
  }

  /** Opens one diff per changed file: what Apply does to the person's file (or, with an older server, the workspace file left and the task's result right). */
  async openChanges(task: TaskView, focus: boolean): Promise<number> {
    const previewed = await this.openPreview(task, focus);
    if (previewed !== undefined) {
      const moved = headMovedText(task.raw);
      if (moved) void vscode.window.showWarningMessage(`AutoCode: ${moved}`);
      return previewed;
    }
    const copy = task.copyPath && fs.existsSync(task.copyPath) ? task.copyPath : undefined;
    if (!copy || !task.workspace || !task.changedFiles.length) {
      if (task.diff) {
        const doc = await vscode.workspace.openTextDocument(this.ctx.docs.set(`/${task.id}/changes.diff`, task.diff));
        await vscode.languages.setTextDocumentLanguage(doc, 'diff');
        await vscode.window.showTextDocument(doc, { preview: false, preserveFocus: !focus });
      }
      return task.changedFiles.length;
    }
    for (const [p, id] of this.changes) if (id === task.id) this.changes.delete(p);
    const opened: Array<[vscode.Uri, vscode.Uri, string]> = [];
    for (const rel of task.changedFiles) {
      const mine = path.join(task.workspace, rel);
      const theirs = path.join(copy, rel);
      const left = fs.existsSync(mine) ? vscode.Uri.file(mine) : this.ctx.docs.set(`/${task.id}/absent/${rel}`, '');
      const right = this.ctx.docs.set(`/${task.id}/result/${rel}`, fs.existsSync(theirs) ? fs.readFileSync(theirs, 'utf8') : '');
      this.changes.set(right.path, task.id);
      opened.push([left, right, rel]);
    }
    await this.syncContext();
    for (const [left, right, rel] of opened) {
      await vscode.commands.executeCommand('vscode.diff', left, right, `AutoCode: changes for “${task.brief}” (${rel})`, { preview: false, preserveFocus: !focus });
    }
    const moved = headMovedText(task.raw);
    if (moved) void vscode.window.showWarningMessage(`AutoCode: ${moved}`);
    return opened.length;
  }

  private taskOfChanges(arg: unknown): TaskView | undefined {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    const id = (uri && this.changes.get(uri.path)) ?? (typeof arg === 'string' ? arg : undefined) ?? [...this.changes.values()][0];
    return id ? this.ctx.store.get(id) : undefined;
  }

  /**
   * Closes a task's "after Apply" diffs as soon as the store learns the task no longer waits for
   * the change's approval (applied, discarded or cancelled, here or through another channel), so a
   * stale diff never outlives the change, even before the reply of the Apply that caused it.
   */
  private closeWhenPassed(): vscode.Disposable {
    const subscription = this.ctx.store.onDidChange(() => {
      for (const id of new Set(this.changes.values())) {
        const task = this.ctx.store.get(id);
        if (!task || task.awaiting !== 'completionApproval') void this.changesDone(id);
      }
    });
    return new vscode.Disposable(() => subscription.dispose());
  }

  private async changesDone(taskId: string): Promise<void> {
    const paths = new Set([...this.changes].filter(([, id]) => id === taskId).map(([p]) => p));
    for (const p of paths) this.changes.delete(p);
    await this.syncContext();
    await closeTabs((input) => input instanceof vscode.TabInputTextDiff && input.modified.scheme === 'autocode' && paths.has(input.modified.path));
  }

  /** Whether the server serves `command` (asked once). */
  private async serverHas(command: string): Promise<boolean> {
    this.features ??= this.ctx.server
      .execute(Commands.protocolInfo, {})
      .then((info) => new Set(((info as { commands?: string[] }).commands ?? []).map(String)))
      .catch(() => new Set<string>());
    return (await this.features).has(command);
  }

  async applyChanges(arg: unknown): Promise<void> {
    const task = this.taskOfChanges(arg);
    if (!task) {
      void vscode.window.showInformationMessage('AutoCode: no change is open for review.');
      return;
    }
    // The server merges into open editors through workspace/applyEdit and never writes a file behind
    // an unsaved buffer: nothing to check here.
    const request: TaskApproveCompletionArgs = args.taskArgs(task.id, task.workspace || undefined);
    const chosen = this.hunks.get(task.id);
    const keep = chosen ? keepIds(chosen.preview, chosen.undone) : undefined;
    if (keep) request.keep = keep;
    const waiting = task.raw.needs;
    if (waiting.kind === 'approve_completion' && waiting.confirmation) {
      // Nothing proves this change: the person types the word, a button press is not enough.
      const summary = waiting.proof?.summary ?? 'the tests did not prove it';
      const typed = await vscode.window.showInputBox({
        title: 'AutoCode: Apply unproven change',
        prompt: `Nothing proves this change (${summary}). Type "${waiting.confirmation}" to apply it anyway.`,
        ignoreFocusOut: true,
      });
      if (typed !== waiting.confirmation) {
        void vscode.window.showInformationMessage(`AutoCode: not applied; the change is ${waiting.proof?.status ?? 'unproven'}.`);
        return;
      }
      request.confirm = waiting.confirmation;
    }
    const after = this.accept(await this.ctx.server.execute(Commands.taskApproveCompletion, request), task.workspace);
    if (after?.awaiting === 'completionApproval') {
      const { needs } = after.raw;
      const attempt = needs.kind === 'approve_completion' ? needs.apply : null;
      if (attempt) void vscode.window.showErrorMessage(`AutoCode: the change was not applied: ${attempt.message}. Apply again when ready.`);
      return;
    }
    const inEditor = after?.raw.result?.apply?.writtenByEditor ?? [];
    // Shown, so an unsaved change never hides in a closed diff.
    for (const rel of inEditor) {
      await vscode.window.showTextDocument(vscode.Uri.file(path.join(task.workspace, rel)), { preview: false, preserveFocus: true });
    }
    if (after?.awaiting === 'save') this.announceSave(after, inEditor);
    this.hunks.delete(task.id);
    await this.changesDone(task.id);
    if (after?.awaiting === 'conflicts') await this.resolveConflicts(after.id);
  }

  async discardChanges(arg: unknown): Promise<void> {
    const task = this.taskOfChanges(arg);
    if (!task) return;
    const choice = await vscode.window.showWarningMessage(`AutoCode: discard the change of “${task.brief}”? The task is cancelled; your files stay as they are.`, 'Discard');
    if (choice !== 'Discard') return;
    this.accept(await this.ctx.server.execute(Commands.taskCancel, args.taskArgs(task.id, task.workspace || undefined)), task.workspace);
    await this.changesDone(task.id);
  }

  // ---- conflicts

  /** Asks mine / theirs / markers for each conflicted file, then sends the choices. Dismissing any file sends nothing. */
  async resolveConflicts(arg: unknown): Promise<void> {
    const id = typeof arg === 'string' ? arg : stringField(arg, 'taskId');
    const task = (id ? this.ctx.store.get(id) : undefined) ?? this.ctx.store.awaiting('conflicts')[0];
    if (!task) {
      void vscode.window.showInformationMessage('AutoCode: no task waits for a choice on conflicting files.');
      return;
    }
    const conflicts = conflictsOf(task.raw);
    const choices: Record<string, Resolution> = {};
    for (const conflict of conflicts) {
      const picked = await vscode.window.showQuickPick(resolutionItems(conflict), {
        title: `AutoCode: ${conflict.path} — ${reasonText(conflict.reason)}`,
        placeHolder: `Which version of ${conflict.path} should your workspace keep? (nothing is written until you choose)`,
        ignoreFocusOut: true,
      });
      if (!picked) {
        void vscode.window.showInformationMessage(`AutoCode: nothing was written; “${task.brief}” still waits for your choice (AutoCode: Resolve Conflicts).`);
        return;
      }
      choices[conflict.path] = picked.resolution;
    }
    const after = this.accept(await this.ctx.server.execute(Commands.taskResolveConflicts, { ...args.taskArgs(task.id, task.workspace || undefined), choices }), task.workspace);
    for (const [rel, choice] of Object.entries(choices)) {
      if (choice === 'markers') await vscode.window.showTextDocument(vscode.Uri.file(path.join(task.workspace, rel)), { preview: false });
    }
    if (after?.awaiting === 'save') this.announceSave(after, Object.keys(choices));
    const written = after ? writtenFiles(after.raw) : undefined;
    if (written) void vscode.window.showInformationMessage(`AutoCode: wrote ${written.length ? written.join(', ') : 'nothing'} for “${task.brief}”.`);
  }

  /**
   * One notice while the task waits for the save, closed by the task's next state wherever it
   * came from (the save here, a cancel in another window or the CLI), not by the editors' dirty
   * flags: an undo leaves an editor dirty and the notice would outlive the task.
   */
  private announceSave(task: TaskView, fallback: string[]): void {
    const { needs } = task.raw;
    noticeWhile(this.ctx.store, task.id, (t) => t.awaiting === 'save',
      waitingForSaveText(task.brief, needs.kind === 'save_files' ? needs.paths : fallback, markedFiles(task.raw)));
  }

  /** Tells the person conflicting files wait for their choice. */
  announceConflicts(task: TaskView): void {
    const n = conflictsOf(task.raw).length;
    const moved = headMovedText(task.raw);
    noticeWhile(this.ctx.store, task.id, (t) => t.awaiting === 'conflicts',
      `AutoCode: “${task.brief}”: ${n} file${n === 1 ? '' : 's'} overlap${n === 1 ? 's' : ''} your own edits; nothing was written to ${n === 1 ? 'it' : 'them'}.${moved ? ` ${moved}` : ''}`,
      [{ label: 'Resolve Conflicts', command: 'autocode.resolveConflicts', arg: task.id }]);
  }
}

async function closeTabs(match: (input: unknown) => boolean): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => match(t.input));
  if (tabs.length) await vscode.window.tabGroups.close(tabs, true);
}
