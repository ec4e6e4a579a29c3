// The person's trust in what a repository's settings files ask for (model endpoints, key
// variables, memory stores): reading a trustRequired / trustChanged error or a doctor report,
// the one prompt's text, and the flow around it (ask, trust exactly the values shown, retry
// once). Free of the editor API: the prompt and the server come in as functions.

import { arrayField, field, isObject, stringField } from '../protocol';

export const TRUST_LABEL = 'Trust this repository';
export const NOT_NOW_LABEL = 'Not now';

/** What the person is asked about: the server's sentences and the digest of exactly those values. */
export interface TrustRequest {
  says: string[];
  digest: string;
  /** The values changed since they were last shown (trustChanged) or trusted (status `changed`). */
  changed: boolean;
}

function requestFrom(data: unknown, changed: boolean): TrustRequest | undefined {
  const digest = stringField(data, 'digest');
  if (!digest) return undefined;
  const says = arrayField(data, 'says').filter((s): s is string => typeof s === 'string');
  return { says, digest, changed: changed || stringField(data, 'status') === 'changed' };
}

/** The request a failed command carries when a yes to the repository's values could clear it. */
export function trustRequestOf(err: unknown): TrustRequest | undefined {
  if (!isObject(err) && !(err instanceof Error)) return undefined;
  const kind = (err as { kind?: unknown }).kind;
  if (kind !== 'trustRequired' && kind !== 'trustChanged') return undefined;
  return requestFrom((err as { data?: unknown }).data, kind === 'trustChanged');
}

/** The request of a TrustResult (or a doctor report's `trust`) whose values are not trusted yet. */
export function trustRequestOfResult(trust: unknown): TrustRequest | undefined {
  if (!isObject(trust) || trust.trusted !== false) return undefined;
  const request = requestFrom(trust, false);
  return request?.says.length ? request : undefined;
}

/** The request a doctor report carries when the repository's values are ignored for want of trust. */
export function trustRequestOfReport(report: unknown): TrustRequest | undefined {
  return trustRequestOfResult(field(field(report, 'report') ?? report, 'trust'));
}

/** The one prompt's text: where the settings would send what, and the question. */
export function trustMessage(folder: string, request: TrustRequest): string {
  const lead = request.changed
    ? `AutoCode: the settings of ${folder} changed since you last saw them. They now ask to`
    : `AutoCode: the settings of ${folder} ask to`;
  return `${lead}: ${request.says.join('; ')}. Trust exactly these values for this repository? Until then they are ignored.`;
}

export interface TrustSteps {
  /** Shows the prompt; true only when the person clicked Trust. */
  ask(request: TrustRequest): Promise<boolean>;
  /** autocode.project.trust with `confirm: true` and the digest shown. */
  trust(digest: string): Promise<unknown>;
}

/**
 * Asks about `request` and, on the person's click, trusts exactly the values shown. When the
 * files changed in between (trustChanged), the new values are shown and asked about again.
 * True when trust was recorded; any other failure is thrown.
 */
export async function askAndTrust(request: TrustRequest, steps: TrustSteps): Promise<boolean> {
  let shown = request;
  for (;;) {
    if (!(await steps.ask(shown))) return false;
    try {
      await steps.trust(shown.digest);
      return true;
    } catch (err) {
      const next = trustRequestOf(err);
      if (!next || !next.changed) throw err;
      shown = next;
    }
  }
}

export type TrustOutcome<T> = { ran: true; value: T } | { ran: false };

/**
 * Runs a command; when it fails for want of trust, asks, trusts on the person's click and runs it
 * once more. `{ran: false}` when the person declined: nothing was trusted and nothing ran.
 */
export async function runWithTrust<T>(run: () => Promise<T>, steps: TrustSteps): Promise<TrustOutcome<T>> {
  try {
    return { ran: true, value: await run() };
  } catch (err) {
    const request = trustRequestOf(err);
    if (!request) throw err;
    if (!(await askAndTrust(request, steps))) return { ran: false };
    return { ran: true, value: await run() };
  }
}
