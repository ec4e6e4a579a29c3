import assert from 'node:assert/strict';
import { test } from 'node:test';
import { choosePython, expandPythonSetting, installHint, parseTcpSetting } from '../../src/model/python';

test('the setting wins, then the Python extension, then python3', () => {
  assert.deepEqual(choosePython('/opt/py/bin/python', '/venv/bin/python', '/home/u', '/w'), { command: '/opt/py/bin/python', source: 'setting' });
  assert.deepEqual(choosePython('  ', '/venv/bin/python', '/home/u', '/w'), { command: '/venv/bin/python', source: 'python-extension' });
  assert.deepEqual(choosePython('', undefined, '/home/u', undefined), { command: 'python3', source: 'default' });
  assert.deepEqual(choosePython('', ' ', '/home/u', undefined), { command: 'python3', source: 'default' });
});

test('home and workspace variables expand; a workspace variable without a folder is an error', () => {
  assert.equal(expandPythonSetting('~/venv/bin/python', '/home/u', undefined), '/home/u/venv/bin/python');
  assert.equal(expandPythonSetting('${userHome}/p', '/home/u', undefined), '/home/u/p');
  assert.equal(expandPythonSetting('${workspaceFolder}/.venv/bin/python', '/home/u', '/w'), '/w/.venv/bin/python');
  assert.throws(() => choosePython('${workspaceFolder}/.venv/bin/python', undefined, '/home/u', undefined), /no folder is open/);
});

test('the TCP setting parses HOST:PORT and rejects anything else with the fix', () => {
  assert.equal(parseTcpSetting(''), undefined);
  assert.deepEqual(parseTcpSetting(' 127.0.0.1:8765 '), { host: '127.0.0.1', port: 8765 });
  assert.deepEqual(parseTcpSetting('[::1]:9000'), { host: '::1', port: 9000 });
  for (const bad of ['8765', 'host:', 'host:0', 'host:70000', 'a b:1']) {
    assert.throws(() => parseTcpSetting(bad), /HOST:PORT/, bad);
  }
});

test('the install hint quotes interpreters with spaces', () => {
  assert.equal(installHint('/usr/bin/python3'), '/usr/bin/python3 -m pip install autocode-lsp');
  assert.equal(installHint('/My Envs/python'), '"/My Envs/python" -m pip install autocode-lsp');
});
