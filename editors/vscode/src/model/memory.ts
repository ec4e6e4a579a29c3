// Memories as the Memory and Team Memory Promotion views show them.

import { arrayField, field, isObject, JsonObject, stringField } from '../protocol';
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

export function normaliseMemory(raw: unknown): MemoryItem {
  if (!isObject(raw)) throw new Error('memory is not an object');
  const id = stringField(raw, 'id', 'memoryId', 'memory_id');
  if (!id) throw new Error('memory has no id');
  const shared = field(raw, 'shared', 'team');
  const ownerText = (stringField(raw, 'owner', 'ownerKind', 'owner_kind') ?? '').toLowerCase();
  const owner: MemoryOwner = shared === true || ownerText === 'team' ? 'team' : 'agent';
  const scopeText = (stringField(raw, 'scope') ?? '').toLowerCase();
  const repository = field(raw, 'repository', 'repositoryKey', 'repository_key');
  const scope: MemoryScope = scopeText === 'project' || scopeText === 'repository' || (!scopeText && typeof repository === 'string' && repository !== '') ? 'project' : 'global';
  const score = field(raw, 'score');
  return {
    id,
    content: stringField(raw, 'content', 'text', 'body') ?? '',
    category: stringField(raw, 'category', 'kind') ?? '',
    owner,
    scope,
    agent: stringField(raw, 'agent', 'agentName', 'agent_name') ?? '',
    score: typeof score === 'number' ? score : undefined,
  };
}

/** Memories out of a list or search result (`{memories: [...]}`, `{results: [...]}` or a bare list). */
export function memoriesFromResult(result: unknown): MemoryItem[] {
  const list = Array.isArray(result) ? result : arrayField(result, 'memories', 'results', 'items');
  return list.map((entry) => normaliseMemory(isObject(entry) && isObject(entry.memory) ? { ...entry.memory, score: entry.score ?? null } : entry));
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

/** The candidates of a promotion plan; the plan's own recommendation is the initial tick. */
export function promotionCandidates(plan: unknown): PromotionCandidate[] {
  return arrayField(plan, 'candidates', 'items', 'memories').map((raw, index) => {
    const inner: JsonObject = isObject(raw) && isObject(raw.memory) ? { ...raw.memory, ...raw } : isObject(raw) ? raw : { content: String(raw) };
    const recommended = field(inner, 'recommended', 'selected', 'promote');
    return {
      id: stringField(inner, 'memoryId', 'memory_id', 'id') ?? String(index),
      skillName: stringField(inner, 'name', 'skillName', 'skill_name') ?? '',
      content: stringField(inner, 'content', 'text') ?? '',
      reason: stringField(inner, 'description', 'reason') ?? '',
      agents: arrayField(inner, 'agents').map((a) => String(a)),
      selected: recommended === undefined ? true : recommended === true,
    };
  });
}

/** What an applyPromotion result (`{skills, removed}`) tells the person. */
export function promotionMessage(result: unknown): string {
  const removed = arrayField(result, 'removed', 'applied').length;
  const skills = [...new Set(arrayField(result, 'skills').map((s) => (isObject(s) ? stringField(s, 'name') ?? '' : String(s))).filter(Boolean))];
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
