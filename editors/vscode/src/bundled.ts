// The server bundled in this extension (autocode.importStrategy = useBundled,
// the default): a platform's .vsix carries `bundled/py3XX` folders with the
// server and its dependencies for each supported Python, and python/launch.py
// that picks the folder of the interpreter it runs in. The platform-neutral
// .vsix has no bundle: it uses the interpreter's own installation.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

export type ImportStrategy = 'useBundled' | 'fromEnvironment';

export const EXTENSION_ID = 'autocode.autocode';

export function importStrategy(): ImportStrategy {
  const value = vscode.workspace.getConfiguration('autocode').get<string>('importStrategy', 'useBundled');
  return value === 'fromEnvironment' ? 'fromEnvironment' : 'useBundled';
}

/** The launcher of the bundled server, or undefined when this .vsix carries none. */
export function bundledLauncher(extensionPath = vscode.extensions.getExtension(EXTENSION_ID)?.extensionPath): string | undefined {
  if (!extensionPath) return undefined;
  const launcher = path.join(extensionPath, 'python', 'launch.py');
  const bundled = path.join(extensionPath, 'bundled');
  try {
    if (fs.existsSync(launcher) && fs.readdirSync(bundled).some((d) => /^py3\d+$/.test(d))) return launcher;
  } catch {
    return undefined;
  }
  return undefined;
}
