// Questions a task asks, in VS Code. A question the server raises never opens
// a prompt by itself (the keys the person is typing would land in it): it is
// announced, and the QuickPick opens when they choose Answer. The QuickPick
// offers every way to answer; each answer is sent with how it was given.

import * as vscode from 'vscode';
import { ServerCommandError } from './client';
import type { Context } from './commands';
import { AnswerItem, answerItems, answerWithHowArgs, DEFAULT_NOTE, DELEGATE_LABEL, isUnknownHow, Reply, typedReply } from './model/answers';
import { Question, TaskStore, TaskView } from './model/tasks';
import { noticeWhile } from './notices';
import { Commands } from './protocol';

type PickItem = vscode.QuickPickItem & { item: AnswerItem };

/** The QuickPick, then (for "Type an answer…") an empty InputBox. Undefined when dismissed. */
export async function pickAnswer(question: Question, brief: string): Promise<Reply | undefined> {
  const items = answerItems(question);
  const base: PickItem[] = items.map((item) => ({ label: item.label, description: item.description, item }));
  const picked = await new Promise<Reply | 'type' | undefined>((resolve) => {
    const pick = vscode.window.createQuickPick<PickItem>();
    pick.title = `AutoCode: ${question.text}`;
    pick.placeholder = `${brief}: pick how to answer, or type your own answer and press Enter`;
    pick.ignoreFocusOut = true;
    pick.matchOnDescription = false;
    pick.items = base;
    pick.onDidChangeValue((value) => {
      const typed = typedReply(value, items);
      pick.items = typed ? [{ label: typed.text, description: 'your answer', alwaysShow: true, item: { label: typed.text, reply: typed } }, ...base] : base;
    });
    let answered = false;
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0] ?? pick.activeItems[0];
      if (!chosen) return;
      answered = true;
      resolve(chosen.item.reply ?? 'type');
      pick.hide();
    });
    pick.onDidHide(() => {
      if (!answered) resolve(undefined);
      pick.dispose();
    });
    pick.show();
  });
  if (picked !== 'type') return picked;
  const text = await vscode.window.showInputBox({
    title: `AutoCode: ${question.text}`,
    prompt: question.defaultAnswer ? `Your own answer (proposed: ${question.defaultAnswer})` : 'Your own answer',
    placeHolder: question.defaultAnswer ? `proposed: ${question.defaultAnswer}` : 'Your answer',
    value: '',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'Type an answer, or press Escape to answer later.'),
  });
  return text?.trim() ? { text: text.trim(), how: 'typed' } : undefined;
}

/**
 * Sends an answer with its `how`. A server older than answer kinds refuses the
 * field: a typed or chosen answer goes again without it; an accepted default
 * or a delegation does not, since that server would record it as the person's own.
 */
export async function sendAnswer(ctx: Context, task: TaskView, question: Question, reply: Reply): Promise<unknown> {
  const workspace = task.workspace || undefined;
  ctx.output.info(`task ${task.id}: answering ${question.id} (how: ${reply.how})`);
  try {
    return await ctx.server.execute(Commands.taskAnswer, answerWithHowArgs(task.id, question.id, reply, workspace));
  } catch (err) {
    if (!(err instanceof ServerCommandError) || !isUnknownHow(err.kind, err.message)) throw err;
    if (reply.how === 'typed' || reply.how === 'chosen') {
      ctx.output.info(`task ${task.id}: the server does not know answer kinds; sending the ${reply.how} answer without it`);
      return ctx.server.execute(Commands.taskAnswer, answerWithHowArgs(task.id, question.id, reply, workspace, false));
    }
    const what = reply.how === 'delegated' ? `“${DELEGATE_LABEL}”` : `the proposed default (${DEFAULT_NOTE})`;
    throw new Error(`this AutoCode server does not know answer kinds and would record ${what} as your own answer. Type the answer instead, or update AutoCode. The question stays open.`);
  }
}

const announced = new Set<string>();

/**
 * Tells the person a question waits (once per question), with an Answer link that opens the
 * QuickPick; the notice closes once the question is no longer open, wherever it was answered.
 */
export function announceQuestion(store: TaskStore, task: { id: string; brief: string }, question: Question): void {
  const key = `${task.id}:${question.id}`;
  if (announced.has(key)) return;
  announced.add(key);
  noticeWhile(store, task.id, (t) => t.questions.some((q) => q.id === question.id), `AutoCode: “${task.brief}” asks: ${question.text}`,
    [{ label: 'Answer', command: 'autocode.answerQuestion', arg: { taskId: task.id, questionId: question.id } }]);
}
