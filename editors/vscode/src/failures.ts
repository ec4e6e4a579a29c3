// Every way out of a task that stopped, one click away: a failed task's
// notification offers "Show test output", "Retry verification", "Resume" and
// "Open transcript" as links (never a bare path), an interrupted task offers
// Resume, and the same actions run from the Tasks view and the palette. The
// notice closes once the task is no longer failed (retried) or interrupted.

import * as vscode from 'vscode';
import type { ServerManager } from './client';
import * as args from './model/args';
import {
  CANCEL_TASK, failedInVerification, failureActions, failureMessage, OPEN_TRANSCRIPT, RESUME, RETRY_VERIFICATION, SHOW_TEST_OUTPUT, testOutputFile,
} from './model/failures';
import type { TaskNode, TaskStore, TaskView } from './model/tasks';
import { type NoticeAction, noticeWhile } from './notices';
import { Commands } from './protocol';
import { showMarkdownPreview } from './ui';

/** What the failure actions need of the extension. */
export interface FailureContext {
  server: ServerManager;
  store: TaskStore;
  output: vscode.LogOutputChannel;
  accept(raw: unknown, workspace?: string): TaskView | undefined;
}

const COMMAND_OF: Record<string, string> = {
  [SHOW_TEST_OUTPUT]: 'autocode.showTestOutput',
  [RETRY_VERIFICATION]: 'autocode.retryVerification',
  [RESUME]: 'autocode.resumeTask',
  [OPEN_TRANSCRIPT]: 'autocode.openTranscript',
  [CANCEL_TASK]: 'autocode.cancelTask',
};

export class Failures {
  /** Tasks whose interruption was announced in this window (once each). */
  private readonly announcedInterrupted = new Set<string>();

  constructor(private readonly ctx: FailureContext) {}

  /** The notification for a task that just failed, with its ways out as buttons. */
  announceFailure(task: TaskView): void {
    this.updateContext();
    noticeWhile(this.ctx.store, task.id, (t) => t.state.toLowerCase() === 'failed', failureMessage(task.raw, false), this.links(task, false));
  }

  /** The notification for tasks a listing found interrupted (each once per window). */
  announceInterrupted(tasks: TaskView[]): void {
    for (const task of tasks) {
      if (this.announcedInterrupted.has(task.id)) continue;
      this.announcedInterrupted.add(task.id);
      noticeWhile(this.ctx.store, task.id, (t) => t.interrupted, failureMessage(task.raw, true), this.links(task, true));
    }
  }

  /** The ways out as the notice's actions, each running its command on the task. */
  private links(task: TaskView, interrupted: boolean): NoticeAction[] {
    return failureActions(task.raw, interrupted).filter((label) => COMMAND_OF[label]).map((label) => ({ label, command: COMMAND_OF[label], arg: task.id }));
  }

  /** `autocode.hasFailedVerification` offers Retry / Show test output in the palette. */
  updateContext(): void {
    const any = this.ctx.store.all().some((t) => failedInVerification(t.raw));
    void vscode.commands.executeCommand('setContext', 'autocode.hasFailedVerification', any);
  }

  private async chooseTask(arg: unknown, fits: (t: TaskView) => boolean, verb: string): Promise<TaskView | undefined> {
    const id = typeof arg === 'string' ? arg : typeof arg === 'object' && arg !== null ? (arg as TaskNode).taskId : undefined;
    const known = id ? this.ctx.store.get(id) : undefined;
    if (known) return known;
    const candidates = this.ctx.store.all().filter(fits);
    if (!candidates.length) {
      void vscode.window.showInformationMessage(`AutoCode: no task to ${verb}.`);
      return undefined;
    }
    if (candidates.length === 1) return candidates[0];
    const picked = await vscode.window.showQuickPick(candidates.map((t) => ({ label: t.brief, description: t.phase, detail: t.id, task: t })), { placeHolder: `Task to ${verb}` });
    return picked?.task;
  }

  async showTestOutput(arg: unknown): Promise<void> {
    const task = await this.chooseTask(arg, (t) => testOutputFile(t.raw) !== undefined, 'show the test output of');
    const file = task && testOutputFile(task.raw);
    if (!file) return;
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      await vscode.window.showTextDocument(doc, { preview: true });
    } catch {
      void vscode.window.showWarningMessage(`AutoCode: “${task.brief}” has no test output: its tests never ran.`);
    }
  }

  /** Verifies the task's change again (after the person fixed the environment or the test command). */
  async retryVerification(arg: unknown): Promise<void> {
    const task = await this.chooseTask(arg, (t) => failedInVerification(t.raw), 'retry the verification of');
    if (!task) return;
    const snap = await this.ctx.server.execute(Commands.taskRetryVerification, args.taskArgs(task.id, task.workspace || undefined));
    const now = this.ctx.accept(snap, task.workspace);
    this.ctx.output.info(`task ${task.id}: verification retried (${now?.state ?? 'unknown state'})`);
  }

  async openTranscript(arg: unknown): Promise<void> {
    const task = await this.chooseTask(arg, (t) => t.raw.agent !== null, 'open the transcript of');
    if (!task) return;
    const page = await this.ctx.server.execute(Commands.taskTranscript, args.taskArgs(task.id, task.workspace || undefined));
    await showMarkdownPreview(vscode.Uri.file(page.path));
  }

  register(wrap: (id: string, action: string, fn: (arg?: unknown) => Promise<void>) => vscode.Disposable): vscode.Disposable[] {
    return [
      wrap('autocode.showTestOutput', 'Show Test Output', (a) => this.showTestOutput(a)),
      wrap('autocode.retryVerification', 'Retry Verification', (a) => this.retryVerification(a)),
      wrap('autocode.openTranscript', 'Open Transcript', (a) => this.openTranscript(a)),
    ];
  }
}
