// Memory actions that need a person's say before anything changes: a refused
// save shown whole, with the durable version offered ("Save this instead");
// agent scopes that need an agent name first; promotion that names what it
// will delete and shows the skills it made.

import * as vscode from 'vscode';
import { ServerCommandError } from './client';
import { Refusal, refusalPrompt, scopeDescriptionFor } from './model/memory';
import { field, isObject, stringField } from './protocol';

/** The refusal a save error carries (server error kind `memoryRefused`), or undefined. */
export function refusalOf(err: unknown): Refusal | undefined {
  if (!(err instanceof ServerCommandError) || err.kind !== 'memoryRefused') return undefined;
  const data = isObject(err.data) ? err.data : {};
  return { message: err.message, belongs: stringField(data, 'belongs'), suggestion: stringField(data, 'suggestion') };
}

/**
 * Runs `save(text)`; a refusal is shown whole as information (not a cut-off error) and, when the
 * server offers a durable version, "Save this instead" saves that. Returns the result that was kept.
 */
export async function saveOrOfferInstead(save: (text: string) => Promise<unknown>, text: string): Promise<unknown> {
  try {
    return await save(text);
  } catch (err) {
    const refusal = refusalOf(err);
    if (!refusal) throw err;
    const prompt = refusalPrompt(refusal);
    const choice = await vscode.window.showInformationMessage(prompt.title, { modal: true, detail: prompt.detail }, ...prompt.actions);
    if (choice === 'Save this instead' && refusal.suggestion) return save(refusal.suggestion);
    return undefined;
  }
}

/** The agent name for an agent scope: the setting, else asked once and stored; undefined when the person declines. */
export async function agentNameFor(owner: string): Promise<string | undefined | null> {
  if (owner !== 'agent') return null;
  const config = vscode.workspace.getConfiguration('autocode');
  const current = config.get<string>('memory.agent', '').trim();
  if (current) return current;
  const name = await vscode.window.showInputBox({
    title: 'AutoCode: Agent Name',
    prompt: 'Agent memories belong to one agent. Which agent? (kept in the autocode.memory.agent setting)',
    placeHolder: 'for example implementer',
    ignoreFocusOut: true,
    validateInput: (v) => (/^[A-Za-z0-9._-]{1,64}$/.test(v.trim()) ? undefined : 'Letters, digits, ".", "_" or "-" (at most 64).'),
  });
  if (!name?.trim()) return undefined;
  await config.update('memory.agent', name.trim(), vscode.ConfigurationTarget.Global);
  return name.trim();
}

/** Quick pick labels for the four scopes; agent ones say why they need a name while none is set. */
export function scopeDescription(owner: string): string | undefined {
  return scopeDescriptionFor(owner, vscode.workspace.getConfiguration('autocode').get<string>('memory.agent', ''));
}

/** Asks before a promotion: names the memories that will be deleted and the skills they become. */
export async function confirmPromotion(candidates: Array<{ id: string; skillName: string; content: string }>): Promise<boolean> {
  if (!candidates.length) return false;
  const lines = candidates.map((c) => `• ${c.skillName || '(skill)'} ← ${oneLine(c.content, 90)}`);
  const choice = await vscode.window.showWarningMessage(
    `Promote ${candidates.length} memor${candidates.length === 1 ? 'y' : 'ies'} into skills?`,
    { modal: true, detail: `These memories will be deleted and turned into the skills named:\n\n${lines.join('\n')}` },
    'Promote and Delete',
  );
  return choice === 'Promote and Delete';
}

/** After a promotion: what was made (`text`, from promotionMessage), with a way to see the skills. */
export function showPromotionResult(result: unknown, text: string): void {
  const skills = Array.isArray(field(result, 'skills')) ? (field(result, 'skills') as unknown[]) : [];
  void vscode.window.showInformationMessage(text, ...(skills.length ? ['Show Skills'] : [])).then((choice) => {
    if (choice === 'Show Skills') {
      const detail = skills.map((s) => (isObject(s) ? JSON.stringify(s, null, 2) : String(s))).join('\n\n');
      void vscode.workspace.openTextDocument({ content: `# Skills made by promotion\n\n${detail}\n`, language: 'markdown' }).then((d) => vscode.window.showTextDocument(d));
    }
  });
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
