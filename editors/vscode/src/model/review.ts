// What the review of a task's change needs from its snapshot: the conflicted
// files and their hunks, whether HEAD moved, what an apply wrote, and the
// three ways to settle a conflicted file. No editor API here (unit-tested).

import { arrayField, field, isObject, numberField, stringField } from '../protocol';

export type Resolution = 'mine' | 'theirs' | 'markers';

export interface ConflictView {
  path: string;
  reason: string;
  hunks: Array<{ mineStart: number; mineLines: number; theirsStart: number; theirsLines: number }>;
}

export function conflictsOf(snapshot: unknown): ConflictView[] {
  return arrayField(field(snapshot, 'needs'), 'conflicts').flatMap((c) => {
    const path = stringField(c, 'path');
    if (!path) return [];
    const hunks = arrayField(c, 'hunks').map((h) => ({
      mineStart: numberField(h, 'mineStart') ?? 0,
      mineLines: numberField(h, 'mineLines') ?? 0,
      theirsStart: numberField(h, 'theirsStart') ?? 0,
      theirsLines: numberField(h, 'theirsLines') ?? 0,
    }));
    return [{ path, reason: stringField(c, 'reason') ?? 'overlap', hunks }];
  });
}

/** "HEAD moved from abc1234 to def5678 while the task ran", or undefined. */
export function headMovedText(snapshot: unknown): string | undefined {
  const moved = field(field(snapshot, 'needs'), 'headMoved');
  if (!isObject(moved)) return undefined;
  const short = (v: string | undefined): string => (v ? v.slice(0, 8) : 'none');
  return `HEAD moved from ${short(stringField(moved, 'from'))} to ${short(stringField(moved, 'to'))} while the task ran; the change is merged onto your work as it is now.`;
}

const REASONS: Record<string, string> = {
  overlap: 'you and the task changed the same lines',
  deletedInWorkspace: 'you deleted the file; the task changed it',
  deletedByTask: 'the task deleted the file; you changed it',
  renamed: 'the file was renamed',
};

export function reasonText(reason: string): string {
  return REASONS[reason] ?? reason;
}

export interface ResolutionItem {
  label: string;
  description: string;
  resolution: Resolution;
}

export function resolutionItems(conflict: ConflictView): ResolutionItem[] {
  const lines = conflict.hunks.map((h) => `yours ${h.mineStart}+${h.mineLines} / task ${h.theirsStart}+${h.theirsLines}`).join(', ');
  return [
    { label: '$(person) Keep mine', description: `your version of ${conflict.path} as it is now${lines ? ` (${lines})` : ''}`, resolution: 'mine' },
    { label: '$(sparkle) Take theirs', description: "the task's version", resolution: 'theirs' },
    { label: '$(git-merge) Write conflict markers', description: 'both versions, to resolve in the editor', resolution: 'markers' },
  ];
}

/** The files an apply wrote (result.apply.written), or undefined when the snapshot does not say. */
export function writtenFiles(snapshot: unknown): string[] | undefined {
  const apply = field(field(snapshot, 'result'), 'apply');
  const written = field(apply, 'written');
  return Array.isArray(written) ? written.map(String) : undefined;
}
