import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentRole, Needs, TaskSnapshot } from '../../src/generated/protocol';
import { agentSummary, failureActions, failureMessage, isInterrupted } from '../../src/model/failures';
import { inlineRefusal, skillsMarkdown } from '../../src/model/memory';
import { checkSummary, keyProblem, sessionArgs } from '../../src/model/setup';
import { buildTaskNode, normaliseSnapshot, TaskStore } from '../../src/model/tasks';

function snapshot(overrides: Partial<TaskSnapshot> = {}, needs: Needs = { kind: null }): TaskSnapshot {
  return {
    id: 't-1', workspace: '/repo', brief: 'Add a helper', state: 'VERIFYING', phase: 'verifying', revision: 4,
    needs, done: false, result: null, error: null, learning: null, runDir: '/repo/.autocode/runs/t-1', copy: null,
    planRevision: 1, humanPauseStates: [], created: '2026-01-01T00:00:00Z', updated: '2026-01-01T00:00:00Z',
    answers: [], agent: null, interruptedIn: null, ...overrides,
  };
}

// A role with every field at a neutral value, so a test names only what it is about (and a new
// protocol field needs one line here, not one per test).
function agentRole(overrides: Partial<AgentRole> = {}): AgentRole {
  return {
    role: 'x', mode: 'tools', fallbackReason: null, turns: 1, toolCalls: 0, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
    seconds: 1, budgets: null, stopped: 'answered', transcript: null, summary: null, engine: null, engineVersion: null, costUsd: null,
    ...overrides,
  };
}

const EMPTY = { provider: '', model: '', baseUrl: '', engine: '', apiKeyVariable: '' };

test('the configure arguments carry only what is set, and the key only when asked', () => {
  assert.deepEqual(sessionArgs(EMPTY, undefined), {});
  const settings = { ...EMPTY, provider: 'openai', model: ' gpt-4.1 ', baseUrl: 'http://127.0.0.1:8000/v1', engine: 'codex', apiKeyVariable: 'MY_KEY' };
  assert.deepEqual(sessionArgs(settings, undefined), { provider: 'openai', model: 'gpt-4.1', baseUrl: 'http://127.0.0.1:8000/v1', engine: 'codex' });
  assert.deepEqual(sessionArgs(settings, 'k'), { provider: 'openai', model: 'gpt-4.1', baseUrl: 'http://127.0.0.1:8000/v1', engine: 'codex', apiKey: 'k', apiKeyEnv: 'MY_KEY' });
  assert.equal(sessionArgs(EMPTY, '').apiKey, '');
  assert.match(keyProblem('  ') ?? '', /Paste the key/);
  assert.match(keyProblem('sk-a b') ?? '', /no spaces/);
  assert.equal(keyProblem('sk-abc'), undefined);
});

test('the provider check reads as one sentence, the key named but never shown', () => {
  const ok = checkSummary({ provider: 'openai', model: 'm', endpoint: 'http://127.0.0.1:1/v1', result: 'answered', tools: 'called', api_key_env: 'OPENAI_API_KEY', api_key_set: true });
  assert.equal(ok.ok, true);
  assert.match(ok.text, /openai provider m at http:\/\/127\.0\.0\.1:1\/v1 answered\. Key OPENAI_API_KEY: set\./);
  const fixture = checkSummary({ provider: 'fixture', result: 'the fixture provider has no endpoint to check' });
  assert.equal(fixture.ok, false);
  assert.match(fixture.text, /set autocode\.provider/);
  assert.equal(checkSummary({ provider: 'openai', result: 'failed', error: 'answered HTTP 401' }).ok, false);
});

