// Which Python runs the language server, decided from the setting, the Python
// extension's interpreter and the fallback, with the reason kept for messages.

export interface PythonChoice {
  command: string;
  source: 'setting' | 'python-extension' | 'default';
}

/** Expands `~` and `${workspaceFolder}` / `${userHome}` in the setting. */
export function expandPythonSetting(value: string, home: string, workspaceFolder: string | undefined): string {
  let out = value.trim();
  if (out === '~' || out.startsWith('~/')) out = home + out.slice(1);
  out = out.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder !== undefined) out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  return out;
}

export function choosePython(setting: string, extensionInterpreter: string | undefined, home: string, workspaceFolder: string | undefined): PythonChoice {
  const fromSetting = expandPythonSetting(setting, home, workspaceFolder);
  if (fromSetting) {
    if (fromSetting.includes('${workspaceFolder}')) {
      throw new Error('autocode.python uses ${workspaceFolder} but no folder is open: use an absolute path or open a folder.');
    }
    return { command: fromSetting, source: 'setting' };
  }
  if (extensionInterpreter && extensionInterpreter.trim()) return { command: extensionInterpreter.trim(), source: 'python-extension' };
  return { command: 'python3', source: 'default' };
}

export interface TcpAddress {
  host: string;
  port: number;
}

/** Parses the autocode.server.tcp setting; undefined when empty (start the server over stdio). */
export function parseTcpSetting(value: string): TcpAddress | undefined {
  const text = value.trim();
  if (!text) return undefined;
  const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port < 1 || port > 65535) {
    throw new Error(`autocode.server.tcp is "${text}": use HOST:PORT such as 127.0.0.1:8765, or leave it empty to start the server locally.`);
  }
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

/** The command a person runs to put AutoCode into that interpreter. */
export function installHint(python: string): string {
  const quoted = /[\s"'$]/.test(python) ? `"${python.replace(/"/g, '\\"')}"` : python;
  return `${quoted} -m pip install autocode-lsp`;
}
