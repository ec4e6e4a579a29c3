import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApplyResult, Needs, Proof, Question, TaskSnapshot, TestRun } from '../../src/generated/protocol';
import { buildTaskNode, buildTaskTree, normaliseSnapshot, phaseLabel, proofEvidence, questionFrom, statusText, TaskStore } from '../../src/model/tasks';

/** A TaskSnapshot as the server sends it (typed by the generated protocol: the one wire spelling). */
function snapshot(overrides: Partial<TaskSnapshot> = {}, needs: Needs = { kind: null }): TaskSnapshot {
  return {
    id: 't-1', workspace: '/repo', brief: 'Add a tax helper', state: 'PLANNING', interruptedIn: null, phase: 'planning', revision: 1,
    needs,
    done: false, result: null, error: null, learning: null, runDir: '/repo/.autocode/runs/t-1', copy: '/repo/.autocode/prep/p1/source',
    planRevision: 0, humanPauseStates: [], created: '2026-01-01T00:00:00Z', updated: '2026-01-01T00:00:00Z',
    answers: [], agent: null,
    ...overrides,
  };
}

const PLAN = { summary: 'Add the helper', steps: ['edit', 'test'], citations: [], acceptanceCriteria: [] };

const question = { id: 'q-naming', text: 'Which naming convention should tests follow?', category: 'convention', convention: 'test_naming', default: 'test_<behaviour>', choices: ['test_<behaviour>'] };

const TESTS: TestRun = { command: 'pytest -q', cwd: 'source', exitCode: 0, status: 'finished', seconds: 1.25, outputTail: '1 passed', sandbox: 'bwrap', sandboxNotes: [] };

const PROOF: Proof = {
  status: 'verified', verified: true, summary: 'verified: tests/test_pricing.py::test_tax failed before the change and passed with it',
  proofs: ['tests/test_pricing.py::test_tax'], regressions: [], failing: [], alreadyFailing: [], reasons: [], concerns: [], testFiles: ['tests/test_pricing.py'], runs: [],
};

const APPLIED: ApplyResult = { status: 'applied', applied: true, written: ['a.py'], writtenByEditor: [], conflicts: [], via: 'disk', choices: {}, headMoved: null, message: 'wrote a.py', unsaved: [], hunksKept: [], hunksUndone: [] };

const ask = (over: Partial<Question>): Question => ({ id: 'a', text: 't', category: null, convention: null, default: null, choices: [], ...over });

test('a task waiting for an answer shows its question with the suggested default', () => {
  const view = normaliseSnapshot(snapshot({ state: 'WAITING_FOR_USER', phase: 'requirements', revision: 3 }, { kind: 'answer_questions', questions: [question] }));
  assert.equal(view.awaiting, 'answer');
  assert.equal(view.workspace, '/repo');
  assert.deepEqual(view.questions.map((q) => [q.id, q.defaultAnswer, q.convention]), [['q-naming', 'test_<behaviour>', 'test_naming']]);
  const node = buildTaskNode(view);
  assert.equal(node.label, 'Add a tax helper');
  assert.equal(node.description, 'waiting for your answer');
  const q = node.children.find((c) => c.kind === 'question');
  assert.ok(q, 'question node present');
  assert.equal(q.questionId, 'q-naming');
  assert.equal(q.label, 'Which naming convention should tests follow?');
  assert.equal(q.description, 'suggested: test_<behaviour>');
  assert.equal(q.contextValue, 'question');
});

test('a question puts its default among the choices exactly once', () => {
  assert.deepEqual(questionFrom(ask({ default: 'x' })).choices, ['x']);
  assert.deepEqual(questionFrom(ask({ default: 'x', choices: ['x', 'y'] })).choices, ['x', 'y']);
  assert.deepEqual(questionFrom(ask({})).choices, []);
});

test('a plan waiting for review carries its markdown, revision and document', () => {
  const view = normaliseSnapshot(snapshot({ state: 'WAITING_FOR_PLAN_APPROVAL', revision: 5 }, { kind: 'approve_plan', planRevision: 2, plan: PLAN, markdown: '# Plan\n1. edit', planUri: 'file:///repo/.autocode/runs/t-1/plan.md' }));
  assert.equal(view.awaiting, 'planApproval');
  assert.deepEqual(view.plan, { revision: 2, markdown: '# Plan\n1. edit', approved: false, uri: 'file:///repo/.autocode/runs/t-1/plan.md' });
  const plan = buildTaskNode(view).children.find((c) => c.kind === 'plan');
  assert.equal(plan?.label, 'Plan (revision 2)');
  assert.equal(plan?.description, 'waiting for your review');
  assert.equal(plan?.contextValue, 'plan');
});

