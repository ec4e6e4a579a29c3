import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FilePreview, TaskPreview } from '../../src/generated/protocol';
import { hunkAtResultLine, hunkLabel, keepIds, resultText, splitLines } from '../../src/model/hunks';

// The person's text now (an unsaved note on top) and git's merge with the task's two hunks.
const FILE: FilePreview = {
  path: 'tests/test_words.py', action: 'write', reason: null, binary: false,
  mine: '# note\nimport unittest\nfrom w import a\n\nclass T:\n    pass\n',
  merged: '# note\nimport unittest\nfrom w import a, b\n\nclass T:\n    pass\n    def test_b(self):\n        b()\n',
  hunks: [
    { id: 'h-import', mineStart: 3, mineLines: 1, mergedStart: 3, mergedLines: 1, overlaps: false, conflict: false },
    { id: 'h-test', mineStart: 7, mineLines: 0, mergedStart: 7, mergedLines: 2, overlaps: true, conflict: false },
  ],
};
const PREVIEW: TaskPreview = { taskId: 't-1', revision: 4, files: [FILE], overlaps: 1, conflicts: 0 };

test('with every hunk kept the result is the merge; an undone hunk keeps the person\'s lines', () => {
  assert.equal(resultText(FILE, new Set()), FILE.merged);
  const noImport = resultText(FILE, new Set(['h-import']));
  assert.ok(noImport.startsWith('# note\nimport unittest\nfrom w import a\n'));
  assert.ok(noImport.endsWith('    def test_b(self):\n        b()\n'));
  assert.equal(resultText(FILE, new Set(['h-import', 'h-test'])), FILE.mine);
});

test('keep lists the kept ids only once something was undone', () => {
  assert.equal(keepIds(PREVIEW, new Set()), undefined);
  assert.deepEqual(keepIds(PREVIEW, new Set(['h-import'])), ['h-test']);
});

test('the hunk under a line of the result, as hunks are undone', () => {
  assert.equal(hunkAtResultLine(FILE, new Set(), 3)?.id, 'h-import');
  assert.equal(hunkAtResultLine(FILE, new Set(), 8)?.id, 'h-test');
  assert.equal(hunkAtResultLine(FILE, new Set(), 5), undefined);
  assert.equal(hunkAtResultLine(FILE, new Set(['h-test']), 7)?.id, 'h-test');
});

test('rows say where a hunk is and mark an overlap with the person\'s edits', () => {
  assert.match(hunkLabel(FILE, FILE.hunks[1]).label, /overlaps your edits: tests\/test_words.py: after line 6 \(\+2 −0\)/);
  assert.equal(hunkLabel(FILE, FILE.hunks[0]).detail, 'from w import a, b');
  assert.deepEqual(splitLines('a\nb'), ['a\n', 'b']);
});
