// Owns the language client: finds the interpreter and starts the bundled
// server or `python -m autocode_lsp` over stdio (or connects to a listening
// server over TCP, WebSocket or a unix socket, with its token), opts in to
// AutoCode's own messages, restarts a server that stopped (a few times), and
// restarts when the interpreter or the settings change.

import * as cp from 'node:child_process';
import * as net from 'node:net';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  CloseAction,
  DynamicFeature,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  StaticFeature,
  StreamInfo,
  Trace,
} from 'vscode-languageclient/node';
import { bundledLauncher, importStrategy } from './bundled';
import { choosePython, installHint, PythonChoice } from './model/python';
import { chooseEndpoint, chooseToken, Endpoint, explainRefusal, initializationOptions, Token } from './model/remote';
import { gaveUpText, MAX_RESTARTS, RestartBudget } from './model/restarts';
import { connectWebSocket } from './model/websocket';
import type { CommandArguments, CommandName, CommandResult } from './generated/protocol';
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

/** Tells the server this client handles didChange, askQuestion, reviewPlan and saveDocuments. */
class AutoCodeOptIn implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = isObject(capabilities.experimental) ? capabilities.experimental : {};
    capabilities.experimental = {
      ...experimental,
      autocode: { protocolVersion: '1.0', didChange: true, askQuestion: true, reviewPlan: true, saveDocuments: true },
    };
  }
  initialize(): void {}
  getState(): { kind: 'static' } {
    return { kind: 'static' };
  }
  clear(): void {}
}

/**
 * The language client without two things vscode-languageclient 9 does by itself:
 *
 * - It does not register the server's commands (`executeCommandProvider`) as VS Code commands.
 *   The extension sends them as `workspace/executeCommand` requests (`ServerManager.execute`),
 *   and a VS Code command name can exist once per window: a client whose server died while it
 *   started could keep its registrations, and every later client then failed with "command
 *   'autocode.protocol.info' already exists".
 * - It does not restart its server (see `clientOptions.errorHandler`): the library's restart runs
 *   alongside a start that is failing, and that start's rejection leaves a second connection
 *   and server behind that nobody stops. `ServerManager` restarts with a fresh client instead.
 * - Its errors go to the output only: `ServerManager.fail` shows one notification per problem,
 *   where the library would add its own for every failed start ("couldn't create connection").
 */
