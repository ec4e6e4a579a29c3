// The ways out of a task that stopped: which actions a failed or interrupted
// task offers, its message with the failing tests named, and the agent's
// final summary. No editor API here, so the unit tests check it.

import type { TaskSnapshot } from '../generated/protocol';

export const SHOW_TEST_OUTPUT = 'Show test output';
export const RETRY_VERIFICATION = 'Retry verification';
export const RESUME = 'Resume';
export const OPEN_TRANSCRIPT = 'Open transcript';
export const CANCEL_TASK = 'Cancel Task';

/** Failures the engine's resume continues from (the model endpoint, a budget). */
const RESUMABLE = new Set(['providerError', 'budgetExhausted']);
const TEST_FAILURES = new Set(['testsFailed', 'testsRegressed', 'noTestCommand', 'sandboxUnavailable']);

/** Whether the failure happened while verifying (the tests, their environment or command). */
export function failedInVerification(snap: TaskSnapshot): boolean {
  const error = snap.error;
  return snap.state === 'FAILED' && !!error && (TEST_FAILURES.has(error.kind) || error.phase === 'verifying');
}

export function resumableFailure(snap: TaskSnapshot): boolean {
  return snap.state === 'FAILED' && !!snap.error && RESUMABLE.has(snap.error.kind);
}

/** The test output file of the run (written whenever the tests ran). */
export function testOutputFile(snap: TaskSnapshot): string | undefined {
  return snap.result?.tests || snap.needs.kind === 'approve_completion' || failedInVerification(snap) ? `${snap.runDir}/evidence/test-output.txt` : undefined;
}

/**
 * The agent's final summary: the implementer's answer once its loop answered. The reading roles'
 * answers (the investigator's citations, the planner's JSON) are the task's inputs, not a summary.
 */
export function agentSummary(snap: TaskSnapshot): { role: string; text: string } | undefined {
  const implementer = snap.agent?.roles.implementer?.summary;
  return implementer ? { role: 'implementer', text: implementer } : undefined;
}

/** The tests that failed, by name (failing, then regressed), at most `max`. */
export function failingTests(snap: TaskSnapshot, max = 5): string[] {
  const proof = snap.result?.proof ?? (snap.needs.kind === 'approve_completion' ? snap.needs.proof : null);
  if (!proof) return [];
  const names = [...proof.failing, ...proof.regressions.map((r) => `${r.id} (${r.now})`)];
  return names.length > max ? [...names.slice(0, max), `${names.length - max} more`] : names;
}

/** The buttons of the notification for a task that failed or was interrupted, most useful first. */
export function failureActions(snap: TaskSnapshot, interrupted: boolean): string[] {
  if (interrupted) return [RESUME, CANCEL_TASK];
  const out: string[] = [];
  if (failedInVerification(snap)) out.push(SHOW_TEST_OUTPUT, RETRY_VERIFICATION);
  if (resumableFailure(snap)) out.push(RESUME);
  if (snap.agent) out.push(OPEN_TRANSCRIPT);
  return out;
}

/** The message of that notification: what happened, the failing tests by name, no bare path. */
export function failureMessage(snap: TaskSnapshot, interrupted: boolean): string {
  const brief = snap.brief || snap.id;
  if (interrupted) {
    return `AutoCode: “${brief}” was interrupted while ${interruptedWhile(snap)}: the process that ran it stopped. Resume continues from where it was.`;
  }
  const error = snap.error;
  const tests = failingTests(snap);
  // The path of the output is a button now, not text to copy.
  const message = (error?.message ?? '').replace(/;?\s*the output is in \S+/, '').replace(/^failed:\s*/i, '').trim();
  const named = tests.length ? ` Failing: ${tests.join(', ')}.` : '';
  const hint = failedInVerification(snap)
    ? ' Fix the test environment or the test command, then retry the verification.'
    : resumableFailure(snap) ? ' Raise the budget or fix the endpoint, then resume.' : '';
  return `AutoCode: “${brief}” failed${message ? `: ${message}` : ''}.${named}${hint}`;
}

function phaseWords(phase: string): string {
  return phase.replace(/[_-]+/g, ' ').toLowerCase();
}

/** A working step lost its process (a killed server) and nothing works on it now (the engine says so). */
export function isInterrupted(snap: TaskSnapshot): boolean {
  return snap.state === 'INTERRUPTED';
}

/** The working state an interrupted task stopped in, in words ("verifying"). */
export function interruptedWhile(snap: TaskSnapshot): string {
  return phaseWords(snap.interruptedIn || snap.phase || 'working');
}
