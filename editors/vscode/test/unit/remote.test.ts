import assert from 'node:assert/strict';
import { test } from 'node:test';
import { explainRefusal, initializationOptions, parseSocketSetting, readTokenFile } from '../../src/model/remote';

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

test('a refusal is explained: missing token versus a stale one', () => {
  const refused = 'this server needs its token: initialize came with no token. Pass the token ...';
  assert.match(explainRefusal(refused, '127.0.0.1:8765', false) ?? '', /asks for its token.*tokenFile/);
  assert.match(explainRefusal(refused, '127.0.0.1:8765', true) ?? '', /refused the token.*new token at every start/);
  assert.equal(explainRefusal('connection refused', '127.0.0.1:8765', true), undefined);
});
