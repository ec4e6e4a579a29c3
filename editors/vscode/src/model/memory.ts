// Memories as the Memory and Team Memory Promotion views show them.

import type * as P from '../generated/protocol';
import { isObject, stringField } from '../protocol';
import { MemoryOwner, MemoryScope } from './args';

export interface MemoryItem {
  id: string;
  content: string;
  category: string;
  owner: MemoryOwner;
  scope: MemoryScope;
  agent: string;
  score: number | undefined;
}

/** A memory as the server sends it (`MemoryView`, the wire's field names) in the views' terms. */
export function normaliseMemory(raw: P.MemoryView): MemoryItem {
  if (!raw.id) throw new Error('memory has no id');
  return {
    id: raw.id,
    content: raw.content,
    category: raw.category ?? '',
    owner: raw.shared ? 'team' : 'agent',
    scope: raw.scope === 'project' ? 'project' : 'global',
    agent: raw.owner ?? '',
    score: raw.score ?? undefined,
  };
}

/** Memories out of a list or search result (`memories` of `MemoryList` and `SearchResult`). */
export function memoriesFromResult(result: P.MemoryList | P.SearchResult): MemoryItem[] {
  return result.memories.map(normaliseMemory);
}

export interface MemoryGroup {
  id: string;
  owner: MemoryOwner;
  scope: MemoryScope;
  label: string;
  items: MemoryItem[];
}

/** Agent and team × project and global; project groups only when a folder gives a repository. */
export function groupMemories(items: MemoryItem[], hasRepository: boolean): MemoryGroup[] {
  const groups: MemoryGroup[] = [];
  for (const owner of ['agent', 'team'] as const) {
    for (const scope of ['project', 'global'] as const) {
      if (scope === 'project' && !hasRepository) continue;
      groups.push({
        id: `${owner}/${scope}`,
        owner,
        scope,
        label: `${owner === 'agent' ? 'Agent' : 'Team'} · ${scope === 'project' ? 'this project' : 'global'}`,
        items: items.filter((m) => m.owner === owner && m.scope === scope),
      });
    }
  }
  return groups;
}

export interface PromotionCandidate {
  /** The memory to promote (what applyPromotion takes). */
  id: string;
  skillName: string;
  content: string;
  agents: string[];
  reason: string;
  selected: boolean;
}

/** The candidates of a promotion plan (`PromotionPlan.candidates`), each ticked at first. */
export function promotionCandidates(plan: P.PromotionPlan): PromotionCandidate[] {
  return plan.candidates.map((c) => ({
    id: c.memoryId,
    skillName: c.name,
    content: c.content,
    reason: c.description,
    agents: [...c.agents],
    selected: true,
  }));
}

/** What an applyPromotion result (`PromotionApplied`: `{skills, removed}`) tells the person. */
export function promotionMessage(result: P.PromotionApplied): string {
  const removed = result.removed.length;
  const skills = [...new Set(result.skills.map((s) => s.name).filter(Boolean))];
  const what = `${removed} memor${removed === 1 ? 'y' : 'ies'}`;
  return `AutoCode: promoted ${what}${skills.length ? ` into the skill${skills.length === 1 ? '' : 's'} ${skills.join(', ')}` : ''}.`;
}

/** What a plan with nothing to promote tells the person (promotion turns team memories into skills). */
export const NOTHING_TO_PROMOTE = 'AutoCode: no team memories read as know-how to turn into skills yet.';

/** A refused save (server error kind `memoryRefused`): why, where it belongs, and a durable version. */
export interface Refusal {
  message: string;
  belongs: string | undefined;
  suggestion: string | undefined;
}

/** The description of a scope in the Add Memory pick: agent scopes say they need a name while none is set. */
export function scopeDescriptionFor(owner: string, agentName: string): string | undefined {
  return owner === 'agent' && !agentName.trim() ? 'needs an agent name (asked next)' : undefined;
}

/** The skills a promotion made, as a Markdown page: each skill's name, scope and text. */
export function skillsMarkdown(skills: unknown[]): string {
  const parts = skills.map((s) => {
    if (!isObject(s)) return `- ${String(s)}`;
    const name = stringField(s, 'name') ?? '(skill)';
    const owner = stringField(s, 'owner');
    const scope = [stringField(s, 'scope'), owner ? `agent ${owner}` : 'team'].filter(Boolean).join(', ');
    const description = stringField(s, 'description');
    const content = stringField(s, 'content');
    const body = [description, content !== description ? content : undefined].filter(Boolean).join('\n\n');
    return `## ${name}\n\n${scope ? `*${scope}*\n\n` : ''}${body}`;
  });
  return `# Skills made by promotion\n\n${parts.join('\n\n') || 'No skill was made.'}\n`;
}

/**
 * A refusal as one readable line for an input box's validation message: why, where it belongs
 * instead, and the durable version when there is one (the engine's message runs these together).
 */
export function inlineRefusal(refusal: Refusal): string {
  let why = refusal.message.replace(/^not saved:\s*/i, '');
  const durable = why.indexOf(' A durable version:');
  if (durable >= 0) why = why.slice(0, durable);
  if (refusal.belongs && why.endsWith(refusal.belongs)) why = why.slice(0, -refusal.belongs.length);
  why = why.trim().replace(/[.;,]$/, '');
  const belongs = refusal.belongs && !why.includes(refusal.belongs) ? ` It belongs in ${refusal.belongs.replace(/\.$/, '')}.` : '';
  const suggestion = refusal.suggestion ? ` Saveable instead (the lightbulb puts it in the box): “${refusal.suggestion}”` : '';
  return `Not saved: ${why}.${belongs}${suggestion}`;
}
