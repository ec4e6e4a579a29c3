// Memory actions that need a person's say before anything changes: a refused
// save shown inline in its input box, the text kept, with the durable version offered;
// agent scopes that need an agent name first; promotion that names what it
// will delete and shows the skills it made.

import * as vscode from 'vscode';
import { ServerCommandError } from './client';
import { inlineRefusal, Refusal, scopeDescriptionFor, skillsMarkdown } from './model/memory';
import { field, isObject, stringField } from './protocol';
import { showMarkdownPreview, VirtualDocuments } from './ui';

/** The refusal a save error carries (server error kind `memoryRefused`), or undefined. */
export function refusalOf(err: unknown): Refusal | undefined {
  if (!(err instanceof ServerCommandError) || err.kind !== 'memoryRefused') return undefined;
  const data = isObject(err.data) ? err.data : {};
  return { message: err.message, belongs: stringField(data, 'belongs'), suggestion: stringField(data, 'suggestion') };
}

/**
 * Asks for a memory's text and saves it from the input box itself: a refusal is shown inline, as
 * the box's validation message, with the typed text kept for the person to change (nothing
 * modal). When the server offers a durable version, the box's "Use the suggested text" button puts
 * it in the box to save with Enter. Resolves with the save's result, or undefined when the person
 * closed the box; any other error rejects.
 */
export function saveFromInputBox(options: { title: string; prompt: string; value?: string }, save: (text: string) => Promise<unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const box = vscode.window.createInputBox();
    box.title = options.title;
    box.prompt = options.prompt;
    box.value = options.value ?? '';
    box.ignoreFocusOut = true;
    let suggestion: string | undefined;
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
      box.dispose();
    };
    box.onDidChangeValue(() => {
      // The message belongs to the text that was refused; an edit starts over.
      if (box.validationMessage) box.validationMessage = undefined;
    });
    box.onDidTriggerButton(() => {
      if (suggestion) box.value = suggestion;
    });
    box.onDidAccept(async () => {
      const text = box.value;
      if (!text.trim()) {
        box.validationMessage = 'Type what should be remembered, or press Escape.';
        return;
      }
      box.busy = true;
      box.enabled = false;
      try {
        const result = await save(text);
        finish(() => resolve(result));
      } catch (err) {
        const refusal = refusalOf(err);
        if (!refusal) {
          finish(() => reject(err));
          return;
        }
        suggestion = refusal.suggestion;
        box.validationMessage = { message: inlineRefusal(refusal), severity: vscode.InputBoxValidationSeverity.Error };
        box.buttons = suggestion ? [{ iconPath: new vscode.ThemeIcon('lightbulb'), tooltip: 'Use the suggested text' }] : [];
        box.busy = false;
        box.enabled = true;
      }
    });
    box.onDidHide(() => finish(() => resolve(undefined)));
    box.show();
  });
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
export function showPromotionResult(result: unknown, text: string, docs: VirtualDocuments): void {
  const skills = Array.isArray(field(result, 'skills')) ? (field(result, 'skills') as unknown[]) : [];
  void vscode.window.showInformationMessage(text, ...(skills.length ? ['Show Skills'] : [])).then((choice) => {
    // A read-only document rendered as Markdown, not an unsaved Untitled file to discard.
    if (choice === 'Show Skills') void showMarkdownPreview(docs.set('/skills-made-by-promotion.md', skillsMarkdown(skills)));
  });
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
