import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inlineRefusal, NOTHING_TO_PROMOTE, scopeDescriptionFor } from '../../src/model/memory';
import { labelAndTooltip, shorten, statusItemContent } from '../../src/model/status';

test('a refusal without a suggestion offers nothing, and "It belongs in" is not said twice', () => {
  const line = inlineRefusal({ message: 'Refused: it belongs in the task brief.', belongs: 'the task brief', suggestion: undefined });
  assert.equal(line, 'Not saved: Refused: it belongs in the task brief.');
});

test('agent scopes say they need a name until one is set; team scopes never do', () => {
  assert.equal(scopeDescriptionFor('agent', ''), 'needs an agent name (asked next)');
  assert.equal(scopeDescriptionFor('agent', '   '), 'needs an agent name (asked next)');
  assert.equal(scopeDescriptionFor('agent', 'implementer'), undefined);
  assert.equal(scopeDescriptionFor('team', ''), undefined);
});

test('an empty promotion plan talks about team memories and skills', () => {
  assert.match(NOTHING_TO_PROMOTE, /team memories/);
  assert.match(NOTHING_TO_PROMOTE, /skills/);
  assert.doesNotMatch(NOTHING_TO_PROMOTE, /agent memories|to team memory/);
});

test('the language status item while running: version, interpreter, bundled, record; Show Output', () => {
  const item = statusItemContent({ running: true, version: '0.4.0', python: '/usr/bin/python3', bundled: true, record: 'valid' });
  assert.equal(item.text, 'AutoCode: running');
  assert.equal(item.detail, 'v0.4.0 · /usr/bin/python3 (bundled server) · record: valid');
  assert.equal(item.severity, 'information');
  assert.deepEqual(item.command, { title: 'Show Output', command: 'autocode.showOutput' });
  assert.equal(statusItemContent({ running: true }).detail, '');
});

test('the language status item while down: why, shortened, and Restart', () => {
  const why = `The AutoCode language server did not start: ${'x'.repeat(200)}`;
  const item = statusItemContent({ running: false, problem: why, python: '/usr/bin/python3' });
  assert.equal(item.text, 'AutoCode: not running');
  assert.equal(item.detail.length, 120);
  assert.ok(item.detail.endsWith('…'));
  assert.equal(item.severity, 'error');
  assert.deepEqual(item.command, { title: 'Restart', command: 'autocode.restartServer' });
  // Down without a known reason: where it ran.
  assert.equal(statusItemContent({ running: false, python: '/usr/bin/python3' }).detail, '/usr/bin/python3');
});

test('long tree labels are shortened and keep the full text in the tooltip', () => {
  const brief = 'Add longest_word() to textkit/words.py, with tests for ties, empty input and punctuation around words';
  const { label, tooltip } = labelAndTooltip(brief, 60);
  assert.equal(label.length, 60);
  assert.ok(label.endsWith('…'));
  assert.ok(brief.startsWith(label.slice(0, -1)));
  assert.equal(tooltip, brief);
  // A label that fits has no tooltip of its own; a given tooltip is kept either way.
  assert.deepEqual(labelAndTooltip('Short brief', 60), { label: 'Short brief', tooltip: undefined });
  assert.equal(labelAndTooltip(brief, 60, 'Phase: planning').tooltip, 'Phase: planning');
  // Line breaks do not reach a one-line label.
  assert.equal(shorten('first\nsecond', 60), 'first second');
});
