import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTaskNode, buildTaskTree, normaliseSnapshot, phaseLabel, statusText, TaskStore } from '../../src/model/tasks';

const waitingForAnswer = {
  id: 't1',
  brief: 'Add a test for slugify',
  state: 'awaiting_input',
  phase: 'requirements',
  revision: 3,
  needs: [{ kind: 'question', id: 'q-naming', question: 'Which naming convention should tests follow?', choices: ['test_<function>', 'test_<behaviour>'] }],
};

test('a snapshot waiting for an answer yields its question under the task', () => {
  const view = normaliseSnapshot(waitingForAnswer, '/repo');
  assert.equal(view.awaiting, 'answer');
  assert.equal(view.workspace, '/repo');
  const node = buildTaskNode(view);
  assert.equal(node.label, 'Add a test for slugify');
  assert.equal(node.description, 'requirements');
  const question = node.children.find((c) => c.kind === 'question');
  assert.ok(question, 'question node present');
  assert.equal(question.questionId, 'q-naming');
  assert.equal(question.label, 'Which naming convention should tests follow?');
  assert.equal(question.description, 'test_<function> · test_<behaviour>');
  assert.equal(question.contextValue, 'question');
});

test('snake_case snapshots from the engine read the same as camelCase ones', () => {
  const view = normaliseSnapshot({ task_id: 't2', state: 'awaiting_plan_approval', revision: 5, plan: { revision: 2, markdown: '# Plan\n1. edit' } });
  assert.equal(view.id, 't2');
  assert.equal(view.awaiting, 'planApproval');
  assert.equal(view.plan?.revision, 2);
  assert.equal(view.plan?.approved, false);
  const plan = buildTaskNode(view).children.find((c) => c.kind === 'plan');
  assert.equal(plan?.label, 'Plan (revision 2)');
  assert.equal(plan?.description, 'awaiting your review');
  assert.equal(plan?.contextValue, 'plan');
});

test('a plan need carries the revision to approve when the plan object does not', () => {
  const view = normaliseSnapshot({ id: 't3', state: 'planning', revision: 1, needs: [{ kind: 'plan_approval', revision: 4 }], plan: 'Do the thing' });
  assert.equal(view.awaiting, 'planApproval');
  assert.equal(view.plan?.revision, 4);
  assert.equal(view.plan?.markdown, 'Do the thing');
});

test('plan steps become a numbered markdown list', () => {
  const view = normaliseSnapshot({ id: 't4', state: 'implementing', revision: 1, plan: { revision: 1, steps: [{ title: 'Write test' }, 'Run suite'] } });
  assert.equal(view.plan?.markdown, '1. Write test\n2. Run suite');
  assert.equal(view.plan?.approved, true);
});

test('completed tasks are done, show evidence, and wait for nothing', () => {
  const view = normaliseSnapshot({
    id: 't5', state: 'completed', phase: 'completed', revision: 9, done: true,
    needs: [{ kind: 'question', id: 'stale', question: 'old' }],
    result: { evidence: [{ label: 'pytest -q', exit_code: 0 }, { label: 'lint', ok: false, summary: '1 error' }], changed_files: ['tests/test_slug.py'] },
  });
  assert.equal(view.done, true);
  assert.equal(view.awaiting, undefined);
  assert.deepEqual(view.changedFiles, ['tests/test_slug.py']);
  const node = buildTaskNode(view);
  assert.equal(node.contextValue, 'task-done');
  assert.equal(node.icon, 'pass');
  const evidence = node.children.find((c) => c.id.endsWith('/evidence'));
  assert.equal(evidence?.description, '2 items');
  assert.deepEqual(evidence?.children.map((c) => c.icon), ['pass', 'error']);
});

test('completion approval adds a completion node and a task context the menus key on', () => {
  const view = normaliseSnapshot({ id: 't6', state: 'awaiting_completion_approval', revision: 7, copy: '/tmp/copy', changedFiles: [{ path: 'a.py' }] });
  assert.equal(view.awaiting, 'completionApproval');
  assert.equal(view.copyPath, '/tmp/copy');
  assert.deepEqual(view.changedFiles, ['a.py']);
  const node = buildTaskNode(view);
  assert.equal(node.contextValue, 'task-completion');
  assert.ok(node.children.some((c) => c.contextValue === 'task-completion-node'));
});

