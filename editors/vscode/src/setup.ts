// Setting up a real model from VS Code: the provider, model, base URL and
// engine settings and the API key (kept in SecretStorage) reach the server as
// `autocode.session.configure` on every start and every change, without a
// restart; the key is never written to settings.json, the repository or a
// log. Also the provider check (`autocode doctor --check-provider`).

import * as vscode from 'vscode';
import type { ServerManager } from './client';
import type { SessionSettings } from './generated/protocol';
import { checkSummary, keyProblem, ModelSettings, sessionArgs } from './model/setup';
import { Commands } from './protocol';
import { folders, pickFolder, showMarkdownPreview, VirtualDocuments } from './ui';

const SECRET = 'autocode.apiKey';
const WATCHED = ['autocode.provider', 'autocode.model', 'autocode.baseUrl', 'autocode.engine', 'autocode.apiKeyVariable'];

function readSettings(): ModelSettings {
  const config = vscode.workspace.getConfiguration('autocode');
  const text = (name: string): string => config.get<string>(name, '') ?? '';
  return { provider: text('provider'), model: text('model'), baseUrl: text('baseUrl'), engine: text('engine'), apiKeyVariable: text('apiKeyVariable') };
}

export class ModelSetup implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** What the server said it holds after the last configure. */
  last: SessionSettings | undefined;

  constructor(
    private readonly server: ServerManager,
    private readonly secrets: vscode.SecretStorage,
    private readonly output: vscode.LogOutputChannel,
    private readonly docs: VirtualDocuments,
  ) {
    this.disposables.push(
      server.onDidStart(() => void this.send(true)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (WATCHED.some((name) => e.affectsConfiguration(name))) void this.send(e.affectsConfiguration('autocode.apiKeyVariable'));
      }),
      secrets.onDidChange((e) => {
        if (e.key === SECRET) void this.send(true);
      }),
    );
  }

  /** Sends the settings (and, with `withKey`, the stored key or '' to forget it) to the running server. */
  async send(withKey: boolean): Promise<void> {
    if (!this.server.running) return;
    const key = withKey ? (await this.secrets.get(SECRET)) ?? '' : undefined;
    try {
      this.last = await this.server.executeQuietly(Commands.sessionConfigure, sessionArgs(readSettings(), key));
      const given = Object.entries(this.last.settings).map(([k, v]) => `${k}=${v}`).join(', ');
      this.output.info(`model settings for this window: ${given || 'none (the AutoCode settings decide)'}; key ${this.last.apiKeySet ? `held by the server as ${this.last.apiKeyEnv}` : 'not set'}`);
      if (this.last.ignored.length) this.output.warn(`this server does not know the settings ${this.last.ignored.join(', ')}; update AutoCode to use them`);
    } catch (err) {
      this.output.warn(`could not give the server the model settings: ${(err as Error).message}`);
    }
  }

  async setKey(): Promise<void> {
    const value = await vscode.window.showInputBox({
      title: 'AutoCode: Set API Key',
      prompt: 'The model provider\'s API key. Kept in VS Code\'s secret storage and handed to the AutoCode server in memory; never written to settings or the repository.',
      password: true,
      ignoreFocusOut: true,
      validateInput: keyProblem,
    });
    if (value === undefined) return;
    await this.secrets.store(SECRET, value.trim());
    await this.send(true);
    void vscode.window.showInformationMessage(`AutoCode: the API key is set${this.last?.apiKeyEnv ? ` (the server reads it as ${this.last.apiKeyEnv})` : ''}.`, 'Check Provider')
      .then((choice) => choice && vscode.commands.executeCommand('autocode.checkProvider'));
  }

  async clearKey(): Promise<void> {
    await this.secrets.delete(SECRET);
    await this.send(true);
    void vscode.window.showInformationMessage('AutoCode: the API key is forgotten (secret storage and the server\'s memory).');
  }

  async check(): Promise<void> {
    if (!folders().length) {
      void vscode.window.showErrorMessage('AutoCode: the provider check reads the repository\'s settings too: open its folder first (File > Open Folder).');
      return;
    }
    const folder = await pickFolder('check the provider for');
    if (!folder) return;
    const found = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'AutoCode: checking the model provider…' },
      () => this.server.execute(Commands.providerCheck, { workspace: folder.path }));
    const summary = checkSummary(found.check);
    const uri = this.docs.set(`/provider-check-${folder.name}.md`, `# AutoCode: model provider check\n\n${summary.text}\n\n\`\`\`text\n${found.text}\n\`\`\`\n`);
    const actions = summary.ok ? ['Show Details'] : ['Open Model Settings', 'Set API Key', 'Show Details'];
    const show = summary.ok ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    void show(`AutoCode: ${summary.text}`, ...actions).then((choice) => {
      if (choice === 'Show Details') void showMarkdownPreview(uri);
      else if (choice === 'Open Model Settings') void vscode.commands.executeCommand('autocode.openModelSettings');
      else if (choice === 'Set API Key') void vscode.commands.executeCommand('autocode.setApiKey');
    });
  }

  register(): vscode.Disposable[] {
    return [
      vscode.commands.registerCommand('autocode.setApiKey', () => this.setKey()),
      vscode.commands.registerCommand('autocode.clearApiKey', () => this.clearKey()),
      vscode.commands.registerCommand('autocode.openModelSettings', () => vscode.commands.executeCommand('workbench.action.openSettings', '@id:autocode.provider,autocode.model,autocode.baseUrl,autocode.engine,autocode.apiKeyVariable')),
    ];
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
