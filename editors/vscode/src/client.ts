// Owns the language client: finds the interpreter, checks that AutoCode is
// installed in it, starts `python -m autocode_lsp` over stdio (or connects
// over TCP), opts in to AutoCode's own messages, and restarts when the
// interpreter or the settings change.

import * as cp from 'node:child_process';
import * as net from 'node:net';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  StaticFeature,
  StreamInfo,
} from 'vscode-languageclient/node';
import { bundledLauncher, importStrategy } from './bundled';
import { choosePython, installHint, PythonChoice } from './model/python';
import { chooseEndpoint, chooseToken, Endpoint, explainRefusal, initializationOptions, Token } from './model/remote';
import { connectWebSocket } from './model/websocket';
import { ErrorCodes, isObject, Methods, stringField } from './protocol';

export interface ServerHandlers {
  onTaskDidChange(params: unknown): void;
  onAskQuestion(params: unknown): Promise<unknown>;
  onReviewPlan(params: unknown): Promise<unknown>;
  onStateChange(running: boolean, problem?: string): void;
}

/** A failure the person can act on; its message is shown as is. */
export class ServerCommandError extends Error {
  constructor(message: string, readonly kind: string | undefined, readonly code: number | undefined, readonly data?: unknown) {
    super(message);
  }
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

/**
 * A client whose failed start is reported once, by ServerManager.fail with what to do, instead of
 * also by the library's own forced "couldn't create connection to server" notification.
 */
class QuietStartClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    const starting = /couldn't create connection to server/.test(message);
    super.error(message, data, starting ? false : showNotification);
  }
}

