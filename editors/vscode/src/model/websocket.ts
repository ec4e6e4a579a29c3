// The language client over WebSocket (`autocode-lsp --ws HOST:PORT`): one
// JSON-RPC message per text message, no Content-Length headers, and the token
// in the handshake's X-AutoCode-Token header (docs/security.md). The extension
// host's Node 20 has no WebSocket of its own, so this uses the `ws` package,
// bundled into dist/extension.js. No vscode import, so the unit tests run in node.

import WebSocket from 'ws';
import { AbstractMessageReader, AbstractMessageWriter, DataCallback, Disposable, Message, MessageReader, MessageWriter } from 'vscode-jsonrpc';
import { TOKEN_HEADER } from './remote';

/** The server closes a connection whose message is over 16 MiB; it never sends larger ones either. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

class WebSocketReader extends AbstractMessageReader implements MessageReader {
  private callback: DataCallback | undefined;
  private readonly early: Message[] = [];

  constructor(socket: WebSocket) {
    super();
    socket.on('message', (data: WebSocket.RawData) => {
      let message: Message;
      try {
        message = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8')) as Message;
      } catch (err) {
        this.fireError(new Error(`the server sent a WebSocket message that is not JSON (${(err as Error).message})`));
        return;
      }
      if (this.callback) this.callback(message);
      else this.early.push(message);
    });
    socket.on('error', (err) => this.fireError(err));
    socket.on('close', () => this.fireClose());
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    for (const message of this.early.splice(0)) callback(message);
    return Disposable.create(() => {
      this.callback = undefined;
    });
  }
}

class WebSocketWriter extends AbstractMessageWriter implements MessageWriter {
  private errors = 0;

  constructor(private readonly socket: WebSocket) {
    super();
    socket.on('close', () => this.fireClose());
  }

  write(message: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.readyState !== WebSocket.OPEN) {
        const err = new Error('the WebSocket connection to the AutoCode server is closed');
        this.fireError(err, message, ++this.errors);
        reject(err);
        return;
      }
      this.socket.send(JSON.stringify(message), (err) => {
        if (!err) return resolve();
        this.fireError(err, message, ++this.errors);
        reject(err);
      });
    });
  }

  end(): void {
    this.socket.close();
  }
}

/**
 * Opens `url` with the token in the handshake header; resolves once upgraded. A refused handshake
 * rejects with the server's own words (for example "this server needs its token in the
 * X-AutoCode-Token header; got no token"), which explainRefusal turns into what to do.
 */
export function connectWebSocket(url: string, token: string | undefined, timeoutMs = 15000): Promise<{ reader: MessageReader; writer: MessageWriter; socket: WebSocket }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, {
      headers: token === undefined ? {} : { [TOKEN_HEADER]: token },
      handshakeTimeout: timeoutMs,
      maxPayload: MAX_MESSAGE_BYTES,
      perMessageDeflate: false,
    });
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      socket.terminate();
      reject(err);
    };
    socket.once('unexpected-response', (request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (body.length < 2000) body += chunk;
      });
      response.on('end', () => {
        request.destroy();
        fail(new Error(`the server at ${url} refused the WebSocket handshake (HTTP ${response.statusCode}): ${body.trim() || response.statusMessage}`));
      });
    });
    socket.once('error', (err) => fail(new Error(`could not open ${url} (${err.message})`)));
    socket.once('open', () => {
      if (settled) return;
      settled = true;
      resolve({ reader: new WebSocketReader(socket), writer: new WebSocketWriter(socket), socket });
    });
  });
}
