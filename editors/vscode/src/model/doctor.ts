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
    .map((c) => `<tr><td>${escapeHtml(stringField(c, 'question', 'id') ?? '')}</td><td>${escapeHtml(stringField(c, 'answer', 'value') ?? '')}</td><td>${escapeHtml(stringField(c, 'source', 'answered_by', 'answeredBy') ?? '')}</td></tr>`)
    .join('\n');
  return `<table class="conventions"><thead><tr><th>Question</th><th>Answer</th><th>Source</th></tr></thead><tbody>\n${rows}\n</tbody></table>`;
}

function keyValueTable(obj: JsonObject, cssClass: string): string {
  const rows = Object.entries(obj)
    .map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td>${isObject(v) ? keyValueTable(v, 'nested') : show(v)}</td></tr>`)
    .join('\n');
  return `<table class="${cssClass}"><tbody>\n${rows}\n</tbody></table>`;
}

function recordSection(record: Json | undefined): string {
  if (!isObject(record)) return '<p class="none">No record information.</p>';
  const status = stringField(record, 'status') ?? 'unknown';
  const problems = arrayField(record, 'problems').map((p) => `<li>${escapeHtml(typeof p === 'string' ? p : JSON.stringify(p))}</li>`);
  const inner = isObject(record.record) ? (record.record as JsonObject) : record;
  const conventions = arrayField(inner, 'conventions');
  const rest: JsonObject = {};
  for (const [k, v] of Object.entries(inner)) if (!['status', 'problems', 'conventions', 'record'].includes(k)) rest[k] = v;
  return [
    `<p>Status: <strong class="record-status status-${escapeHtml(status)}">${escapeHtml(status)}</strong>${stringField(record, 'path') ? ` — <code>${escapeHtml(stringField(record, 'path') as string)}</code>` : ''}</p>`,
    problems.length ? `<ul class="problems">${problems.join('')}</ul>` : '',
    '<h3>Learned conventions</h3>',
    conventionsTable(conventions),
    Object.keys(rest).length ? keyValueTable(rest, 'record-facts') : '',
  ].join('\n');
}

/** The whole page body for a doctor result. */
export function renderDoctorBody(report: unknown, title: string): string {
  const obj: JsonObject = isObject(report) ? report : {};
  const parts = [`<h1>AutoCode Doctor</h1><p class="subtitle">${escapeHtml(title)}</p>`];
  parts.push('<h2>Settings</h2>', settingsTable(settingRows(field(obj, 'settings'))));
  parts.push('<h2>Project record</h2>', recordSection(field(obj, 'record')));
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'settings' || key === 'record') continue;
    const heading = key.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
    parts.push(`<h2>${escapeHtml(heading)}</h2>`, isObject(value) ? keyValueTable(value, 'section') : Array.isArray(value) ? `<ul>${value.map((v) => `<li>${show(v)}</li>`).join('')}</ul>` : `<p>${show(value)}</p>`);
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
.status-invalid, .status-unsupported, .status-unavailable { color: var(--vscode-errorForeground, #c33); }
</style></head><body>
${renderDoctorBody(report, title)}
</body></html>`;
}