test('a failed verification offers the test output and a retry, and names the failing tests', () => {
  const failed = snapshot({
    state: 'FAILED', phase: 'failed', done: true,
    error: { kind: 'testsFailed', phase: 'verifying', message: 'failed: 1 test failed; the output is in /repo/.autocode/runs/t-1/evidence/test-output.txt', remedy: null },
    result: {
      status: 'failed', verified: false, files: [], tests: null, review: null, apply: null, learning: null,
      proof: { status: 'failed', verified: false, summary: '', proofs: [], regressions: [{ id: 'tests/test_a.py::test_old', base: 'passed', now: 'failed' }], failing: ['tests/test_a.py::test_new'], alreadyFailing: [], reasons: [], concerns: [], testFiles: [], runs: [] },
    } as unknown as TaskSnapshot['result'],
  });
  assert.deepEqual(failureActions(failed, false), ['Show test output', 'Retry verification']);
  const message = failureMessage(failed, false);
  assert.match(message, /Failing: tests\/test_a\.py::test_new, tests\/test_a\.py::test_old \(failed\)/);
  assert.doesNotMatch(message, /test-output\.txt/);
  const view = normaliseSnapshot(failed);
  const node = buildTaskNode(view);
  assert.equal(node.contextValue, 'task-failed-tests');
  const error = node.children.find((c) => c.kind === 'error');
  assert.equal(error?.file, '/repo/.autocode/runs/t-1/evidence/test-output.txt');
});

test('a provider failure offers Resume and the transcript', () => {
  const agent = { roles: {}, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, editBlocksFallback: [] };
  const failed = snapshot({ state: 'FAILED', done: true, agent, error: { kind: 'providerError', phase: 'implementing', message: 'HTTP 503', remedy: null } });
  assert.deepEqual(failureActions(failed, false), ['Resume', 'Open transcript']);
});

test('an interrupted task is listed as such and offers Resume', () => {
  const store = new TaskStore();
  const stopped = normaliseSnapshot(snapshot({ state: 'INTERRUPTED', phase: 'interrupted', interruptedIn: 'VERIFYING' }));
  const interrupted = store.replaceWorkspace('/repo', [stopped, normaliseSnapshot(snapshot({ id: 't-2' }))]);
  assert.deepEqual(interrupted.map((t) => t.id), ['t-1']);
  const held = store.get('t-1');
  assert.ok(held?.interrupted);
  assert.equal(buildTaskNode(held).contextValue, 'task-interrupted');
  assert.match(buildTaskNode(held).description ?? '', /interrupted while verifying/);
  assert.deepEqual(failureActions(held.raw, true), ['Resume', 'Cancel Task']);
  assert.match(failureMessage(held.raw, true), /interrupted while verifying/);
  assert.equal(isInterrupted(snapshot()), false);
});

test('the agent summary shows in the task and opens the transcript', () => {
  const role = (summary: string | null) => agentRole({ summary });
  const agent = { roles: { planner: role('planned'), implementer: role('add adds now') }, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, editBlocksFallback: [] };
  const snap = snapshot({ agent });
  assert.deepEqual(agentSummary(snap), { role: 'implementer', text: 'add adds now' });
  assert.equal(agentSummary(snapshot({ agent: { ...agent, roles: { investigator: role('{"citations": []}') } } })), undefined);
  const node = buildTaskNode(normaliseSnapshot(snap)).children.find((c) => c.kind === 'summary');
  assert.equal(node?.description, 'add adds now');
  assert.equal(node?.contextValue, 'agent-summary');
});

test('skills made by a promotion read as a page, not JSON', () => {
  const page = skillsMarkdown([{ name: 'release-notes', owner: null, scope: 'project', description: 'How release notes are written', content: 'Past tense.' }]);
  assert.match(page, /^# Skills made by promotion/);
  assert.match(page, /## release-notes\n\n\*project, team\*\n\nHow release notes are written\n\nPast tense\./);
  assert.doesNotMatch(page, /[{}]/);
});

test('a refusal reads as one line: why, where it belongs, the durable version', () => {
  const line = inlineRefusal({
    message: "not saved: it names a task key (PAY-128); a memory must stay true after that task is finished the task's own notes (its run log and comments), which already record what happened on that one task A durable version: Fixing needs the billing flag turned on.",
    belongs: "the task's own notes (its run log and comments), which already record what happened on that one task",
    suggestion: 'Fixing needs the billing flag turned on.',
  });
  assert.equal(line, "Not saved: it names a task key (PAY-128); a memory must stay true after that task is finished. It belongs in the task's own notes (its run log and comments), which already record what happened on that one task. Saveable instead (the lightbulb puts it in the box): “Fixing needs the billing flag turned on.”");
});