/** Tells the server this client handles didChange, askQuestion and reviewPlan. */
class AutoCodeOptIn implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = isObject(capabilities.experimental) ? capabilities.experimental : {};
    capabilities.experimental = {
      ...experimental,
      autocode: { protocolVersion: '1.0', didChange: true, askQuestion: true, reviewPlan: true },
    };
  }
  initialize(): void {}
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  clear(): void {}
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private pythonApiListener: vscode.Disposable | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly didStart = new vscode.EventEmitter<void>();
  readonly onDidStart = this.didStart.event;
  problem: string | undefined;
  /** How the running server was started (for the language status item). */
  serverInfo: { python: string; source: string; bundled: boolean } | undefined;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly handlers: ServerHandlers,
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('autocode.python') || e.affectsConfiguration('autocode.server') || e.affectsConfiguration('autocode.importStrategy')) {
          this.output.info('AutoCode settings changed: restarting the language server');
          void this.restart();
        }
      }),
    );
  }

  /** The server's version from its `initialize` answer, once running. */
  get serverVersion(): string | undefined {
    return this.client?.initializeResult?.serverInfo?.version;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async start(): Promise<LanguageClient | undefined> {
    if (this.client) return this.client;
    if (!this.starting) {
      this.starting = this.doStart().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.warn(`stopping the language server: ${String(err)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  /** Runs a server command with its one argument object. */
  async execute<T = unknown>(command: string, args: object): Promise<T> {
    const client = await this.start();
    if (!client) {
      throw new ServerCommandError(this.problem ?? 'The AutoCode language server is not running. Run "AutoCode: Show Output" to see why.', 'serverNotRunning', undefined);
    }
    try {
      return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as T;
    } catch (err) {
      if (err instanceof ResponseError) {
        const kind = isObject(err.data) ? stringField(err.data, 'kind') : undefined;
        const prefix = err.code === ErrorCodes.invalidParams ? 'The server rejected the arguments: ' : '';
        throw new ServerCommandError(`${prefix}${err.message}`, kind, err.code, err.data);
      }
      throw err;
    }
  }

  private async interpreterFromPythonExtension(resource: vscode.Uri | undefined): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
    if (!ext) return undefined;
    try {
      const api = ext.isActive ? ext.exports : await ext.activate();
      if (api?.environments) {
        if (!this.pythonApiListener) {
          this.pythonApiListener = api.environments.onDidChangeActiveEnvironmentPath(() => {
            if (!vscode.workspace.getConfiguration('autocode').get<string>('python')) {
              this.output.info('The selected Python interpreter changed: restarting the language server');
              void this.restart();
            }
          });
        }
        const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
        return env?.executable.uri?.fsPath;
      }
      return api?.settings?.getExecutionDetails(resource).execCommand?.[0];
    } catch (err) {
      this.output.warn(`could not ask the Python extension for its interpreter: ${String(err)}`);
      return undefined;
    }
  }

  private async findPython(): Promise<PythonChoice> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const setting = vscode.workspace.getConfiguration('autocode', folder).get<string>('python', '');
    const fromExtension = setting.trim() ? undefined : await this.interpreterFromPythonExtension(folder?.uri);
    return choosePython(setting, fromExtension, os.homedir(), folder?.uri.fsPath);
  }

  /** Empty when `python -c "import autocode_lsp"` works; otherwise what went wrong. */
  private checkInstalled(python: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      cp.execFile(python, ['-c', 'import autocode_lsp'], { timeout: 30000 }, (err, _stdout, stderr) => {
        if (!err) return resolve(undefined);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return resolve(`Python was not found at "${python}". Set "autocode.python" to a Python 3.11+ interpreter, or select one with the Python extension.`);
        const detail = stderr.trim().split('\n').pop() ?? '';
        resolve(`AutoCode is not installed for ${python} (${detail || err.message}). Install it with: ${installHint(python)}`);
      });
    });
  }

  /** A listening server to connect to (autocode.server.connect, or the older tcp / socket settings). */
  private endpoint(): Endpoint | undefined {
    const config = vscode.workspace.getConfiguration('autocode');
    return chooseEndpoint(config.get<string>('server.connect', ''), config.get<string>('server.socket', ''),
      config.get<string>('server.tcp', ''), os.homedir());
  }

  private async serverOptions(endpoint: Endpoint | undefined, token: Token | undefined): Promise<ServerOptions | string> {
    const config = vscode.workspace.getConfiguration('autocode');
    if (endpoint?.kind === 'unix') {
      const where = endpoint.path;
      this.output.info(`connecting to the language server on the unix socket ${where}`);
      return () =>
        new Promise<StreamInfo>((resolve, reject) => {
          const socket = net.connect({ path: where }, () => resolve({ reader: socket, writer: socket }));
          socket.once('error', (e) => reject(new Error(`Could not connect to the AutoCode server on ${where} (${e.message}). Start it with: autocode-lsp --socket ${where}, or clear "autocode.server.connect".`)));
        });
    }
    if (endpoint?.kind === 'tcp') {
      const address = endpoint;
      this.output.info(`connecting to the language server at ${address.host}:${address.port}`);
      return () =>
        new Promise<StreamInfo>((resolve, reject) => {
          const socket = net.connect(address.port, address.host, () => resolve({ reader: socket, writer: socket }));
          socket.once('error', (e) => reject(new Error(`Could not connect to the AutoCode server at ${address.host}:${address.port} (${e.message}). Start it with: autocode-lsp --tcp ${address.host}:${address.port}, or clear "autocode.server.connect".`)));
        });
    }
    if (endpoint?.kind === 'ws') {
      const url = endpoint.url;
      this.output.info(`connecting to the language server at ${url}`);
      // The token goes in the handshake header, so initialize carries none (see doStart).
      return async () => {
        try {
          const { reader, writer } = await connectWebSocket(url, token?.value);
          return { reader, writer };
        } catch (err) {
          const text = (err as Error).message;
          throw new Error(/refused the WebSocket handshake/.test(text) ? text
            : `Could not connect to the AutoCode server at ${url} (${text.replace(/^could not open \S+ \((.*)\)$/s, '$1')}). Start it with: autocode-lsp --ws ${url.replace(/^ws:\/\/|\/$/g, '')}, or clear "autocode.server.connect".`);
        }
      };
    }
    let python: PythonChoice;
    try {
      python = await this.findPython();
    } catch (err) {
      return (err as Error).message;
    }
    const launcher = importStrategy() === 'useBundled' ? bundledLauncher() : undefined;
    if (!launcher) {
      if (importStrategy() === 'useBundled') this.output.info('this extension carries no bundled server: using the interpreter\'s own installation');
      const missing = await this.checkInstalled(python.command);
      if (missing) return missing;
    }
    const serverArgs = config.get<string[]>('server.args', []);
    const args = launcher ? [launcher, ...serverArgs] : ['-m', 'autocode_lsp', ...serverArgs];
    this.serverInfo = { python: python.command, source: python.source, bundled: launcher !== undefined };
    this.output.info(`starting ${python.command} ${args.join(' ')} (interpreter from ${python.source}${launcher ? ', bundled server' : ''})`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
    return { command: python.command, args, options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } } };
  }

  private async doStart(): Promise<LanguageClient | undefined> {
    // A listening server asks for its token (docs/security.md); a local one started here does not.
    const config = vscode.workspace.getConfiguration('autocode');
    let endpoint: Endpoint | undefined;
    let token: Token | undefined;
    try {
      endpoint = this.endpoint();
      if (endpoint) token = chooseToken(config.get<string>('server.token', ''), config.get<string>('server.tokenFile', ''), os.homedir());
    } catch (err) {
      this.fail((err as Error).message);
      return undefined;
    }
    const options = await this.serverOptions(endpoint, token);
    if (typeof options === 'string') {
      this.fail(options);
      return undefined;
    }
    const clientOptions: LanguageClientOptions = {
      // Files are synchronised so a server that applies through workspace/applyEdit merges into
      // open editors (unsaved edits included) instead of writing files under them.
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(endpoint && endpoint.kind !== 'ws' ? token?.value : undefined),
      connectionOptions: { maxRestartCount: 3 },
      // A listening server that refuses initialize (a wrong token) is explained once, by fail()
      // below, instead of also in the library's own notification of the server's words.
      ...(endpoint ? { initializationFailedHandler: () => false } : {}),
    };
    // The same for the connection it then closes: not retried until the client ran once (the
    // token will not change by itself); after that a dropped server is restarted as usual.
    let ranOnce = false;
    let usual: ErrorHandler | undefined;
    if (endpoint) {
      clientOptions.errorHandler = {
        error: (error, message, count) => usual!.error(error, message, count),
        closed: () => (ranOnce ? usual!.closed() : { action: CloseAction.DoNotRestart, handled: true }),
      };
    }
    const client = new QuietStartClient('autocode', 'AutoCode', options, clientOptions);
    usual = client.createDefaultErrorHandler(3);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) ranOnce = true;
    });
    client.registerFeature(new AutoCodeOptIn());
    client.onNotification(Methods.taskDidChange, (params: unknown) => this.handlers.onTaskDidChange(params));
    client.onRequest(Methods.askQuestion, (params: unknown) => this.handlers.onAskQuestion(params));
    client.onRequest(Methods.reviewPlan, (params: unknown) => this.handlers.onReviewPlan(params));
    client.onDidChangeState((e) => this.handlers.onStateChange(e.newState === State.Running));
    try {
      await client.start();
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      this.fail((endpoint && explainRefusal(text, endpoint.where, token?.source)) ?? `The AutoCode language server did not start: ${text}`);
      await client.dispose().catch(() => undefined);
      return undefined;
    }
    this.problem = undefined;
    this.notified = undefined;
    this.client = client;
    this.output.info(`language client ready ${Date.now() - this.created} ms after activation`);
    this.didStart.fire();
    return client;
  }

  private notified: string | undefined;
  private readonly created = Date.now();

  private fail(message: string): void {
    this.problem = message;
    this.output.error(message);
    this.handlers.onStateChange(false, message);
    // One notification per problem: commands that retry the start while the
    // server is down do not pile up more (the views and the status item say it).
    if (this.notified === message) return;
    this.notified = message;
    const install = message.includes(' -m pip install ') ? message.slice(message.lastIndexOf(': ') + 2) : undefined;
    const actions = install ? ['Install in Terminal', 'Copy Command', 'Open Settings'] : ['Open Settings', 'Show Output'];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === 'Install in Terminal' && install) {
        const terminal = vscode.window.createTerminal('AutoCode install');
        terminal.show();
        terminal.sendText(install);
      } else if (choice === 'Copy Command' && install) {
        void vscode.env.clipboard.writeText(install);
      } else if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'autocode.');
      } else if (choice === 'Show Output') {
        this.output.show();
      }
    });
  }

  dispose(): void {
    void this.stop();
    this.pythonApiListener?.dispose();
    this.didStart.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
