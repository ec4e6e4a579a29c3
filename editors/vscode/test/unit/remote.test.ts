import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseEndpoint, chooseToken, explainRefusal, initializationOptions, parseConnectSetting, parseSocketSetting, readTokenFile } from '../../src/model/remote';

test('the socket setting takes an absolute path (or ~/) and nothing else', () => {
  assert.equal(parseSocketSetting('', '/home/u'), undefined);
  assert.equal(parseSocketSetting(' /run/autocode/lsp.sock ', '/home/u'), '/run/autocode/lsp.sock');
  assert.equal(parseSocketSetting('~/s/lsp.sock', '/home/u'), '/home/u/s/lsp.sock');
  assert.throws(() => parseSocketSetting('lsp.sock', '/home/u'), /absolute path/);
});

test('the token comes from the token file, trimmed; a missing or empty file says what to set', () => {
  assert.equal(readTokenFile('', '/home/u'), undefined);
  assert.equal(readTokenFile('~/t', '/home/u', (p) => (p === '/home/u/t' ? 'abc\n' : '')), 'abc');
  const missing = (): string => {
    throw Object.assign(new Error('no'), { code: 'ENOENT' });
  };
  assert.throws(() => readTokenFile('/x/token', '/home/u', missing), /ENOENT.*autocode\.server\.tokenFile/);
  assert.throws(() => readTokenFile('/x/token', '/home/u', () => '  \n'), /is empty/);
});

test('the token travels in initializationOptions.autocode.token', () => {
  assert.deepEqual(initializationOptions(undefined), {});
  assert.deepEqual(initializationOptions('t0k'), { autocode: { token: 't0k' } });
});

test('a refusal is explained: missing token versus a stale one, naming the setting it came from', () => {
  const refused = 'this server needs its token: initialize came with no token. Pass the token ...';
  assert.match(explainRefusal(refused, 'tcp://127.0.0.1:8765', undefined) ?? '', /asks for its token.*tokenFile.*autocode\.server\.token"/);
  assert.match(explainRefusal(refused, 'tcp://127.0.0.1:8765', 'autocode.server.tokenFile') ?? '', /refused the token in "autocode\.server\.tokenFile".*new token at every start/);
  assert.match(explainRefusal(refused, 'tcp://127.0.0.1:8765', 'autocode.server.token') ?? '', /refused the token in "autocode\.server\.token"/);
  const handshake = 'the server at ws://127.0.0.1:1/ refused the WebSocket handshake (HTTP 401): this server needs its token in the X-AutoCode-Token header; got no token';
  assert.match(explainRefusal(handshake, 'ws://127.0.0.1:1/', undefined) ?? '', /at ws:\/\/127\.0\.0\.1:1\/ asks for its token/);
  assert.equal(explainRefusal('connection refused', '127.0.0.1:8765', 'autocode.server.tokenFile'), undefined);
});

test('autocode.server.connect takes tcp://, ws:// and unix: addresses and says the forms when wrong', () => {
  assert.equal(parseConnectSetting('  ', '/home/u'), undefined);
  assert.deepEqual(parseConnectSetting('tcp://127.0.0.1:8765', '/home/u'), { kind: 'tcp', host: '127.0.0.1', port: 8765, where: 'tcp://127.0.0.1:8765' });
  assert.deepEqual(parseConnectSetting('tcp://[::1]:9000/', '/home/u'), { kind: 'tcp', host: '::1', port: 9000, where: 'tcp://[::1]:9000' });
  assert.deepEqual(parseConnectSetting('ws://127.0.0.1:8766', '/home/u'), { kind: 'ws', url: 'ws://127.0.0.1:8766/', where: 'ws://127.0.0.1:8766/' });
  assert.deepEqual(parseConnectSetting('ws://localhost:8766/lsp', '/home/u'), { kind: 'ws', url: 'ws://localhost:8766/lsp', where: 'ws://localhost:8766/lsp' });
  assert.deepEqual(parseConnectSetting('unix:/run/a/lsp.sock', '/home/u'), { kind: 'unix', path: '/run/a/lsp.sock', where: 'unix:/run/a/lsp.sock' });
  assert.deepEqual(parseConnectSetting('unix:///run/a/lsp.sock', '/home/u'), { kind: 'unix', path: '/run/a/lsp.sock', where: 'unix:/run/a/lsp.sock' });
  assert.deepEqual(parseConnectSetting('unix:~/s/lsp.sock', '/home/u'), { kind: 'unix', path: '/home/u/s/lsp.sock', where: 'unix:/home/u/s/lsp.sock' });
  for (const bad of ['127.0.0.1:8765', 'tcp://127.0.0.1', 'tcp://127.0.0.1:0', 'tcp://127.0.0.1:70000', 'tcp://h:1/path', 'wss://h:1', 'http://h:1', 'unix:lsp.sock', 'unix:']) {
    assert.throws(() => parseConnectSetting(bad, '/home/u'), /autocode\.server\.connect.*tcp:\/\/127\.0\.0\.1:PORT, ws:\/\/127\.0\.0\.1:PORT or unix:/, bad);
  }
});

test('connect wins over the older socket and tcp settings; socket wins over tcp', () => {
  assert.equal(chooseEndpoint('', '', '', '/home/u'), undefined);
  assert.equal(chooseEndpoint('ws://127.0.0.1:2', '/s.sock', '127.0.0.1:1', '/home/u')?.kind, 'ws');
  assert.deepEqual(chooseEndpoint('', '/s.sock', '127.0.0.1:1', '/home/u'), { kind: 'unix', path: '/s.sock', where: 'unix:/s.sock' });
  assert.deepEqual(chooseEndpoint('', '', '127.0.0.1:1', '/home/u'), { kind: 'tcp', host: '127.0.0.1', port: 1, where: 'tcp://127.0.0.1:1' });
});

test('the token setting wins over the token file; neither set is no token', () => {
  const read = (p: string): string => (p === '/t' ? 'from-file\n' : '');
  assert.equal(chooseToken('', '', '/home/u', read), undefined);
  assert.deepEqual(chooseToken('', '/t', '/home/u', read), { value: 'from-file', source: 'autocode.server.tokenFile' });
  assert.deepEqual(chooseToken(' typed ', '/t', '/home/u', read), { value: 'typed', source: 'autocode.server.token' });
});
