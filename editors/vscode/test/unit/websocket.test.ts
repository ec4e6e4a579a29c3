import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { connectWebSocket } from '../../src/model/websocket';

/** A stand-in for `autocode-lsp --ws` that checks the token header as the real one does and echoes each message back. */
function listen(token: string): Promise<{ url: string; seen: string[]; close: () => void }> {
  const seen: string[] = [];
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, code?: number, message?: string) => void) => {
      const given = info.req.headers['x-autocode-token'];
      if (given === token) return done(true);
      done(false, 401, `this server needs its token in the X-AutoCode-Token header; got ${given === undefined ? 'no token' : 'a wrong token'}`);
    },
  });
  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      seen.push(data.toString());
      const message = JSON.parse(data.toString()) as { id: number };
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: 'pong' }));
    });
  });
  return new Promise((resolve) => {
    server.on('listening', () => {
      const address = server.address() as { port: number };
      resolve({ url: `ws://127.0.0.1:${address.port}/`, seen, close: () => server.close() });
    });
  });
}

test('one JSON-RPC message per WebSocket message, with the token in the handshake header', async () => {
  const server = await listen('s3cret-token');
  try {
    const { reader, writer, socket } = await connectWebSocket(server.url, 's3cret-token');
    const answer = new Promise((resolve) => reader.listen(resolve));
    await writer.write({ jsonrpc: '2.0', id: 1, method: 'ping' } as never);
    assert.deepEqual(await answer, { jsonrpc: '2.0', id: 1, result: 'pong' });
    assert.deepEqual(server.seen.map((s) => JSON.parse(s)), [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    assert.ok(!server.seen[0].includes('Content-Length'));
    socket.close();
  } finally {
    server.close();
  }
});

test('a refused handshake rejects with the server\'s words, for explainRefusal', async () => {
  const server = await listen('s3cret-token');
  try {
    await assert.rejects(connectWebSocket(server.url, undefined), /refused the WebSocket handshake \(HTTP 401\).*needs its token.*got no token/);
    await assert.rejects(connectWebSocket(server.url, 'wrong'), /got a wrong token/);
  } finally {
    server.close();
  }
});

test('nothing listening: a connection error naming the address', async () => {
  await assert.rejects(connectWebSocket('ws://127.0.0.1:1/', 't'), /could not open ws:\/\/127\.0\.0\.1:1\/ \(.*ECONNREFUSED/);
});
