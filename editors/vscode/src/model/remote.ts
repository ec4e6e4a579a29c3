// Connecting to a server that is already listening (autocode.server.tcp or
// autocode.server.socket): the token it asks for, and what to tell the person
// when it is missing or refused. No vscode import, so the unit tests run in node.

import * as fs from 'node:fs';
import * as path from 'node:path';

/** Where to connect: a unix socket path, or nothing (TCP and stdio are parsed elsewhere). */
export function parseSocketSetting(value: string, home: string): string | undefined {
  const text = value.trim();
  if (!text) return undefined;
  const expanded = text.startsWith('~/') ? path.join(home, text.slice(2)) : text;
  if (!path.isAbsolute(expanded)) {
    throw new Error(`autocode.server.socket is "${text}": use the absolute path the server printed ("listening on socket PATH"), or leave it empty.`);
  }
  return expanded;
}

/** The token in `file` (autocode.server.tokenFile); undefined when the setting is empty. */
export function readTokenFile(file: string, home: string, read: (p: string) => string = (p) => fs.readFileSync(p, 'utf8')): string | undefined {
  const text = file.trim();
  if (!text) return undefined;
  const expanded = text.startsWith('~/') ? path.join(home, text.slice(2)) : text;
  let token: string;
  try {
    token = read(expanded).trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw new Error(`Cannot read the AutoCode token file "${expanded}" (${code}). Set "autocode.server.tokenFile" to the file the server printed when it started ("token file: PATH"); a new one is made at every start unless the server was given --token-file.`);
  }
  if (!token) throw new Error(`The AutoCode token file "${expanded}" is empty; point "autocode.server.tokenFile" at the file the server printed.`);
  return token;
}

/** The `initializationOptions` that carry the token to the server. */
export function initializationOptions(token: string | undefined): Record<string, unknown> {
  return token === undefined ? {} : { autocode: { token } };
}

/** A person-readable explanation when the server refused the connection, else undefined. */
export function explainRefusal(message: string, where: string, tokenFileSet: boolean): string | undefined {
  if (!/needs its token|unauthorized/i.test(message)) return undefined;
  if (!tokenFileSet) {
    return `The AutoCode server at ${where} asks for its token. Set "autocode.server.tokenFile" to the token file it printed when it started ("token file: PATH").`;
  }
  return `The AutoCode server at ${where} refused the token in "autocode.server.tokenFile". The server makes a new token at every start: point the setting at the file it printed this time, or start it with --token-file.`;
}
