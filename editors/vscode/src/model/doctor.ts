// Doctor's report as one readable HTML page: a table of settings with their
// values, origins and shadowed values, then the record's status and the
// learned conventions, then any other section as a key/value table.

import { arrayField, field, isObject, Json, JsonObject, stringField } from '../protocol';

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function show(value: Json | undefined): string {
  if (value === undefined || value === null) return '<span class="none">not set</span>';
  if (typeof value === 'string') return `<code>${escapeHtml(value)}</code>`;
  if (typeof value === 'number' || typeof value === 'boolean') return `<code>${value}</code>`;
  return `<code>${escapeHtml(JSON.stringify(value))}</code>`;
}

export interface SettingRow {
  name: string;
  value: Json | undefined;
  origin: string;
  source: string;
  shadowed: Array<{ value: Json | undefined; origin: string; source: string }>;
}

/** Settings rows from either `{name: {value, origin, ...}}` or `[{name, value, origin, ...}]`. */
export function settingRows(settings: unknown): SettingRow[] {
  const entries: Array<[string, Json]> = Array.isArray(settings)
    ? settings.map((s): [string, Json] => [stringField(s, 'name') ?? '?', s])
    : isObject(settings)
      ? Object.entries(settings)
      : [];
  return entries.map(([name, raw]) => ({
    name,
    value: isObject(raw) ? field(raw, 'value') : raw,
    origin: stringField(raw, 'origin') ?? '',
    source: stringField(raw, 'source') ?? '',
    shadowed: arrayField(raw, 'shadowed').map((s) => ({
      value: isObject(s) ? field(s, 'value') : s,
      origin: stringField(s, 'origin') ?? '',
      source: stringField(s, 'source') ?? '',
    })),
  }));
}

function settingsTable(rows: SettingRow[]): string {
  const body = rows
    .map((r) => {
      const shadowed = r.shadowed.length
        ? r.shadowed.map((s) => `${show(s.value)} <span class="origin">(${escapeHtml(s.origin)}${s.source ? `: ${escapeHtml(s.source)}` : ''})</span>`).join('<br>')
        : '';
      return `<tr><td>${escapeHtml(r.name)}</td><td>${show(r.value)}</td><td class="origin origin-${escapeHtml(r.origin)}">${escapeHtml(r.origin)}</td><td>${escapeHtml(r.source)}</td><td class="shadowed">${shadowed}</td></tr>`;
    })
    .join('\n');
  return `<table class="settings"><thead><tr><th>Setting</th><th>Value</th><th>Origin</th><th>Source</th><th>Shadowed values</th></tr></thead><tbody>\n${body}\n</tbody></table>`;
}

function conventionsTable(conventions: Json[]): string {
  if (!conventions.length) return '<p class="none">No learned conventions.</p>';
  const rows = conventions
    .map((c) => `<tr><td>${escapeHtml(stringField(c, 'question') ?? '')}</td><td>${escapeHtml(stringField(c, 'answer') ?? '')}</td></tr>`)
    .join('\n');
  return `<table class="conventions"><thead><tr><th>Question</th><th>Answer</th></tr></thead><tbody>\n${rows}\n</tbody></table>`;
}

/** A list of objects as one table with a column per key (routes, inputs, ...). */
function listTable(items: JsonObject[]): string {
  const keys = [...new Set(items.flatMap((i) => Object.keys(i)))];
  const rows = items.map((i) => `<tr>${keys.map((k) => `<td>${show(i[k])}</td>`).join('')}</tr>`).join('\n');
  return `<table class="nested"><thead><tr>${keys.map((k) => `<th>${escapeHtml(k)}</th>`).join('')}</tr></thead><tbody>\n${rows}\n</tbody></table>`;
}

function cell(v: Json | undefined): string {
  if (isObject(v)) return keyValueTable(v, 'nested');
  if (Array.isArray(v)) {
    if (!v.length) return '<span class="none">none</span>';
    if (v.every(isObject)) return listTable(v as JsonObject[]);
    return v.map((x) => show(x)).join(' ');
  }
  return show(v);
}

