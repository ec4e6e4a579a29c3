// The Tasks view and the status bar item: both redraw from the TaskStore,
// which the server's didChange notifications keep current.

import * as vscode from 'vscode';
import { buildTaskTree, statusText, TaskNode, TaskStore } from '../model/tasks';
import { labelAndTooltip } from '../model/status';

/** Tree labels longer than this are cut with an ellipsis. */
const LABEL_MAX = 60;

export class TasksView implements vscode.TreeDataProvider<TaskNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TaskNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private parents = new Map<string, TaskNode | undefined>();
  private roots: TaskNode[] = [];
  readonly view: vscode.TreeView<TaskNode>;
  private readonly status: vscode.StatusBarItem;
  private readonly subscription: { dispose(): void };
  private serverProblem: string | undefined;

  constructor(private readonly store: TaskStore) {
    this.view = vscode.window.createTreeView('autocode.tasks', { treeDataProvider: this, showCollapseAll: true });
    this.status = vscode.window.createStatusBarItem('autocode.status', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'AutoCode';
    this.subscription = store.onDidChange(() => this.refresh());
    this.refresh();
    this.status.show();
  }

  setServerProblem(problem: string | undefined): void {
    this.serverProblem = problem;
    this.refresh();
  }

  refresh(): void {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath }));
    // While the server is down the tree is empty, so the view shows its welcome content: the
    // server is not running, with Restart Server and Show Output buttons. The tasks it last listed
    // cannot be acted on until it runs again; they come back with it. A message would hide those
    // buttons (and, without a folder, the Open Folder button), so none is set.
    this.roots = this.serverProblem ? [] : buildTaskTree(this.store.all(), folders);
    this.parents = new Map();
    const walk = (nodes: TaskNode[], parent: TaskNode | undefined): void => {
      for (const n of nodes) {
        this.parents.set(n.id, parent);
        walk(n.children, n);
      }
    };
    walk(this.roots, undefined);
    this.changed.fire(undefined);
    this.refreshStatus();
  }

  private refreshStatus(): void {
    if (this.serverProblem) {
      this.status.text = '$(error) AutoCode';
      this.status.tooltip = this.serverProblem;
      this.status.command = 'autocode.showOutput';
      return;
    }
    const active = this.store.active();
    this.status.text = statusText(active);
    this.status.tooltip = active ? `${active.brief}\nPhase: ${active.phase}\nClick to show the task.` : 'AutoCode: no task yet. Click to start one.';
    this.status.command = active ? { title: 'Show Task', command: 'autocode.openTask', arguments: [active.id] } : 'autocode.startTask';
  }

  getTreeItem(node: TaskNode): vscode.TreeItem {
    const collapsible = node.children.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None;
    // A shortened label keeps its full text in the tooltip.
    const { label, tooltip } = labelAndTooltip(node.label, LABEL_MAX, node.tooltip);
    const item = new vscode.TreeItem(label, collapsible);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = tooltip ? new vscode.MarkdownString(tooltip) : undefined;
    item.contextValue = node.contextValue;
    item.iconPath = new vscode.ThemeIcon(node.icon);
    if (node.kind === 'question') item.command = { title: 'Answer', command: 'autocode.answerQuestion', arguments: [node] };
    else if (node.kind === 'plan') item.command = { title: 'Review Plan', command: 'autocode.reviewPlan', arguments: [node] };
    else if (node.contextValue === 'task-completion-node') item.command = { title: 'Approve Completion', command: 'autocode.approveCompletion', arguments: [node] };
    else if (node.kind === 'summary') item.command = { title: 'Open Transcript', command: 'autocode.openTranscript', arguments: [node.taskId] };
    else if (node.file) item.command = { title: 'Open', command: 'vscode.open', arguments: [vscode.Uri.file(node.file)] };
    return item;
  }

  getChildren(node?: TaskNode): TaskNode[] {
    return node ? node.children : this.roots;
  }

  getParent(node: TaskNode): TaskNode | undefined {
    return this.parents.get(node.id);
  }

  /**
   * Shows a task in the view, expanded. `focus` moves the keyboard there: only when the person asked
   * for the task, never while a question they may be typing into is open.
   */
  async reveal(taskId: string, focus: boolean): Promise<void> {
    const find = (nodes: TaskNode[]): TaskNode | undefined => {
      for (const n of nodes) {
        if (n.kind === 'task' && n.taskId === taskId) return n;
        const inner = find(n.children);
        if (inner) return inner;
      }
      return undefined;
    };
    const node = find(this.roots);
    if (focus) await vscode.commands.executeCommand('autocode.tasks.focus');
    if (node) await this.view.reveal(node, { select: focus, focus, expand: true });
  }

  dispose(): void {
    this.subscription.dispose();
    this.view.dispose();
    this.status.dispose();
    this.changed.dispose();
  }
}
