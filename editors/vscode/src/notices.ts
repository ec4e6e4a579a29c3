// Notifications that close themselves once what they say has passed: "the
// plan is ready" once the plan is decided, "the changes are open" once they
// are applied or discarded. VS Code has no call that closes a message, so
// these are progress notifications whose work ends when the task's state moves
// on; messages with buttons stay ordinary ones.

import * as vscode from 'vscode';
import type { TaskStore, TaskView } from './model/tasks';

/**
 * Shows `message` until a newer snapshot of the task than the store holds now no longer
 * satisfies `holds` (the store may not have caught up with what the message is about yet).
 */
export function noticeWhile(store: TaskStore, taskId: string, holds: (task: TaskView) => boolean, message: string): void {
  const from = store.get(taskId)?.revision ?? -1;
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: message }, () => new Promise<void>((resolve) => {
    const subscription = store.onDidChange(() => {
      const task = store.get(taskId);
      if (!task || task.revision <= from || holds(task)) return;
      subscription.dispose();
      resolve();
    });
  }));
}