test('snapshots wrapped as {task: ...} or missing an id', () => {
  assert.equal(normaliseSnapshot({ task: { id: 'w', state: 'planning' } }).id, 'w');
  assert.throws(() => normaliseSnapshot({ state: 'planning' }), /no id/);
  assert.throws(() => normaliseSnapshot('nope'), /not an object/);
});

test('the store keeps the newest revision and ignores stale or repeated ones', () => {
  const store = new TaskStore();
  const seen: string[] = [];
  store.onDidChange((t) => seen.push(`${t?.id}@${t?.revision}`));
  assert.equal(store.apply(normaliseSnapshot({ id: 'a', state: 'planning', revision: 2 })), true);
  assert.equal(store.apply(normaliseSnapshot({ id: 'a', state: 'requirements', revision: 1 })), false);
  assert.equal(store.apply(normaliseSnapshot({ id: 'a', state: 'planning', revision: 2 })), false);
  assert.equal(store.apply(normaliseSnapshot({ id: 'a', state: 'implementing', revision: 3 })), true);
  assert.equal(store.get('a')?.state, 'implementing');
  assert.deepEqual(seen, ['a@2', 'a@3']);
});

test('the active task is the latest still running one, else the latest', () => {
  const store = new TaskStore();
  store.apply(normaliseSnapshot({ id: 'run', state: 'implementing', revision: 1 }));
  store.apply(normaliseSnapshot({ id: 'fin', state: 'completed', revision: 1 }));
  assert.equal(store.active()?.id, 'run');
  store.apply(normaliseSnapshot({ id: 'run', state: 'cancelled', revision: 2 }));
  assert.equal(store.active()?.id, 'run');
  assert.deepEqual(store.all().map((t) => t.id), ['run', 'fin']);
});

test('a listing replaces a workspace but never rolls back a newer live revision', () => {
  const store = new TaskStore();
  store.apply(normaliseSnapshot({ id: 'a', state: 'verifying', revision: 8 }, '/w1'));
  store.apply(normaliseSnapshot({ id: 'gone', state: 'planning', revision: 1 }, '/w1'));
  store.apply(normaliseSnapshot({ id: 'other', state: 'planning', revision: 1 }, '/w2'));
  store.replaceWorkspace('/w1', [normaliseSnapshot({ id: 'a', state: 'planning', revision: 3 }, '/w1'), normaliseSnapshot({ id: 'new', state: 'planning', revision: 1 }, '/w1')]);
  assert.equal(store.get('a')?.state, 'verifying');
  assert.equal(store.get('gone'), undefined);
  assert.ok(store.get('new'));
  assert.ok(store.get('other'), 'other workspaces untouched');
});

test('multi-root trees group tasks under their folders; single root does not', () => {
  const tasks = [normaliseSnapshot({ id: 'a', state: 'planning' }, '/w1'), normaliseSnapshot({ id: 'b', state: 'planning' }, '/w2')];
  const single = buildTaskTree(tasks, [{ name: 'w1', path: '/w1' }]);
  assert.deepEqual(single.map((n) => n.kind), ['task', 'task']);
  const multi = buildTaskTree(tasks, [{ name: 'w1', path: '/w1' }, { name: 'w2', path: '/w2' }, { name: 'w3', path: '/w3' }]);
  assert.deepEqual(multi.map((n) => `${n.label}:${n.children.length}`), ['w1:1', 'w2:1', 'w3:0']);
  assert.equal(multi[2].description, 'no tasks');
});

test('phase labels and the status bar text read as words', () => {
  const view = normaliseSnapshot({ id: 'x', brief: 'A rather long brief that will not fit the status bar', state: 'awaiting_plan_approval', phase: 'awaitingPlanApproval' });
  assert.equal(phaseLabel(view), 'awaiting plan approval');
  assert.equal(statusText(view), '$(checklist) AutoCode: awaiting plan approval — A rather long brief that will…');
  assert.equal(statusText(undefined), '$(code) AutoCode');
});
