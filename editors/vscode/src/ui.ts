// Small pieces of editor UI shared by the commands: choosing a folder,
// showing errors, and the plan and doctor documents.

import * as vscode from 'vscode';
import { Folder, folderForCommand } from './model/args';
import { renderDoctorHtml } from './model/doctor';
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
  if (err instanceof ServerCommandError && err.kind === 'alreadyDecided') {
    // A duplicate or late decision (another window, a retry after a reconnect): nothing was lost.
    void vscode.window.showInformationMessage(`AutoCode: ${err.message}`);
    return;
  }
  const message = err instanceof ServerCommandError || err instanceof Error ? err.message : String(err);
  void vscode.window.showErrorMessage(`AutoCode: ${action} failed. ${message}`);
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

/**
 * One Doctor panel, reused. It opens without taking the keyboard focus (a report has nothing to
 * type into): a focused webview takes the focus back whenever a quick pick closes, so the next
 * pick a command opens (Answer after the palette, say) would show without the caret and Enter
 * would go to the report (VS Code issue 93950).
 */
export class DoctorPanel {
  private panel: vscode.WebviewPanel | undefined;

  show(report: unknown, title: string): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('autocode.doctorPage', 'AutoCode Doctor',
        { viewColumn: vscode.ViewColumn.Active, preserveFocus: true }, { enableScripts: false });
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.reveal(vscode.ViewColumn.Active, true);
    }
    this.panel.webview.html = renderDoctorHtml(report, title, this.panel.webview.cspSource);
  }
}
