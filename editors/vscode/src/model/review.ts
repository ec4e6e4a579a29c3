// What the review of a task's change needs from its snapshot: the conflicted
// files and their hunks, whether HEAD moved, what an apply wrote, and the
// three ways to settle a conflicted file. No editor API here (unit-tested).

import type { Conflict, TaskSnapshot } from '../generated/protocol';

export type Resolution = 'mine' | 'theirs' | 'markers';

export type ConflictView = Conflict;

/** The conflicted files of a task waiting for the person's choice (else none). */
export function conflictsOf({ needs }: TaskSnapshot): ConflictView[] {
  return needs.kind === 'resolve_conflicts' ? needs.conflicts : [];
}

/** "HEAD moved from abc1234 to def5678 while the task ran", or undefined. */
export function headMovedText({ needs }: TaskSnapshot): string | undefined {
  const moved = 'headMoved' in needs ? needs.headMoved : null;
  if (!moved) return undefined;
  const short = (v: string | null): string => (v ? v.slice(0, 8) : 'none');
  return `HEAD moved from ${short(moved.from)} to ${short(moved.to)} while the task ran; the change is merged onto your work as it is now.`;
}

/**
 * The notice of a task that waits for the person to save: what it waits for first, then why (the
 * change went into editors that held unsaved edits, which stay) and what happens on the save.
 */
export function waitingForSaveText(brief: string, paths: string[], marked: string[] = []): string {
  const files = paths.length ? paths.join(', ') : 'the changed files';
  return `AutoCode: “${brief}” is waiting for you to save ${files}. The change is merged into your open `
    + `editor${paths.length === 1 ? '' : 's'} with your own unsaved edits kept; the task completes once `
    + `${paths.length === 1 ? 'it is' : 'they are'} saved.`
    + (marked.length ? ` ${marked.join(', ')} ${marked.length === 1 ? 'holds' : 'hold'} conflict markers: resolve them before or after you save.` : '');
}

/** Of the files a task waits to have saved, those that were given conflict markers. */
export function markedFiles({ needs }: TaskSnapshot): string[] {
  return needs.kind === 'save_files' ? needs.paths.filter((p) => needs.apply.choices[p] === 'markers') : [];
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

/** The files an apply wrote (result.apply.written), or undefined when the task has not applied. */
export function writtenFiles({ result }: TaskSnapshot): string[] | undefined {
  return result?.apply?.written;
}
