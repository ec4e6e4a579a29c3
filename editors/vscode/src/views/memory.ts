// The Memory view (agent and team memories, project and global, or the
// results of a search) and the Team Memory Promotion view (a checkbox per
// candidate of the server's promotion plan).

import * as vscode from 'vscode';
import { shorten } from '../model/status';
import { groupMemories, MemoryGroup, MemoryItem, PromotionCandidate } from '../model/memory';

type MemoryNode = { kind: 'group'; group: MemoryGroup } | { kind: 'memory'; item: MemoryItem } | { kind: 'note'; text: string };

export class MemoryView implements vscode.TreeDataProvider<MemoryNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<MemoryNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<MemoryNode>;
  private items: MemoryItem[] = [];
  private hasRepository = false;
  private search: { query: string; results: MemoryItem[] } | undefined;
  private note: string | undefined = 'Waiting for the AutoCode language server…';

  constructor() {
    this.view = vscode.window.createTreeView('autocode.memory', { treeDataProvider: this });
  }

  show(items: MemoryItem[], hasRepository: boolean, folderName: string | undefined): void {
    this.items = items;
    this.hasRepository = hasRepository;
    this.note = undefined;
    this.view.description = folderName ? `project: ${folderName}` : 'global only';
    this.changed.fire(undefined);
  }

  showProblem(text: string): void {
    this.note = text;
    this.changed.fire(undefined);
  }

  /**
   * While the server is down the view is empty (no stale memories, no search message), so its
   * welcome content shows: not running, with Restart Server and Show Output buttons.
   */
  setServerDown(down: boolean): void {
    if (this.down === down) return;
    this.down = down;
    this.view.message = !down && this.search ? searchMessage(this.search.query, this.search.results.length) : undefined;
    this.changed.fire(undefined);
  }

  private down = false;

  showSearch(query: string, results: MemoryItem[]): void {
    this.search = { query, results };
    void vscode.commands.executeCommand('setContext', 'autocode.memorySearchActive', true);
    if (!this.down) this.view.message = searchMessage(query, results.length);
    this.changed.fire(undefined);
  }

  clearSearch(): void {
    this.search = undefined;
    void vscode.commands.executeCommand('setContext', 'autocode.memorySearchActive', false);
    this.view.message = undefined;
    this.changed.fire(undefined);
  }

  getTreeItem(node: MemoryNode): vscode.TreeItem {
    if (node.kind === 'note') {
      const item = new vscode.TreeItem(node.text);
      item.iconPath = new vscode.ThemeIcon('warning');
      return item;
    }
    if (node.kind === 'group') {
      // Always expandable: a group that was empty when first drawn must still open when a memory arrives.
      const item = new vscode.TreeItem(node.group.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group/${node.group.id}`;
      item.description = `${node.group.items.length}`;
      item.iconPath = new vscode.ThemeIcon(node.group.owner === 'team' ? 'organization' : 'person');
      item.contextValue = `group-${node.group.owner}-${node.group.scope}`;
      return item;
    }
    const m = node.item;
    const firstLine = m.content.split('\n')[0];
    // The label is the first line, shortened; the tooltip below has the whole memory.
    const item = new vscode.TreeItem(shorten(firstLine, 80));
    item.id = `${this.search ? 'search/' : ''}memory/${m.id}`;
    item.description = [m.category, this.search ? `${m.owner} · ${m.scope}` : '', m.score !== undefined ? m.score.toFixed(2) : ''].filter(Boolean).join(' · ');
    const tooltip = new vscode.MarkdownString();
    tooltip.appendText(m.content);
    tooltip.appendMarkdown(`\n\n*${m.owner} · ${m.scope}${m.category ? ` · ${m.category}` : ''} · id ${m.id}*`);
    item.tooltip = tooltip;
    item.iconPath = new vscode.ThemeIcon('note');
    item.contextValue = 'memory';
    return item;
  }

  getChildren(node?: MemoryNode): MemoryNode[] {
    if (this.down) return [];
    if (!node) {
      const notes: MemoryNode[] = this.note ? [{ kind: 'note', text: this.note }] : [];
      if (this.search) return [...notes, ...this.search.results.map((item): MemoryNode => ({ kind: 'memory', item }))];
      return [...notes, ...groupMemories(this.items, this.hasRepository).map((group): MemoryNode => ({ kind: 'group', group }))];
    }
    if (node.kind === 'group') return node.group.items.map((item): MemoryNode => ({ kind: 'memory', item }));
    return [];
  }

  /** The memory a command was invoked on (from the tree) or the selection. */
  memoryOf(arg: unknown): MemoryItem | undefined {
    const node = (arg as MemoryNode | undefined) ?? this.view.selection[0];
    return node && node.kind === 'memory' ? node.item : undefined;
  }

  dispose(): void {
    this.view.dispose();
    this.changed.dispose();
  }
}

export class PromotionView implements vscode.TreeDataProvider<PromotionCandidate>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<PromotionCandidate | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<PromotionCandidate>;
  private candidates: PromotionCandidate[] = [];
  private readonly subscription: vscode.Disposable;

  constructor() {
    this.view = vscode.window.createTreeView('autocode.promotion', { treeDataProvider: this });
    this.subscription = this.view.onDidChangeCheckboxState((e) => {
      for (const [candidate, state] of e.items) candidate.selected = state === vscode.TreeItemCheckboxState.Checked;
      this.updateMessage();
    });
  }

  private down = false;

  /** While the server is down the view is empty, so its welcome content (Restart, Show Output) shows. */
  setServerDown(down: boolean): void {
    if (this.down === down) return;
    this.down = down;
    this.updateMessage();
    this.changed.fire(undefined);
  }

  show(candidates: PromotionCandidate[]): void {
    this.candidates = candidates;
    this.updateMessage();
    this.changed.fire(undefined);
  }

  selectedIds(): string[] {
    return this.candidates.filter((c) => c.selected).map((c) => c.id);
  }

  candidatesOf(ids: string[]): PromotionCandidate[] {
    return this.candidates.filter((c) => ids.includes(c.id));
  }

  private updateMessage(): void {
    const chosen = this.candidates.filter((c) => c.selected).length;
    this.view.message = this.candidates.length && !this.down
      ? `${chosen} of ${this.candidates.length} candidates selected. Apply with the ✓ button.`
      : undefined;
  }

  getTreeItem(c: PromotionCandidate): vscode.TreeItem {
    const item = new vscode.TreeItem(shorten(c.skillName || c.content.split('\n')[0], 80));
    item.id = `candidate/${c.id}`;
    item.description = c.reason || c.content.split('\n')[0];
    item.tooltip = `${c.content}${c.reason ? `\n\n${c.reason}` : ''}${c.agents.length ? `\n\nUsed by: ${c.agents.join(', ')}` : ''}`;
    item.checkboxState = c.selected ? vscode.TreeItemCheckboxState.Checked : vscode.TreeItemCheckboxState.Unchecked;
    item.contextValue = 'candidate';
    return item;
  }

  getChildren(node?: PromotionCandidate): PromotionCandidate[] {
    return node || this.down ? [] : this.candidates;
  }

  dispose(): void {
    this.subscription.dispose();
    this.view.dispose();
    this.changed.dispose();
  }
}

/** The Memory view's message while a search's results are shown. */
export function searchMessage(query: string, count: number): string {
  return `${count} result${count === 1 ? '' : 's'} for “${query}”`;
}
