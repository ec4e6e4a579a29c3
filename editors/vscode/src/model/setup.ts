// The model settings VS Code holds for the person, as the server's
// `autocode.session.configure` arguments, and the provider check in words.
// No editor API here, so the unit tests check it.

import type { SessionConfigureArgs } from '../generated/protocol';

/** The `autocode.*` model settings, as read from the configuration (empty strings when unset). */
export interface ModelSettings {
  provider: string;
  model: string;
  baseUrl: string;
  engine: string;
  apiKeyVariable: string;
}

/**
 * The configure arguments: each setting given only when set; the key only when `key` is defined
 * (a string from secret storage, or '' to forget it), so a settings change keeps the key the
 * server holds.
 */
export function sessionArgs(settings: ModelSettings, key: string | undefined): SessionConfigureArgs {
  const out: SessionConfigureArgs = {};
  const given = (v: string): string | undefined => (v.trim() ? v.trim() : undefined);
  if (given(settings.provider)) out.provider = given(settings.provider);
  if (given(settings.model)) out.model = given(settings.model);
  if (given(settings.baseUrl)) out.baseUrl = given(settings.baseUrl);
  if (given(settings.engine)) out.engine = given(settings.engine);
  if (key !== undefined) {
    out.apiKey = key;
    if (given(settings.apiKeyVariable)) out.apiKeyEnv = given(settings.apiKeyVariable);
  }
  return out;
}

/** Whether anything about the model is set in VS Code (the walkthrough and the check say so). */
export function hasModelSettings(settings: ModelSettings): boolean {
  return [settings.provider, settings.model, settings.baseUrl, settings.engine].some((v) => v.trim() !== '');
}

/** A key typed into the input box: what is wrong with it, or undefined when it can be kept. */
export function keyProblem(value: string): string | undefined {
  if (!value.trim()) return 'Paste the key, or press Escape to keep the one you set before.';
  if (/\s/.test(value.trim())) return 'A key has no spaces or line breaks; paste it again.';
  return undefined;
}

/** The provider check as one short sentence for a notification, and whether it went well. */
export function checkSummary(check: Record<string, unknown>): { text: string; ok: boolean } {
  const provider = String(check.provider ?? 'fixture');
  const result = String(check.result ?? '');
  const model = check.model ? ` ${String(check.model)}` : '';
  const endpoint = check.endpoint ? ` at ${String(check.endpoint)}` : '';
  const key = check.api_key_env ? ` Key ${String(check.api_key_env)}: ${check.api_key_set ? 'set' : 'not set'}.` : '';
  if (result === 'answered') {
    const tools = check.tools === 'refused' ? ' It takes no tools (edit blocks will be used).' : '';
    return { text: `The ${provider} provider${model}${endpoint} answered.${tools}${key}`, ok: true };
  }
  if (result === 'failed' || result === 'not configured') {
    return { text: `The ${provider} provider${model}${endpoint} ${result === 'failed' ? 'failed' : 'is not configured'}: ${String(check.error ?? 'no reason given')}.${key}`, ok: false };
  }
  return {
    text: `${result ? `${result[0].toUpperCase()}${result.slice(1)}` : `The ${provider} provider has nothing to check`}: set autocode.provider, autocode.model and autocode.baseUrl for a real model.`,
    ok: provider !== 'fixture',
  };
}
