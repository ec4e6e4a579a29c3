// Connecting to a server that is already listening (autocode.server.connect,
// or the older autocode.server.tcp / autocode.server.socket): where it is, the
// token it asks for, and what to tell the person when the token is missing or
// refused. No vscode import, so the unit tests run in node.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTcpSetting } from './python';

/** A listening server: `tcp://HOST:PORT`, `ws://HOST:PORT[/PATH]` or `unix:PATH`. */
export type Endpoint =
  | { kind: 'tcp'; host: string; port: number; where: string }
  | { kind: 'ws'; url: string; where: string }
  | { kind: 'unix'; path: string; where: string };

/** The header a WebSocket client carries the token in (docs/security.md; a web page cannot set it). */
export const TOKEN_HEADER = 'X-AutoCode-Token';

const CONNECT_FORMS = 'use tcp://127.0.0.1:PORT, ws://127.0.0.1:PORT or unix:/ABSOLUTE/PATH (what the server printed after "listening on"), or leave it empty to start the server here';

/** autocode.server.connect: where the server listens, or undefined when empty. */
export function parseConnectSetting(value: string, home: string): Endpoint | undefined {
  const text = value.trim();
  if (!text) return undefined;
  const bad = (): Error => new Error(`autocode.server.connect is "${text}": ${CONNECT_FORMS}.`);
  const scheme = /^([a-z]+):/i.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'unix') {
    const rest = text.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    const socket = rest.startsWith('~/') ? path.join(home, rest.slice(2)) : rest;
    if (!path.isAbsolute(socket)) throw bad();
    return { kind: 'unix', path: socket, where: `unix:${socket}` };
  }
  if (scheme !== 'tcp' && scheme !== 'ws') throw bad();
  const match = /^[a-z]+:\/\/(\[[^\]\s]+\]|[^:/\s[\]]+):(\d{1,5})(\/[^\s]*)?$/i.exec(text);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port < 1 || port > 65535) throw bad();
  const host = match[1];
  if (scheme === 'tcp') {
    if (match[3] && match[3] !== '/') throw bad();
    return { kind: 'tcp', host: host.replace(/^\[|\]$/g, ''), port, where: `tcp://${host}:${port}` };
  }
  const url = `ws://${host}:${port}${match[3] ?? '/'}`;
  return { kind: 'ws', url, where: url };
}

/** Where to connect: autocode.server.connect, else the older socket and tcp settings; undefined starts a server. */
export function chooseEndpoint(connect: string, socket: string, tcp: string, home: string): Endpoint | undefined {
  const chosen = parseConnectSetting(connect, home);
  if (chosen) return chosen;
  const socketPath = parseSocketSetting(socket, home);
  if (socketPath) return { kind: 'unix', path: socketPath, where: `unix:${socketPath}` };
  const address = parseTcpSetting(tcp);
  if (address) return { kind: 'tcp', host: address.host, port: address.port, where: `tcp://${address.host}:${address.port}` };
  return undefined;
}

/** The token to present, and the setting it came from (named when the server refuses it). */
export interface Token {
  value: string;
  source: 'autocode.server.token' | 'autocode.server.tokenFile';
}

/** autocode.server.token when set, else the token in autocode.server.tokenFile; undefined when neither is. */
export function chooseToken(tokenSetting: string, tokenFile: string, home: string, read?: (p: string) => string): Token | undefined {
  const given = tokenSetting.trim();
  if (given) return { value: given, source: 'autocode.server.token' };
  const fromFile = readTokenFile(tokenFile, home, read);
  return fromFile === undefined ? undefined : { value: fromFile, source: 'autocode.server.tokenFile' };
}

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
export function explainRefusal(message: string, where: string, source: Token['source'] | undefined): string | undefined {
  if (!/needs its token|unauthorized/i.test(message)) return undefined;
  if (!source) {
    return `The AutoCode server at ${where} asks for its token. Set "autocode.server.tokenFile" to the token file it printed when it started ("token file: PATH"), or put the token in "autocode.server.token".`;
  }
  if (source === 'autocode.server.token') {
    return `The AutoCode server at ${where} refused the token in "autocode.server.token". The server makes a new token at every start: copy the one in the file it printed this time ("token file: PATH"), point "autocode.server.tokenFile" at that file instead, or start the server with --token-file.`;
  }
  return `The AutoCode server at ${where} refused the token in "autocode.server.tokenFile". The server makes a new token at every start: point the setting at the file it printed this time, or start it with --token-file.`;
}
