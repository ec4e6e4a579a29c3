import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerItems, answerWithHowArgs, DEFAULT_NOTE, DELEGATE_LABEL, isUnknownHow, TYPE_LABEL, typedReply } from '../../src/model/answers';
import { conflictsOf, headMovedText, markedFiles, resolutionItems, waitingForSaveText, writtenFiles } from '../../src/model/review';
import type { ApplyResult, Needs, TaskSnapshot } from '../../src/generated/protocol';

const question = { id: 'q1', text: 'Which naming?', choices: ['Describe it', 'test_<fn>'], defaultAnswer: 'Describe it', convention: 'test_naming' };

test('the default comes first, marked as not remembered, then choices, typing and delegating', () => {
  const items = answerItems(question);
  assert.deepEqual(items.map((i) => i.label), ['Describe it', 'test_<fn>', `$(edit) ${TYPE_LABEL}`, `$(sparkle) ${DELEGATE_LABEL}`]);
  assert.equal(items[0].description, DEFAULT_NOTE);
  assert.deepEqual(items[0].reply, { text: 'Describe it', how: 'acceptedDefault' });
  assert.deepEqual(items[1].reply, { text: 'test_<fn>', how: 'chosen' });
  assert.equal(items[2].reply, undefined);
  assert.deepEqual(items[3].reply, { text: '', how: 'delegated' });
});

test('without a default there is nothing to accept', () => {
  const items = answerItems({ ...question, defaultAnswer: undefined, choices: [] });
  assert.deepEqual(items.map((i) => i.reply?.how), [undefined, 'delegated']);
});

test('text typed into the picker is a typed answer unless it names an item', () => {
  const items = answerItems(question);
  assert.deepEqual(typedReply('  my own  ', items), { text: 'my own', how: 'typed' });
  assert.equal(typedReply('Describe it', items), undefined);
  assert.equal(typedReply('   ', items), undefined);
});

test('answer arguments carry how, or leave it out for an older server', () => {
  assert.deepEqual(answerWithHowArgs('t', 'q', { text: 'x', how: 'typed' }, '/repo'), { taskId: 't', questionId: 'q', text: 'x', how: 'typed', workspace: '/repo' });
  assert.deepEqual(answerWithHowArgs('t', 'q', { text: '', how: 'delegated' }, undefined), { taskId: 't', questionId: 'q', text: '', how: 'delegated' });
  assert.deepEqual(answerWithHowArgs('t', 'q', { text: 'x', how: 'chosen' }, undefined, false), { taskId: 't', questionId: 'q', text: 'x' });
  assert.throws(() => answerWithHowArgs('t', 'q', { text: ' ', how: 'typed' }, undefined), /empty answer/);
  assert.ok(isUnknownHow('invalidArguments', 'invalid arguments for autocode.task.answer: $ has unknown field(s): how (the shapes are in docs/protocol.md)'));
  assert.ok(!isUnknownHow('invalidArguments', 'text is required'));
});

test('conflicts, a moved HEAD and what was written are read from the snapshot', () => {
  const base: TaskSnapshot = {
    id: 't-1', workspace: '/repo', brief: 'b', state: 'WAITING_FOR_CONFLICT_RESOLUTION', interruptedIn: null, phase: 'verifying', revision: 3, done: false,
    needs: { kind: null }, result: null, error: null, learning: null, runDir: '/repo/.autocode/runs/t-1', copy: null, planRevision: 1,
    humanPauseStates: [], created: '', updated: '', answers: [], agent: null,
  };
  const conflict = { path: 'a.py', reason: 'overlap' as const, hunks: [{ mineStart: 3, mineLines: 2, theirsStart: 3, theirsLines: 4 }] };
  const apply: ApplyResult = { status: 'conflicts', applied: false, written: [], writtenByEditor: [], conflicts: ['a.py'], via: null, choices: {}, headMoved: null, message: 'both changed a.py', unsaved: [], hunksKept: [], hunksUndone: [] };
  const snap: TaskSnapshot = {
    ...base,
    needs: { kind: 'resolve_conflicts', conflicts: [conflict], files: ['a.py'], apply, headMoved: { from: '0123456789abcdef', to: 'fedcba9876543210' } },
  };
  assert.deepEqual(conflictsOf(snap), [conflict]);
  assert.match(headMovedText(snap) ?? '', /from 01234567 to fedcba98/);
  assert.equal(headMovedText({ ...snap, needs: { ...snap.needs, headMoved: null } as Needs }), undefined);
  assert.equal(writtenFiles(snap), undefined);
  const done: TaskSnapshot = { ...base, state: 'COMPLETED', done: true, result: { status: 'completed', verified: true, partial: false, proof: null, tests: null, apply: { ...apply, status: 'applied', applied: true, written: ['a.py'], conflicts: [] }, files: ['a.py'], error: null } };
  assert.deepEqual(writtenFiles(done), ['a.py']);
  assert.deepEqual(conflictsOf(done), []);
  assert.deepEqual(resolutionItems(conflictsOf(snap)[0]).map((i) => i.resolution), ['mine', 'theirs', 'markers']);
  const saving: TaskSnapshot = { ...base, state: 'WAITING_FOR_SAVE', needs: { kind: 'save_files', paths: ['a.py', 'b.py'], apply: { ...apply, status: 'applied', applied: true, conflicts: [], choices: { 'a.py': 'theirs', 'b.py': 'markers' }, unsaved: ['a.py', 'b.py'] } } };
  assert.deepEqual(markedFiles(saving), ['b.py']);
  assert.deepEqual(markedFiles(snap), []);
});

test('a task waiting for a save says so first, then that the unsaved edits stay and the save completes it', () => {
  const one = waitingForSaveText('Add longest_word()', ['textkit/words.py']);
  assert.match(one, /^AutoCode: “Add longest_word\(\)” is waiting for you to save textkit\/words\.py\./);
  assert.match(one, /merged into your open editor with your own unsaved edits kept; the task completes once it is saved\.$/);
  assert.match(waitingForSaveText('b', ['a.py', 'b.py']), /save a\.py, b\.py\. .* editors .* once they are saved\.$/);
  assert.match(waitingForSaveText('b', []), /save the changed files\./);
  assert.doesNotMatch(one, /markers/);
  assert.match(waitingForSaveText('b', ['a.py', 'b.py'], ['b.py']), /once they are saved\. b\.py holds conflict markers: resolve them before or after you save\.$/);
});
