// Entry point: wires the language server manager, the task store, the views
// and the commands together.

import * as vscode from 'vscode';
import { ServerManager } from './client';
import { acceptSnapshot, Context, onAskQuestion, onReviewPlan, refreshMemory, refreshTasks, registerCommands } from './commands';
import { ModelSetup } from './setup';
import { TaskStore } from './model/tasks';
import { ServerStatus } from './status';
import { DoctorPanel, VirtualDocuments } from './ui';
import { MemoryView, PromotionView } from './views/memory';
import { TasksView } from './views/tasks';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('AutoCode', { log: true });
  const store = new TaskStore();
  const tasksView = new TasksView(store);
  const docs = new VirtualDocuments();
  // The handlers run only after start(), by which time ctx is set.
  let ctx: Context;
  let status: ServerStatus | undefined;
  const server = new ServerManager(output, {
    onTaskDidChange: (params) => acceptSnapshot(ctx, params),
    onAskQuestion: (params) => onAskQuestion(ctx, params),
    onReviewPlan: (params) => onReviewPlan(ctx, params),
    onStateChange: (running, problem) => {
      const why = status?.update(running, problem);
      tasksView.setServerProblem(why);
      ctx.memoryView.setServerDown(why !== undefined);
      ctx.promotionView.setServerDown(why !== undefined);
    },
  });
  manager = server;
  status = new ServerStatus(server);
  ctx = {
    server, store, tasksView, memoryView: new MemoryView(), promotionView: new PromotionView(), docs, doctor: new DoctorPanel(), output,
    refreshRecord: () => void status?.readRecord(),
  };
  // What the views show is asked for first, the moment the server runs; what nobody looks at
  // yet (the record's state in the language status item, read with a whole doctor report)
  // waits until the views have their answers, so it does not compete with them on the way
  // to a ready window. This listener is added before ModelSetup's, so the views' requests
  // also go out ahead of the model settings.
  const listsOnStart = server.onDidStart(() => {
    void Promise.allSettled([refreshMemory(ctx), refreshTasks(ctx)]).then(() => status?.readRecord());
  });
  const setup = new ModelSetup(server, context.secrets, output, docs);
  ctx.setup = setup;
  context.subscriptions.push(
    output,
    server,
    status,
    setup,
    tasksView,
    ctx.memoryView,
    ctx.promotionView,
    vscode.workspace.registerTextDocumentContentProvider(VirtualDocuments.scheme, docs),
    ...registerCommands(ctx),
    listsOnStart,
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      tasksView.refresh();
      void refreshTasks(ctx);
      void refreshMemory(ctx);
    }),
  );
  // Activation ends here: the server starts in the background (every command and view waits
  // for it through ServerManager.start), so the extension host's other extensions, and the
  // ones waiting for start-up to finish, are not held up by a Python process starting.
  void server.start();
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
}
