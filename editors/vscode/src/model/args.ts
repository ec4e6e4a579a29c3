// The one object each server command takes, shaped from what the person chose
// in the editor. Every command gets the workspace folder it acts on (the
// server falls back to its first folder otherwise, which is wrong in a
// multi-root window).

import type * as P from '../generated/protocol';

export interface Folder {
  name: string;
  path: string;
}

function withWorkspace<T extends object>(args: T, workspace: string | undefined): T & P.WorkspaceArgs {
  return workspace ? { workspace, ...args } : args;
}

/** Which folder a command acts on: the only one, else the active editor's, else undefined (ask). */
export function folderForCommand(folders: Folder[], activeFilePath: string | undefined): Folder | undefined {
  if (folders.length === 1) return folders[0];
  if (activeFilePath) {
    const owning = folders
      .filter((f) => activeFilePath === f.path || activeFilePath.startsWith(f.path.endsWith('/') ? f.path : `${f.path}/`))
      .sort((a, b) => b.path.length - a.path.length);
    if (owning.length) return owning[0];
  }
  return undefined;
}

export function startTaskArgs(brief: string, workspace: string): P.TaskStartArgs {
  const text = brief.trim();
  if (!text) throw new Error('A task needs a brief: describe what AutoCode should do.');
  return withWorkspace({ brief: text }, workspace);
}

export function taskArgs(taskId: string, workspace: string | undefined): P.TaskRefArgs {
  return withWorkspace({ taskId }, workspace);
}

export function answerArgs(taskId: string, questionId: string, answer: string, workspace: string | undefined): P.TaskAnswerArgs {
  if (!answer.trim()) throw new Error('An empty answer was not sent: type an answer or press Escape to answer later.');
  return withWorkspace({ taskId, questionId, text: answer }, workspace);
}

export function approvePlanArgs(taskId: string, revision: number | undefined, workspace: string | undefined): P.TaskApprovePlanArgs {
  if (revision === undefined) throw new Error('The snapshot names no plan revision to approve: run "AutoCode: Refresh Tasks" and review the plan again.');
  return withWorkspace({ taskId, revision }, workspace);
}

export function rejectPlanArgs(taskId: string, feedback: string, workspace: string | undefined): P.TaskRejectPlanArgs {
  if (!feedback.trim()) throw new Error('Say what should change in the plan; nothing was sent.');
  return withWorkspace({ taskId, feedback: feedback.trim() }, workspace);
}

export function forgetArgs(workspace: string): P.ForgetArgs {
  return { workspace, confirm: true };
}

/** Records the person's trust in exactly the values whose `digest` they were shown. */
export function trustArgs(workspace: string, digest: string): P.TrustArgs {
  return { workspace, confirm: true, digest };
}

export function doctorArgs(workspace: string | undefined): P.WorkspaceArgs {
  return withWorkspace({}, workspace);
}

export type MemoryOwner = 'agent' | 'team';
export type MemoryScope = 'project' | 'global';

export interface MemoryTarget {
  owner: MemoryOwner;
  scope: MemoryScope;
}

export function memoryContextArgs(agent: string, workspace: string | undefined): { agent?: string; workspace?: string | null } {
  const args: { agent?: string } = {};
  if (agent.trim()) args.agent = agent.trim();
  return withWorkspace(args, workspace);
}

export function memorySaveArgs(content: string, target: MemoryTarget, category: string | undefined, agent: string, workspace: string | undefined): P.MemorySaveArgs {
  const text = content.trim();
  if (!text) throw new Error('A memory needs some text; nothing was saved.');
  if (target.scope === 'project' && !workspace) {
    throw new Error('Project memories need an open folder: open the repository, or save this memory as global.');
  }
  const args: P.MemorySaveArgs = { ...memoryContextArgs(agent, target.scope === 'project' ? workspace : undefined), content: text, scope: target.scope, shared: target.owner === 'team' };
  if (category && category.trim()) args.category = category.trim();
  return args;
}

export function memorySearchArgs(query: string, agent: string, workspace: string | undefined, limit = 50): P.MemorySearchArgs {
  if (!query.trim()) throw new Error('Type something to search for.');
  return { ...memoryContextArgs(agent, workspace), query: query.trim(), scope: 'all', owner: 'all', limit };
}

export function memoryDeleteArgs(id: string, agent: string, workspace: string | undefined): P.MemoryDeleteArgs {
  return { ...memoryContextArgs(agent, workspace), id };
}

export function planPromotionArgs(workspace: string | undefined): P.MemoryPlanPromotionArgs {
  return withWorkspace({}, workspace);
}

export function applyPromotionArgs(ids: string[], workspace: string | undefined): P.MemoryApplyPromotionArgs {
  if (!ids.length) throw new Error('Tick at least one candidate to promote; nothing was applied.');
  return withWorkspace({ ids }, workspace);
}
