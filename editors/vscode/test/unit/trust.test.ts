import assert from 'node:assert/strict';
import { test } from 'node:test';
import { askAndTrust, runWithTrust, trustMessage, trustRequestOf, trustRequestOfReport, trustRequestOfResult, TrustRequest } from '../../src/model/trust';

/** The shape of client.ts's ServerCommandError (that module needs the editor API). */
class CommandFailed extends Error {
  constructor(message: string, readonly kind: string | undefined, readonly data?: unknown) {
    super(message);
  }
}

const SAYS = ['send the variable GITHUB_TOKEN to http://127.0.0.1:9/v1'];
const required = (digest = 'sha256:a', says = SAYS): CommandFailed =>
  new CommandFailed('this repository asks to ...', 'trustRequired', { kind: 'trustRequired', digest, says, status: 'not-trusted', workspace: '/repo' });
const changed = (digest: string, says: string[]): CommandFailed =>
  new CommandFailed('the values changed', 'trustChanged', { kind: 'trustChanged', digest, says });

/** A scripted person and server: `answers` are the clicks in order; every call is recorded. */
function script(answers: boolean[], trustFails: unknown[] = []) {
  const asked: TrustRequest[] = [];
  const trusted: string[] = [];
  return {
    asked,
    trusted,
    steps: {
      ask: async (request: TrustRequest) => {
        asked.push(request);
        return answers.shift() ?? false;
      },
      trust: async (digest: string) => {
        trusted.push(digest);
        const failure = trustFails.shift();
        if (failure) throw failure;
        return { status: 'trusted', recorded: true };
      },
    },
  };
}

test('a trustRequired error gives the sentences and digest to show; other errors give nothing', () => {
  assert.deepEqual(trustRequestOf(required()), { says: SAYS, digest: 'sha256:a', changed: false });
  assert.equal(trustRequestOf(changed('sha256:b', SAYS))?.changed, true);
  assert.equal(trustRequestOf(new CommandFailed('no', 'setupError', { digest: 'x' })), undefined);
  assert.equal(trustRequestOf(new CommandFailed('no digest', 'trustRequired', { says: SAYS })), undefined);
  assert.equal(trustRequestOf('trustRequired'), undefined);
});

test('the prompt names the variable and the URL, and says when the values changed', () => {
  const text = trustMessage('shop', { says: [...SAYS, 'write memories to /srv/team.sqlite3'], digest: 'd', changed: false });
  assert.equal(
    text,
    'AutoCode: the settings of shop ask to: send the variable GITHUB_TOKEN to http://127.0.0.1:9/v1; write memories to /srv/team.sqlite3. '
      + 'Trust exactly these values for this repository? Until then they are ignored.',
  );
  assert.match(trustMessage('shop', { says: SAYS, digest: 'd', changed: true }), /changed since you last saw them\. They now ask to: send the variable GITHUB_TOKEN/);
});

test('Not now (or closing the warning) trusts nothing and runs nothing more', async () => {
  let runs = 0;
  const person = script([false]);
  const outcome = await runWithTrust(async () => {
    runs += 1;
    throw required();
  }, person.steps);
  assert.deepEqual(outcome, { ran: false });
  assert.equal(runs, 1);
  assert.equal(person.asked.length, 1);
  assert.deepEqual(person.trusted, []);
});

test('Trust records the digest shown, then the command runs once more', async () => {
  let runs = 0;
  const person = script([true]);
  const outcome = await runWithTrust(async () => {
    runs += 1;
    if (runs === 1) throw required('sha256:shown');
    return 'snapshot';
  }, person.steps);
  assert.deepEqual(outcome, { ran: true, value: 'snapshot' });
  assert.equal(runs, 2);
  assert.deepEqual(person.trusted, ['sha256:shown']);
});

test('values that changed before the click are shown again, and only a second click trusts them', async () => {
  const newer = ['send the variable OTHER_TOKEN to http://127.0.0.1:9/v1'];
  const person = script([true, true], [changed('sha256:new', newer)]);
  assert.equal(await askAndTrust({ says: SAYS, digest: 'sha256:old', changed: false }, person.steps), true);
  assert.deepEqual(person.asked.map((r) => [r.says, r.changed]), [[SAYS, false], [newer, true]]);
  assert.deepEqual(person.trusted, ['sha256:old', 'sha256:new']);

  const declines = script([true, false], [changed('sha256:new', newer)]);
  assert.equal(await askAndTrust({ says: SAYS, digest: 'sha256:old', changed: false }, declines.steps), false);
  assert.deepEqual(declines.trusted, ['sha256:old']);
});

test('a command that needs no trust asks nothing; other failures pass through unasked', async () => {
  const person = script([true]);
  assert.deepEqual(await runWithTrust(async () => 1, person.steps), { ran: true, value: 1 });
  await assert.rejects(runWithTrust(async () => {
    throw new CommandFailed('git failed', 'gitError');
  }, person.steps), /git failed/);
  assert.equal(person.asked.length, 0);
});

test('the retry happens once: a second trustRequired is reported, not asked again', async () => {
  let runs = 0;
  const person = script([true, true]);
  await assert.rejects(runWithTrust(async () => {
    runs += 1;
    throw required(`sha256:${runs}`);
  }, person.steps), /this repository asks/);
  assert.equal(runs, 2);
  assert.equal(person.asked.length, 1);
});

test('a doctor report offers the prompt only for values ignored for want of trust', () => {
  const trust = { status: 'not-trusted', trusted: false, digest: 'sha256:d', says: SAYS };
  assert.deepEqual(trustRequestOfReport({ report: { trust }, text: '' }), { says: SAYS, digest: 'sha256:d', changed: false });
  assert.equal(trustRequestOfReport({ report: { trust: { ...trust, status: 'changed' } } })?.changed, true);
  assert.equal(trustRequestOfReport({ report: { trust: { ...trust, trusted: true, status: 'trusted' } } }), undefined);
  assert.equal(trustRequestOfReport({ report: { trust: { status: 'nothing-asked', trusted: true, digest: 'x', says: [] } } }), undefined);
  assert.equal(trustRequestOfReport({ report: {} }), undefined);
});

test('Trust Repository asks only about values not trusted yet', () => {
  const result = { workspace: '/repo', status: 'not-trusted', trusted: false, says: SAYS, digest: 'sha256:r', asks: [] };
  assert.deepEqual(trustRequestOfResult(result), { says: SAYS, digest: 'sha256:r', changed: false });
  assert.equal(trustRequestOfResult({ ...result, status: 'trusted', trusted: true }), undefined);
  assert.equal(trustRequestOfResult({ ...result, says: [] }), undefined);
});