class AutoCodeLanguageClient extends LanguageClient {
  override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const method = 'registrationType' in feature ? feature.registrationType.method : undefined;
    if (method === ExecuteCommandRequest.method) return;
    super.registerFeature(feature);
  }

  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private pythonApiListener: vscode.Disposable | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly didStart = new vscode.EventEmitter<void>();
  readonly onDidStart = this.didStart.event;
  problem: string | undefined;
  /** Restarts after the server stopped on its own; when used up, nothing starts until the person restarts. */
  private readonly restarts = new RestartBudget();
  private gaveUp = false;
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
    // Gave up after repeated crashes: only the person's Restart starts it again.
    if (this.gaveUp) return undefined;
    if (!this.starting) {
      this.starting = this.doStart().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  async restart(): Promise<void> {
    // The person's Restart replaces an automatic one that is waiting.
    clearTimeout(this.recoverTimer);
    this.recoverTimer = undefined;
    await this.stop();
    this.gaveUp = false;
    this.restarts.reset();
    this.recovering = false;
    await this.start();
  }

  /** Set while starting again after the server stopped on its own. */
  private recovering = false;
  private recoverTimer: ReturnType<typeof setTimeout> | undefined;

  /** The running client's server went away without being asked to: start a fresh client, a few times. */
  private clientStopped(client: LanguageClient): void {
    if (client !== this.client) return; // stopped on purpose, or a start that is still deciding
    this.client = undefined;
    void discard(client);
    this.recover('the language server stopped');
  }

  private recover(why: string): void {
    if (!this.restarts.take(Date.now())) {
      this.recovering = false;
      this.gaveUp = true;
      this.fail(gaveUpText(MAX_RESTARTS));
      return;
    }
    this.recovering = true;
    this.output.warn(`${why}: starting it again (restart ${this.restarts.used(Date.now())} of ${MAX_RESTARTS})`);
    void this.start();
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
      await discard(client);
    }
  }

  /** Runs a server command with its one argument object; its result type is the generated `Commands` map's. */
  async execute<K extends CommandName>(command: K, args: CommandArguments<K>): Promise<CommandResult<K>> {
    const client = await this.start();
    if (!client) {
      throw new ServerCommandError(this.problem ?? 'The AutoCode language server is not running. Run "AutoCode: Show Output" to see why.', 'serverNotRunning', undefined);
    }
    try {
      return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as CommandResult<K>;
    } catch (err) {
      if (err instanceof ResponseError) {
        const kind = isObject(err.data) ? stringField(err.data, 'kind') : undefined;
        const prefix = err.code === ErrorCodes.invalidParams ? 'The server rejected the arguments: ' : '';
        throw new ServerCommandError(`${prefix}${err.message}`, kind, err.code, err.data);
      }
      throw err;
    }
  }

  /**
   * `execute` with the client's message trace off while it is sent: its arguments hold a secret
   * (the API key), and a trace would write them to the output channel's log file.
   */
  async executeQuietly<K extends CommandName>(command: K, args: CommandArguments<K>): Promise<CommandResult<K>> {
    const client = await this.start();
    const traced = vscode.workspace.getConfiguration('autocode').get<string>('trace.server', 'off');
    if (!client || traced === 'off') return this.execute(command, args);
    await client.setTrace(Trace.Off);
    try {
      return await this.execute(command, args);
    } finally {
      await client.setTrace(Trace.fromString(traced));
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

  /** After a local server failed to start: whether its interpreter is missing or lacks AutoCode (with the install command). */
  private async explainFailedStart(): Promise<string | undefined> {
    const info = this.serverInfo;
    if (!info) return undefined;
    const t0 = Date.now();
    const missing = await this.checkInstalled(info.python);
    this.phases.check = Date.now() - t0;
    // The bundled server needs no installation: only a missing interpreter explains its failure.
    if (info.bundled && missing && !missing.startsWith('Python was not found')) return undefined;
    return missing;
  }

  /** A listening server to connect to (autocode.server.connect, or the older tcp / socket settings). */
  private endpoint(): Endpoint | undefined {
    const config = vscode.workspace.getConfiguration('autocode');
    return chooseEndpoint(config.get<string>('server.connect', ''), config.get<string>('server.socket', ''),
      config.get<string>('server.tcp', ''), os.homedir());
  }

  private async serverOptions(endpoint: Endpoint | undefined, token: Token | undefined): Promise<ServerOptions | string> {
    this.serverInfo = undefined;
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
    const t0 = Date.now();
    try {
      python = await this.findPython();
    } catch (err) {
      return (err as Error).message;
    }
    this.phases.interpreter = Date.now() - t0;
    const launcher = importStrategy() === 'useBundled' ? bundledLauncher() : undefined;
    // No separate `import autocode_lsp` check before the start (one more Python start-up on the
    // way to a ready client): a start that fails is explained afterwards (explainFailedStart).
    if (!launcher && importStrategy() === 'useBundled') this.output.info('this extension carries no bundled server: using the interpreter\'s own installation');
    const serverArgs = config.get<string[]>('server.args', []);
    const args = launcher ? [launcher, ...serverArgs] : ['-m', 'autocode_lsp', ...serverArgs];
    this.serverInfo = { python: python.command, source: python.source, bundled: launcher !== undefined };
    this.output.info(`starting ${python.command} ${args.join(' ')} (interpreter from ${python.source}${launcher ? ', bundled server' : ''})`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
    return { command: python.command, args, options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } } };
  }

  /** Where the time to a ready client went, in ms (logged with the ready figure). */
  private phases: { interpreter?: number; check?: number; start?: number } = {};

  private async doStart(): Promise<LanguageClient | undefined> {
    this.phases = {};
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
      // Over ws the token went in the handshake header, so initialize carries none.
      initializationOptions: initializationOptions(endpoint && endpoint.kind !== 'ws' ? token?.value : undefined),
      // A failed `initialize` stops the client without a toast of its own: start() rejects and
      // ServerManager says what happened once.
      initializationFailedHandler: () => false,
      errorHandler: {
        // Read/write errors: carry on a few times, as the library's default handler does.
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        // A closed connection is never restarted by the library (see AutoCodeLanguageClient).
        closed: () => {
          this.output.warn('the connection to the language server closed');
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new AutoCodeLanguageClient('autocode', 'AutoCode', options, clientOptions);
    client.registerFeature(new AutoCodeOptIn());
    client.onNotification(Methods.taskDidChange, (params: unknown) => this.handlers.onTaskDidChange(params));
    client.onRequest(Methods.taskAskQuestion, (params: unknown) => this.handlers.onAskQuestion(params));
    client.onRequest(Methods.taskReviewPlan, (params: unknown) => this.handlers.onReviewPlan(params));
    client.onRequest(Methods.taskSaveDocuments, (params: unknown) => saveDocuments(params));
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.handlers.onStateChange(true);
      else if (e.newState === State.Stopped) this.clientStopped(client);
    });
    let failure: string | undefined;
    const t0 = Date.now();
    try {
      await client.start();
      this.phases.start = Date.now() - t0;
      // The server can die between `initialize` and the end of start(): not a running client.
      if (client.state !== State.Running) failure = 'the server stopped while it started';
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (failure !== undefined) {
      await discard(client);
      if (this.recovering) {
        // Starting again after a crash: each failed attempt uses one restart.
        const why = `the language server did not start (${failure})`;
        this.recoverTimer = setTimeout(() => {
          this.recoverTimer = undefined;
          this.recover(why);
        }, 500);
        return undefined;
      }
      const missing = endpoint ? undefined : await this.explainFailedStart();
      this.fail(missing ?? (endpoint && explainRefusal(failure, endpoint.where, token?.source)) ?? `The AutoCode language server did not start: ${failure}`);
      return undefined;
    }
    this.recovering = false;
    this.problem = undefined;
    this.notified = undefined;
    this.client = client;
    const phases = [['interpreter', this.phases.interpreter], ['install check', this.phases.check], ['server start and initialize', this.phases.start]]
      .filter(([, ms]) => ms !== undefined).map(([what, ms]) => `${what} ${ms} ms`).join(', ');
    // The activation's wall-clock time lets tests/bench/bench_vscode.py place it in the page's clock.
    this.output.info(`language client ready ${Date.now() - this.created} ms after activation (${phases}); activation at ${this.created} ms since the epoch`);
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
    const actions = install ? ['Install in Terminal', 'Copy Command', 'Open Settings']
      : this.gaveUp ? ['Restart Server', 'Show Output'] : ['Open Settings', 'Show Output'];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === 'Install in Terminal' && install) {
        const terminal = vscode.window.createTerminal('AutoCode install');
        terminal.show();
        terminal.sendText(install);
      } else if (choice === 'Copy Command' && install) {
        void vscode.env.clipboard.writeText(install);
      } else if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'autocode.');
      } else if (choice === 'Restart Server') {
        void this.restart();
      } else if (choice === 'Show Output') {
        this.output.show();
      }
    });
  }

  dispose(): void {
    clearTimeout(this.recoverTimer);
    void this.stop();
    this.pythonApiListener?.dispose();
    this.didStart.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** Stops a client in whatever state it is (stop() refuses one that failed to start) and drops its registrations. */
async function discard(client: LanguageClient): Promise<void> {
  await client.dispose().catch(() => undefined);
  clearFeatures(client);
}

/**
 * Drops what a client's features registered (document listeners, file watchers). A client whose
 * server died between `initialize` and the end of start() registers them after its own clean-up
 * ran, and stop()/dispose() refuse a client that is not running. Clearing twice is harmless.
 */
function clearFeatures(client: LanguageClient): void {
  const features = (client as unknown as { _features?: Array<{ clear?: () => void }> })._features;
  for (const feature of features ?? []) {
    try {
      feature.clear?.();
    } catch {
      // already cleared
    }
  }
}

/**
 * autocode/task/saveDocuments: after an apply through workspace/applyEdit the server asks to save
 * the editors that held no unsaved edits before it, so the change is on disk (it reads the disk
 * back before it says COMPLETED). An editor with the person's own unsaved edits is never asked for.
 */
export async function saveDocuments(params: unknown): Promise<{ saved: string[] }> {
  const uris = isObject(params) && Array.isArray(params.uris) ? params.uris.filter((u): u is string => typeof u === 'string') : [];
  const saved: string[] = [];
  for (const uri of uris) {
    const wanted = vscode.Uri.parse(uri).toString();
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === wanted);
    if (!doc) continue;
    if (!doc.isDirty || (await doc.save())) saved.push(uri);
  }
  return { saved };
}
