// The per-hunk review, free of the editor API (unit-tested): the result of Apply for one file
// given the hunks the person undid, the ids to send as `keep`, and a row per hunk for the
// picker. The hunks come from autocode.task.preview: between the person's text now (unsaved
// edits included) and git's three-way merge.

import type { FilePreview, PreviewHunk, TaskPreview } from '../generated/protocol';

/** Lines with their endings, as the server counts them (split after each LF). */
export function splitLines(text: string | null): string[] {
  if (!text) return [];
  const parts = text.split('\n');
  const lines = parts.slice(0, -1).map((l) => `${l}\n`);
  const last = parts[parts.length - 1];
  return last ? [...lines, last] : lines;
}

/** What Apply writes for `file` when the hunks in `undone` are left out: the person's text with the kept hunks in. */
export function resultText(file: FilePreview, undone: ReadonlySet<string>): string {
  if (!file.hunks.some((h) => undone.has(h.id))) return file.merged ?? '';
  const mine = splitLines(file.mine);
  const merged = splitLines(file.merged);
  const out: string[] = [];
  let at = 0;
  for (const h of file.hunks) {
    const start = h.mineStart - 1;
    out.push(...mine.slice(at, start));
    if (undone.has(h.id)) out.push(...mine.slice(start, start + h.mineLines));
    else out.push(...merged.slice(h.mergedStart - 1, h.mergedStart - 1 + h.mergedLines));
    at = start + h.mineLines;
  }
  out.push(...mine.slice(at));
  return out.join('');
}

/** The ids to send as `keep` (undefined when nothing was undone: the whole change). */
export function keepIds(preview: TaskPreview, undone: ReadonlySet<string>): string[] | undefined {
  const all = preview.files.flatMap((f) => f.hunks.map((h) => h.id));
  if (!all.some((id) => undone.has(id))) return undefined;
  return all.filter((id) => !undone.has(id));
}

/** The hunk of `file` whose result lines (1-based, in `resultText`) hold `line`, if any. */
export function hunkAtResultLine(file: FilePreview, undone: ReadonlySet<string>, line: number): PreviewHunk | undefined {
  let shift = 0;
  for (const h of file.hunks) {
    const length = undone.has(h.id) ? h.mineLines : h.mergedLines;
    const start = h.mineStart + shift;
    if (line >= start && line < start + Math.max(length, 1)) return h;
    shift += length - h.mineLines;
  }
  return undefined;
}

/** One picker row for a hunk: where it is and what it does, overlaps and conflicts said first. */
export function hunkLabel(file: FilePreview, h: PreviewHunk): { label: string; detail: string } {
  const mark = h.conflict ? '$(warning) conflict: ' : h.overlaps ? '$(warning) overlaps your edits: ' : '';
  const where = h.mineLines ? `lines ${h.mineStart}–${h.mineStart + h.mineLines - 1}` : `after line ${h.mineStart - 1}`;
  const first = splitLines(file.merged).slice(h.mergedStart - 1, h.mergedStart - 1 + h.mergedLines).find((l) => l.trim()) ?? '';
  return {
    label: `${mark}${file.path}: ${where} (+${h.mergedLines} −${h.mineLines})`,
    detail: first.trim() ? first.trim().slice(0, 100) : h.mergedLines ? '(blank lines)' : '(removes lines)',
  };
}
