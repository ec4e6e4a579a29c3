// The names this extension uses from the AutoCode language server protocol
// (docs/protocol.md is the reference). Kept free of the editor API so unit
// tests can import it.

// Command and method names come from the generated tables (scripts/gen_protocol_types.py):
// a name is never copied here by hand.
export { COMMANDS as Commands, METHODS as Methods } from './generated/protocol';

/** Error codes the server uses (JSON-RPC). */
export const ErrorCodes = {
  invalidParams: -32602,
  domainError: -32803,
} as const;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first of `keys` present in `obj` (for results the generated types do not state yet). */
export function field(obj: unknown, ...keys: string[]): Json | undefined {
  if (!isObject(obj)) return undefined;
  for (const key of keys) {
    if (key in obj && obj[key] !== undefined) return obj[key];
  }
  return undefined;
}

export function stringField(obj: unknown, ...keys: string[]): string | undefined {
  const value = field(obj, ...keys);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

export function numberField(obj: unknown, ...keys: string[]): number | undefined {
  const value = field(obj, ...keys);
  return typeof value === 'number' ? value : undefined;
}

export function arrayField(obj: unknown, ...keys: string[]): Json[] {
  const value = field(obj, ...keys);
  return Array.isArray(value) ? value : [];
}