function keyValueTable(obj: JsonObject, cssClass: string): string {
  const rows = Object.entries(obj)
    .map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td>${cell(v)}</td></tr>`)
    .join('\n');
  return `<table class="${cssClass}"><tbody>\n${rows}\n</tbody></table>`;
}

/** The learned record's status (valid, missing, invalid, ...) and problems. */
function recordStatus(record: Json | undefined): string {
  if (!isObject(record)) return '<p class="none">No record information.</p>';
  const status = stringField(record, 'status') ?? 'unknown';
  const path = stringField(record, 'path');
  const problems = arrayField(record, 'problems').map((p) => `<li>${escapeHtml(typeof p === 'string' ? p : JSON.stringify(p))}</li>`);
  const ignored = !['valid', 'missing'].includes(status)
    ? '<p class="problem">The record is ignored until it is fixed; "AutoCode: Forget Project Memory" removes it.</p>'
    : '';
  return [
    `<p>Status: <strong class="record-status status-${escapeHtml(status)}">${escapeHtml(status)}</strong>${path ? ` — <code>${escapeHtml(path)}</code>` : ''}</p>`,
    problems.length ? `<ul class="problems">${problems.join('')}</ul>` : '',
    ignored,
  ].join('\n');
}

/** The facts the record holds besides its conventions. */
function recordFacts(record: Json | undefined): JsonObject {
  const data = field(record, 'data', 'record');
  const facts: JsonObject = {};
  if (isObject(data)) for (const [k, v] of Object.entries(data)) if (k !== 'conventions') facts[k] = v;
  return facts;
}

function heading(key: string): string {
  const named: Record<string, string> = { git: 'Git', gitignore: '.autocode/.gitignore', omitted: 'Omitted at the last learning' };
  return named[key] ?? key.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

/** The whole page body for an `autocode.doctor` result (`{report, text}`) or a bare report. */
export function renderDoctorBody(result: unknown, title: string): string {
  const report = isObject(result) && isObject(result.report) ? (result.report as JsonObject) : isObject(result) ? result : {};
  const parts = [`<h1>AutoCode Doctor</h1><p class="subtitle">${escapeHtml(title)}${stringField(report, 'workspace') ? ` — <code>${escapeHtml(stringField(report, 'workspace') as string)}</code>` : ''}</p>`];
  const record = field(report, 'record');
  parts.push('<h2 id="record">Project record</h2>', recordStatus(record));
  const conventions = field(report, 'conventions') ?? field(field(record, 'data', 'record'), 'conventions');
  parts.push('<h2 id="conventions">Learned conventions</h2>', conventionsTable(Array.isArray(conventions) ? conventions : []));
  parts.push('<h2 id="settings">Settings</h2>', settingsTable(settingRows(field(report, 'settings'))));
  const warnings = arrayField(report, 'warnings');
  if (warnings.length) parts.push('<h2>Warnings</h2>', `<ul class="warnings">${warnings.map((w) => `<li>${escapeHtml(typeof w === 'string' ? w : JSON.stringify(w))}</li>`).join('')}</ul>`);
  const facts = recordFacts(record);
  if (Object.keys(facts).length) parts.push('<h2>Record contents</h2>', keyValueTable(facts, 'record-facts'));
  for (const [key, value] of Object.entries(report)) {
    if (['settings', 'record', 'conventions', 'warnings', 'workspace', 'package'].includes(key)) continue;
    if (value === null || (Array.isArray(value) && !value.length)) continue;
    parts.push(`<h2>${escapeHtml(heading(key))}</h2>`, isObject(value) ? keyValueTable(value, 'section') : `<p>${cell(value)}</p>`);
  }
  return parts.join('\n');
}

export function renderDoctorHtml(report: unknown, title: string, cspSource: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline';">
<title>AutoCode Doctor</title>
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1.2em 2em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid var(--vscode-panel-border, #8884); padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: var(--vscode-editorWidget-background, #8881); }
code { font-family: var(--vscode-editor-font-family); }
.none, .subtitle { opacity: .7; }
.origin-learned { color: var(--vscode-charts-green, #3a3); font-weight: 600; }
.origin-flag, .origin-config, .origin-pyproject { color: var(--vscode-charts-blue, #36c); }
.shadowed { opacity: .75; }
.status-valid { color: var(--vscode-charts-green, #3a3); }
.status-invalid, .status-unsupported, .status-unavailable, .problem { color: var(--vscode-errorForeground, #c33); }
</style></head><body>
${renderDoctorBody(report, title)}
</body></html>`;
}
