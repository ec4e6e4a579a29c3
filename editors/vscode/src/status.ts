// The server's state where VS Code users look for it: a language status item
// (state, server version, interpreter and whether the server is the bundled
// one, the workspace's learned record) whose action is "Show Output", and the
// `autocode.serverDown` context key that turns every view into a
// "not running: Restart / Show Output" message.

import * as vscode from 'vscode';
import type { ServerManager } from './client';
import { statusItemContent } from './model/status';
import { Commands, isObject, stringField } from './protocol';

export const NOT_RUNNING = 'The AutoCode language server is not running. Run "AutoCode: Restart Language Server", or "AutoCode: Show Output" to see why.';

export class ServerStatus implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private record: string | undefined;

  constructor(private readonly server: ServerManager) {
    this.item = vscode.languages.createLanguageStatusItem('autocode.server', { pattern: '**' });
    this.item.name = 'AutoCode';
    this.update(false);
    this.item.text = '$(sync~spin) AutoCode: starting';
  }

  /**
   * Called on every state change of the client; returns why the server is down (undefined while it
   * runs or is still starting for the first time).
   */
  update(running: boolean, problem?: string): string | undefined {
    const down = !running && (problem !== undefined || this.wasStarted);
    void vscode.commands.executeCommand('setContext', 'autocode.serverDown', down);
    if (running) this.wasStarted = true;
    const info = this.server.serverInfo;
    const content = statusItemContent({
      running, problem, version: this.server.serverVersion, python: info?.python, bundled: info?.bundled, record: this.record,
    });
    this.item.text = content.text;
    this.item.detail = content.detail;
    this.item.severity = content.severity === 'error' ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    this.item.command = content.command;
    return down ? problem ?? NOT_RUNNING : undefined;
  }

  private wasStarted = false;
  private reads = 0;

  /**
   * Reads the record's state as doctor reports it. Called once the views have their first
   * answers after the server starts (extension.ts: a doctor report is not on the way to a ready
   * window) and again whenever the record may have changed (a task ended and learned, Forget),
   * so the item never says "missing" while doctor says "valid".
   */
  async readRecord(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder || !this.server.running) return;
    // A task's end asks twice in a row (completed, then learned); the server may answer the
    // second first. Only the newest read decides, so an answer from before the record was
    // written never overwrites one from after.
    const read = ++this.reads;
    try {
      const doctor = await this.server.execute(Commands.doctor, { workspace: folder.uri.fsPath });
      if (read !== this.reads) return;
      const report = isObject(doctor) && isObject(doctor.report) ? doctor.report : undefined;
      const record = report && isObject(report.record) ? report.record : undefined;
      const now = record ? stringField(record, 'status') : undefined;
      const changed = now !== this.record;
      this.record = now;
      if (changed && this.server.running) this.update(true);
    } catch {
      // no repository, or the server went away: the item keeps what it has
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