test('after approval the plan shows as approved and points at the run folder', () => {
  const view = normaliseSnapshot(snapshot({ state: 'IMPLEMENTING', phase: 'implementing', planRevision: 2, revision: 6 }));
  assert.equal(view.awaiting, undefined);
  assert.equal(view.plan?.approved, true);
  assert.equal(view.plan?.uri, 'file:///repo/.autocode/runs/t-1/plan.md');
  assert.equal(buildTaskNode(view).description, 'implementing');
});

test('completion approval: files, diff, copy, tests and review become the completion node and evidence', () => {
  const view = normaliseSnapshot(snapshot({ state: 'WAITING_FOR_COMPLETION_APPROVAL', phase: 'verifying', revision: 9 }, {
    kind: 'approve_completion', diff: 'diff --git a/x b/x', files: ['shop/pricing.py', 'tests/test_pricing.py'],
    tests: TESTS, proof: PROOF, confirmation: null, review: { summary: 'Looks right', concerns: [], lessons: [] }, headMoved: null, apply: null,
  }));
  assert.equal(view.awaiting, 'completionApproval');
  assert.equal(view.copyPath, '/repo/.autocode/prep/p1/source');
  assert.deepEqual(view.changedFiles, ['shop/pricing.py', 'tests/test_pricing.py']);
  assert.equal(view.diff, 'diff --git a/x b/x');
  assert.deepEqual(view.evidence, [
    { label: 'Verdict: verified', detail: PROOF.summary, ok: true, file: '/repo/.autocode/runs/t-1/evidence/proof.json' },
    { label: 'Tests: pytest -q', detail: 'finished, exit code 0, 1.3 s', ok: true, file: '/repo/.autocode/runs/t-1/evidence/test-output.txt' },
    { label: 'Review', detail: 'Looks right', ok: true },
  ]);
  const node = buildTaskNode(view);
  assert.equal(node.contextValue, 'task-completion');
  assert.equal(node.description, 'waiting for completion approval');
  const completion = node.children.find((c) => c.contextValue === 'task-completion-node');
  assert.equal(completion?.description, '2 changed files, waiting for your approval');
});

test('a completed task is done, waits for nothing and lists what happened', () => {
  const view = normaliseSnapshot(snapshot({
    state: 'COMPLETED', phase: 'completed', revision: 12, done: true, planRevision: 1,
    result: { status: 'completed', verified: true, partial: false, proof: null, tests: TESTS, apply: APPLIED, files: ['a.py'], error: null },
    learning: { status: 'done', written: true, path: '/repo/.autocode/project.json', conventions: [], droppedForCredentials: [], omitted: [], errors: [], error: null, framework: 'pytest', testCommand: 'pytest -q' },
  }));
  assert.equal(view.done, true);
  assert.equal(view.awaiting, undefined);
  assert.deepEqual(view.changedFiles, ['a.py']);
  const node = buildTaskNode(view);
  assert.equal(node.contextValue, 'task-done');
  assert.equal(node.icon, 'pass');
  assert.equal(node.description, 'completed');
  const evidence = node.children.find((c) => c.id.endsWith('/evidence'));
  assert.deepEqual(evidence?.children.map((c) => `${c.label}|${c.icon}`), ['Tests: pytest -q|pass', 'Applied to the workspace|pass', 'Learned into .autocode/project.json|circle-outline']);
});

test('a failed task shows its error message', () => {
  const view = normaliseSnapshot(snapshot({ state: 'FAILED', phase: 'failed', done: true, revision: 4, error: { kind: 'testsFailed', message: 'the tests failed in the copy', phase: 'verifying', remedy: null } }));
  assert.equal(view.error, 'the tests failed in the copy');
  const node = buildTaskNode(view);
  assert.equal(node.icon, 'error');
  assert.equal(node.children.find((c) => c.kind === 'error')?.description, 'the tests failed in the copy');
});

test('didChange params ({task, revision}) read like a snapshot; bad ones are refused', () => {
  assert.equal(normaliseSnapshot({ task: snapshot({ id: 'w' }), revision: 1 }).id, 'w');
  assert.throws(() => normaliseSnapshot({ state: 'PLANNING' }), /no id/);
  assert.throws(() => normaliseSnapshot('nope'), /not an object/);
});

test('the store keeps the newest revision and ignores stale or repeated ones', () => {
  const store = new TaskStore();
  const seen: string[] = [];
  store.onDidChange((t) => seen.push(`${t?.id}@${t?.revision}`));
  assert.equal(store.apply(normaliseSnapshot(snapshot({ id: 'a', revision: 2 }))), true);
  assert.equal(store.apply(normaliseSnapshot(snapshot({ id: 'a', state: 'REQUIREMENTS', revision: 1 }))), false);
  assert.equal(store.apply(normaliseSnapshot(snapshot({ id: 'a', revision: 2 }))), false);
  assert.equal(store.apply(normaliseSnapshot(snapshot({ id: 'a', state: 'IMPLEMENTING', revision: 3 }))), true);
  assert.equal(store.get('a')?.state, 'IMPLEMENTING');
  assert.deepEqual(seen, ['a@2', 'a@3']);
});

