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

const OTHER = '$(edit) Other answer…';

/** Asks one question: a QuickPick when it has choices, else an InputBox. Undefined when dismissed. */
export async function promptAnswer(question: Question, taskBrief: string): Promise<string | undefined> {
  const title = `AutoCode: ${taskBrief}`;
  if (question.choices.length) {
    const items = question.choices.map((label) => ({ label }));
    if (question.allowOther) items.push({ label: OTHER });
    const picked = await vscode.window.showQuickPick(items, { title, placeHolder: question.text, ignoreFocusOut: true });
    if (!picked) return undefined;
    if (picked.label !== OTHER) return picked.label;
  }
  return vscode.window.showInputBox({
    title,
    prompt: question.text,
    placeHolder: 'Your answer',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'Type an answer, or press Escape to answer later.'),
  });
}

/** Read-only documents for plans (markdown) shown in the Markdown preview. */
export class PlanDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'autocode-plan';
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  uriFor(taskId: string): vscode.Uri {
    return vscode.Uri.from({ scheme: PlanDocuments.scheme, path: `/${taskId}/plan.md` });
  }

  set(taskId: string, markdown: string): vscode.Uri {
    const uri = this.uriFor(taskId);
    this.contents.set(uri.toString(), markdown);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '# Plan\n\nThis plan is no longer available; run "AutoCode: Review Plan" again.';
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
