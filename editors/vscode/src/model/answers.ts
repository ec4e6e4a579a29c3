// Every way to answer a task's question, and how each answer says it was
// given. No editor API here, so it is unit-tested under node.
//
// Only a typed or chosen answer is the person's own (the server may learn it);
// taking the proposed default and letting AutoCode decide are recorded as such
// and never learned.

import type { TaskAnswerArgs } from '../generated/protocol';
import { Question } from './tasks';

export type How = 'typed' | 'chosen' | 'acceptedDefault' | 'delegated';

export interface Reply {
  text: string;
  how: How;
}

export const TYPE_LABEL = 'Type an answer…';
export const DELEGATE_LABEL = 'Let AutoCode decide';
export const DEFAULT_NOTE = 'accept the proposed default (not remembered)';

export interface AnswerItem {
  label: string;
  description?: string;
  detail?: string;
  /** What picking the item answers; undefined for "Type an answer…" (asks for the text next). */
  reply?: Reply;
}

/** The picker's items: the proposed default first (so Enter takes it, as an accepted default), the other choices, typing, delegating. */
export function answerItems(question: Question): AnswerItem[] {
  const items: AnswerItem[] = [];
  const def = question.defaultAnswer?.trim() ? question.defaultAnswer : undefined;
  if (def !== undefined) items.push({ label: def, description: DEFAULT_NOTE, reply: { text: def, how: 'acceptedDefault' } });
  for (const choice of question.choices) {
    if (choice !== def) items.push({ label: choice, description: 'choose this answer', reply: { text: choice, how: 'chosen' } });
  }
  items.push({ label: `$(edit) ${TYPE_LABEL}`, description: question.convention ? 'your own answer (may be remembered as a convention)' : 'your own answer' });
  items.push({ label: `$(sparkle) ${DELEGATE_LABEL}`, description: 'AutoCode decides (not remembered)', reply: { text: '', how: 'delegated' } });
  return items;
}

/** What typing into the picker's filter and pressing Enter answers: the typed text, unless it names an item. */
export function typedReply(value: string, items: AnswerItem[]): Reply | undefined {
  const text = value.trim();
  if (!text || items.some((i) => i.label === text)) return undefined;
  return { text, how: 'typed' };
}

/** autocode.task.answer's argument; `how` is left out for a server that does not know it. */
export function answerWithHowArgs(taskId: string, questionId: string, reply: Reply, workspace: string | undefined, withHow = true): TaskAnswerArgs {
  if ((reply.how === 'typed' || reply.how === 'chosen') && !reply.text.trim()) {
    throw new Error('An empty answer was not sent: type an answer or press Escape to answer later.');
  }
  const args: TaskAnswerArgs = { taskId, questionId, text: reply.text };
  if (withHow) args.how = reply.how;
  if (workspace) args.workspace = workspace;
  return args;
}

/** True for the error an older server gives for the unknown `how` field. */
export function isUnknownHow(kind: string | undefined, message: string): boolean {
  return (kind === 'invalidArguments' || kind === undefined) && /unknown field\(s\): .*\bhow\b/.test(message);
}
