import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gaveUpText, RestartBudget } from '../../src/model/restarts';

test('three restarts within the window, then none until the window moves on', () => {
  const budget = new RestartBudget(3, 1000);
  assert.equal(budget.take(0), true);
  assert.equal(budget.take(100), true);
  assert.equal(budget.take(200), true);
  assert.equal(budget.take(300), false);
  assert.equal(budget.used(300), 3);
  // The first restart left the window: one more is allowed.
  assert.equal(budget.take(1000), true);
  assert.equal(budget.take(1001), false);
});

test('a restart the person asks for starts a full budget', () => {
  const budget = new RestartBudget(2, 1000);
  budget.take(0);
  budget.take(1);
  assert.equal(budget.take(2), false);
  budget.reset();
  assert.equal(budget.used(2), 0);
  assert.equal(budget.take(2), true);
});

test('giving up says the server is not running and how to get it back', () => {
  const text = gaveUpText(3);
  assert.match(text, /not running/);
  assert.match(text, /3 times in 3 minutes/);
  assert.match(text, /AutoCode: Restart Language Server/);
  assert.match(text, /AutoCode: Show Output/);
});