test('the active task is the latest still running one, else the latest', () => {
  const store = new TaskStore();
  store.apply(normaliseSnapshot(snapshot({ id: 'run', state: 'IMPLEMENTING', revision: 1 })));
  store.apply(normaliseSnapshot(snapshot({ id: 'fin', state: 'COMPLETED', done: true, revision: 1 })));
  assert.equal(store.active()?.id, 'run');
  store.apply(normaliseSnapshot(snapshot({ id: 'run', state: 'CANCELLED', done: true, revision: 2 })));
  assert.equal(store.active()?.id, 'run');
  assert.deepEqual(store.all().map((t) => t.id), ['run', 'fin']);
  assert.deepEqual(store.awaiting('answer'), []);
});

test('a listing replaces a workspace but never rolls back a newer live revision', () => {
  const store = new TaskStore();
  store.apply(normaliseSnapshot(snapshot({ id: 'a', workspace: '/w1', state: 'VERIFYING', revision: 8 })));
  store.apply(normaliseSnapshot(snapshot({ id: 'gone', workspace: '/w1', revision: 1 })));
  store.apply(normaliseSnapshot(snapshot({ id: 'other', workspace: '/w2', revision: 1 })));
  store.replaceWorkspace('/w1', [normaliseSnapshot(snapshot({ id: 'a', workspace: '/w1', revision: 3 })), normaliseSnapshot(snapshot({ id: 'new', workspace: '/w1', revision: 1 }))]);
  assert.equal(store.get('a')?.state, 'VERIFYING');
  assert.equal(store.get('gone'), undefined);
  assert.ok(store.get('new'));
  assert.ok(store.get('other'), 'other workspaces untouched');
});

test('multi-root trees group tasks under their folders; a single root does not', () => {
  const tasks = [normaliseSnapshot(snapshot({ id: 'a', workspace: '/w1' })), normaliseSnapshot(snapshot({ id: 'b', workspace: '/w2' }))];
  assert.deepEqual(buildTaskTree(tasks, [{ name: 'w1', path: '/w1' }]).map((n) => n.kind), ['task', 'task']);
  const multi = buildTaskTree(tasks, [{ name: 'w1', path: '/w1' }, { name: 'w2', path: '/w2' }, { name: 'w3', path: '/w3' }]);
  assert.deepEqual(multi.map((n) => `${n.label}:${n.children.length}`), ['w1:1', 'w2:1', 'w3:0']);
  assert.equal(multi[2].description, 'no tasks');
});

test('phase labels and the status bar text read as words', () => {
  const view = normaliseSnapshot(snapshot({ brief: 'A rather long brief that will not fit the status bar', state: 'WAITING_FOR_PLAN_APPROVAL' }, { kind: 'approve_plan', planRevision: 1, plan: PLAN, markdown: '', planUri: null }));
  assert.equal(phaseLabel(view), 'waiting for plan approval');
  assert.equal(statusText(view), '$(checklist) AutoCode: plan review');
  assert.ok(statusText(view).replace(/^\$\([^)]*\) /, '').length < 30, 'status bar text under 30 characters');
  assert.ok(statusText({ ...view, awaiting: undefined, phase: 'verifying_with_the_projects_own_tests' }).replace(/^\$\([^)]*\) /, '').length < 30);
  assert.equal(phaseLabel(normaliseSnapshot(snapshot({ phase: 'someNewPhase' }))), 'some new phase');
  assert.equal(statusText(undefined), '$(code) AutoCode');
});

test('the wire has one spelling: a snake_case field is not read', () => {
  const waiting = snapshot({ state: 'WAITING_FOR_PLAN_APPROVAL' }, { kind: 'approve_plan', planRevision: 3, markdown: '# Plan', planUri: null, plan: PLAN });
  assert.equal(normaliseSnapshot(waiting).plan?.revision, 3);
  const snake = JSON.parse(JSON.stringify(waiting).replace('"planRevision":3', '"plan_revision":3'));
  assert.equal(normaliseSnapshot(snake).plan?.revision, undefined);
  // Before any plan the snapshot's planRevision is 0: no plan node.
  assert.equal(normaliseSnapshot(snapshot()).plan, undefined);
});

test('an unproven change names its verdict and each concern, never as a pass', () => {
  const proof: Proof = { ...PROOF, status: 'unproven', verified: false, summary: 'unproven: the change touches only tests', proofs: [],
    concerns: [{ kind: 'expectationChanged', path: 'tests/test_x.py', sentence: "test_add's expected value changed from 5 to -1", line: 3 }] };
  const row = proofEvidence(proof);
  assert.equal(row.label, 'Verdict: unproven');
  assert.equal(row.ok, false);
  assert.match(row.detail ?? '', /expected value changed from 5 to -1/);
});
