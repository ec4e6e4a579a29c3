// Notifications that close themselves once what they say has passed: "the
// plan is ready" once the plan is decided, "asks: …" once the question is
// answered (here, in the CLI or another window), "is verified" once the change
// is applied or the task cancelled. VS Code has no call that closes a message,
// so these are progress notifications whose work ends when the task's state
// moves on; their actions are command links in the message, which run the same
// commands the buttons of an ordinary message would.

import * as vscode from 'vscode';
import type { TaskStore, TaskView } from './model/tasks';

/** An action of a notice: its label and the command it runs with one argument. */
export interface NoticeAction {
  label: string;
  command: string;
  arg: unknown;
}

/** The message with each action as a command link after it. */
export function noticeText(message: string, actions: NoticeAction[]): string {
  const links = actions.map((a) => `[${a.label}](command:${a.command}?${encodeURIComponent(JSON.stringify([a.arg]))})`);
  return links.length ? `${message} ${links.join(' · ')}` : message;
}

/**
 * Shows `message` until a newer snapshot of the task than the store holds now no longer
 * satisfies `holds` (the store may not have caught up with what the message is about yet).
 */
export function noticeWhile(store: TaskStore, taskId: string, holds: (task: TaskView) => boolean, message: string, actions: NoticeAction[] = []): void {
  const from = store.get(taskId)?.revision ?? -1;
  noticeUntil(noticeText(message, actions), (passed) => store.onDidChange(() => {
    const task = store.get(taskId);
    if (task && task.revision > from && !holds(task)) passed();
  }));
}

/** Shows `title` until `watch` calls `passed`; the disposable `watch` returns is disposed then. */
export function noticeUntil(title: string, watch: (passed: () => void) => vscode.Disposable): void {
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, () => new Promise<void>((resolve) => {
    const subscription = watch(() => {
      subscription.dispose();
      resolve();
    });
  }));
}
