import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as args from '../../src/model/args';

const folders = [
  { name: 'app', path: '/ws/app' },
  { name: 'app-lib', path: '/ws/app-lib' },
  { name: 'nested', path: '/ws/app/nested' },
];

test('the folder of a command: the only one, else the one owning the active file (deepest wins)', () => {
  assert.deepEqual(args.folderForCommand([folders[0]], undefined), folders[0]);
  assert.equal(args.folderForCommand(folders, undefined), undefined);
  assert.equal(args.folderForCommand(folders, '/ws/app-lib/x.py')?.name, 'app-lib');
  assert.equal(args.folderForCommand(folders, '/ws/app/x.py')?.name, 'app');
  assert.equal(args.folderForCommand(folders, '/ws/app/nested/y.py')?.name, 'nested');
  assert.equal(args.folderForCommand(folders, '/elsewhere/z.py'), undefined);
  assert.equal(args.folderForCommand([], '/ws/app/x.py'), undefined);
});

test('task commands carry the workspace and the task id', () => {
  assert.deepEqual(args.startTaskArgs('  Add a test  ', '/ws/app'), { workspace: '/ws/app', brief: 'Add a test' });
  assert.throws(() => args.startTaskArgs('   ', '/ws/app'), /needs a brief/);
  assert.deepEqual(args.taskArgs('t1', '/ws/app'), { workspace: '/ws/app', taskId: 't1' });
  assert.deepEqual(args.taskArgs('t1', undefined), { taskId: 't1' });
  assert.deepEqual(args.answerArgs('t1', 'q1', 'snake_case', '/w'), { workspace: '/w', taskId: 't1', questionId: 'q1', text: 'snake_case' });
  assert.throws(() => args.answerArgs('t1', 'q1', ' ', '/w'), /empty answer/);
});

test('plan approval names the revision it approves; rejection needs feedback', () => {
  assert.deepEqual(args.approvePlanArgs('t1', 3, '/w'), { workspace: '/w', taskId: 't1', revision: 3 });
  assert.throws(() => args.approvePlanArgs('t1', undefined, '/w'), /no plan revision/);
  assert.deepEqual(args.rejectPlanArgs('t1', ' smaller steps ', '/w'), { workspace: '/w', taskId: 't1', feedback: 'smaller steps' });
  assert.throws(() => args.rejectPlanArgs('t1', '', '/w'), /what should change/);
});

test('forget always sends the explicit confirmation', () => {
  assert.deepEqual(args.forgetArgs('/w'), { workspace: '/w', confirm: true });
});

test('memory arguments: owner becomes shared, project scope needs a folder, agent only when set', () => {
  assert.deepEqual(args.memorySaveArgs(' use uv ', { owner: 'team', scope: 'project' }, 'tooling', 'implementer', '/w'), {
    workspace: '/w', agent: 'implementer', content: 'use uv', scope: 'project', shared: true, category: 'tooling',
  });
  assert.deepEqual(args.memorySaveArgs('x', { owner: 'agent', scope: 'global' }, undefined, '', '/w'), { content: 'x', scope: 'global', shared: false });
  assert.throws(() => args.memorySaveArgs('x', { owner: 'agent', scope: 'project' }, undefined, '', undefined), /need an open folder/);
  assert.throws(() => args.memorySaveArgs('  ', { owner: 'agent', scope: 'global' }, undefined, '', '/w'), /needs some text/);
  assert.deepEqual(args.memorySearchArgs(' pytest ', '', undefined), { query: 'pytest', scope: 'all', owner: 'all', limit: 50 });
  assert.throws(() => args.memorySearchArgs('', '', undefined), /search for/);
  assert.deepEqual(args.memoryDeleteArgs('m1', '', '/w'), { workspace: '/w', id: 'm1' });
  assert.deepEqual(args.planPromotionArgs('/w'), { workspace: '/w' });
  assert.deepEqual(args.planPromotionArgs(undefined), {});
  assert.deepEqual(args.applyPromotionArgs(['a', 'b'], undefined), { ids: ['a', 'b'] });
  assert.throws(() => args.applyPromotionArgs([], '/w'), /at least one/);
});
