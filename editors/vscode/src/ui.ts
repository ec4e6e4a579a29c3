// Small pieces of editor UI shared by the commands: choosing a folder,
// asking a question, showing errors, and the plan and doctor documents.

import * as vscode from 'vscode';
import { Folder, folderForCommand } from './model/args';
import { renderDoctorHtml } from './model/doctor';
import { Question } from './model/tasks';
import { ServerCommandError } from './client';

export function folders(): Folder[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath }));
}

/** The folder a command acts on; asks when several are open and none is implied. Undefined when none is open or the person cancelled. */
export async function pickFolder(purpose: string): Promise<Folder | undefined> {
  const all = folders();
  if (!all.length) return undefined;
  const implied = folderForCommand(all, vscode.window.activeTextEditor?.document.uri.fsPath);
  if (implied) return implied;
  const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: `Folder to ${purpose}` });
  return picked ? { name: picked.name, path: picked.uri.fsPath } : undefined;
}

/** Shows a failed command's message; a person-facing error from the server is shown as is. */
export function showError(action: string, err: unknown): void {
  const message = err instanceof ServerCommandError || err instanceof Error ? err.message : String(err);
  void vscode.window.showErrorMessage(`AutoCode: ${action} failed. ${message}`);
}

/**
 * Asks one question. Without suggestions: an InputBox. With suggestions: a
 * QuickPick that lists them and also offers whatever the person types, so a
 * suggestion is never forced on them.
 */
export async function promptAnswer(question: Question, taskBrief: string): Promise<string | undefined> {
  if (!question.choices.length) {
    return vscode.window.showInputBox({
      title: `AutoCode: ${taskBrief}`,
      prompt: question.text,
      placeHolder: 'Your answer',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'Type an answer, or press Escape to answer later.'),
    });
  }
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick();
    const suggestions: vscode.QuickPickItem[] = question.choices.map((label) => ({
      label,
      description: label === question.defaultAnswer ? 'suggested' : undefined,
    }));
    pick.title = `AutoCode: ${question.text}`;
    pick.placeholder = `${taskBrief}: pick a suggestion or type your own answer`;
    pick.ignoreFocusOut = true;
    pick.items = suggestions;
    pick.onDidChangeValue((value) => {
      const typed = value.trim() && !question.choices.includes(value.trim()) ? [{ label: value.trim(), description: 'your answer', alwaysShow: true }] : [];
      pick.items = [...typed, ...suggestions];
    });
    let answered = false;
    pick.onDidAccept(() => {
      const answer = (pick.selectedItems[0] ?? pick.activeItems[0])?.label ?? pick.value.trim();
      if (!answer) return;
      answered = true;
      resolve(answer);
      pick.hide();
    });
    pick.onDidHide(() => {
      if (!answered) resolve(undefined);
      pick.dispose();
    });
    pick.show();
  });
}

/** Read-only documents the extension shows: plans (Markdown preview) and completion diffs. */
export class VirtualDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'autocode';
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(path: string, content: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: VirtualDocuments.scheme, path });
    this.contents.set(uri.toString(), content);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? 'This document is no longer available; run the AutoCode command again.';
  }
}

export async function showMarkdownPreview(uri: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}

/** One Doctor panel, reused. */
export class DoctorPanel {
  private panel: vscode.WebviewPanel | undefined;

  show(report: unknown, title: string): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('autocode.doctor', 'AutoCode Doctor', vscode.ViewColumn.Active, { enableScripts: false });
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.reveal(vscode.ViewColumn.Active);
    }
    this.panel.webview.html = renderDoctorHtml(report, title, this.panel.webview.cspSource);
  }
}
