-- The questions a task asks. Every way to answer is offered — the proposed
-- default (taken as an accepted default, never remembered as the person's
-- convention), the question's choices, typing an answer, letting AutoCode
-- decide — and each answer is sent with how it was given (`how`).
--
-- A question never opens by itself: whatever mode the person is in, the keys
-- they type are theirs. It waits in a queue, is announced (a notification and
-- the statusline) and is asked only when they run :AutoCode answer or press a
-- key they mapped to <Plug>(AutoCodeAnswer).
local client = require('autocode.client')
local protocol = require('autocode.protocol')
local ui = require('autocode.ui')

local HOW = protocol.how
local M = {}

M.TYPE = 'Type an answer…'
M.DELEGATE = 'Let AutoCode decide'
M.DEFAULT_NOTE = 'accept the proposed default (not remembered)'

--- Questions waiting for :AutoCode answer: list of {task_id, question, client, workspace}.
M.pending = {}

--- The picker's entries for a question: labels and, per label, what it means.
--- The proposed default comes first, so Enter in the picker accepts it.
--- @return string[] labels, table[] meanings ({text?, how})
function M.items(question)
  local labels, meanings = {}, {}
  local default = question.default
  if type(default) ~= 'string' or default == '' then
    default = nil
  end
  if default then
    table.insert(labels, ('%s  (%s)'):format(default, M.DEFAULT_NOTE))
    table.insert(meanings, { text = default, how = HOW.accepted_default })
  end
  for _, choice in ipairs(type(question.choices) == 'table' and question.choices or {}) do
    choice = tostring(choice)
    if choice ~= default then
      table.insert(labels, choice)
      table.insert(meanings, { text = choice, how = HOW.chosen })
    end
  end
  table.insert(labels, M.TYPE)
  table.insert(meanings, { how = HOW.typed })
  table.insert(labels, M.DELEGATE)
  table.insert(meanings, { text = '', how = HOW.delegated })
  return labels, meanings
end

--- Asks one question (inside a coroutine): vim.ui.select with every way to
--- answer, then for "Type an answer…" vim.ui.input with an empty field (the
--- default is named in the prompt, not prefilled). Returns {text, how}, or nil
--- when the person dismissed it.
function M.prompt(question)
  local labels, meanings = M.items(question)
  local has_default = meanings[1].how == HOW.accepted_default
  local _, idx = ui.select(labels, question.text, { default = has_default and 1 or nil })
  local meaning = idx and meanings[idx]
  if not meaning then
    return nil
  end
  if meaning.how ~= HOW.typed then
    return { text = meaning.text, how = meaning.how }
  end
  local default = question.default
  local hint = (type(default) == 'string' and default ~= '') and (' (proposed: %s)'):format(default) or ''
  local typed = ui.input(question.text .. hint .. ': ')
  if typed == nil or vim.trim(typed) == '' then
    return nil
  end
  return { text = typed, how = HOW.typed }
end

local function same(a, b)
  return a.task_id == b.task_id and tostring(a.question.id) == tostring(b.question.id)
end

--- Brings a question the server raised to the person: queued and announced, never opened.
--- @param entry {task_id: string, question: table, client: vim.lsp.Client|nil, workspace: string|nil}
function M.offer(entry)
  for _, queued in ipairs(M.pending) do
    if same(queued, entry) then
      return
    end
  end
  table.insert(M.pending, entry)
  ui.notify(('task %s asks: %s (:AutoCode answer)'):format(entry.task_id, tostring(entry.question.text)))
end

--- Forgets queued questions of a task (answered elsewhere, cancelled, ended).
function M.drop(task_id)
  M.pending = vim.tbl_filter(function(e)
    return e.task_id ~= task_id
  end, M.pending)
end

--- Asks `entry`'s question and sends the answer (inside a coroutine). Returns the new snapshot, or nil.
function M.ask(entry)
  local reply = M.prompt(entry.question)
  if not reply then
    ui.warn(('question left open: %s (answer it later with :AutoCode answer)'):format(tostring(entry.question.text)))
    return nil
  end
  return M.send(entry, reply)
end

local function unknown_how(err)
  return client.kind(err) == protocol.kinds.invalid_arguments and tostring(err.message):find('how', 1, true) ~= nil
end

--- Sends an answer with its `how` (inside a coroutine). A server older than
--- answer kinds refuses the field: a typed or chosen answer is sent again
--- without it; an accepted default or a delegation is not, since that server
--- would record it as the person's own answer. Returns the snapshot, or nil.
function M.send(entry, reply)
  local args = {
    taskId = entry.task_id,
    questionId = entry.question.id,
    text = reply.text or '',
    how = reply.how,
  }
  if entry.workspace and entry.workspace ~= '' then
    args.workspace = entry.workspace
  end
  local err, result = client.await(protocol.commands.task_answer, args, entry.client)
  if err and unknown_how(err) then
    if reply.how == HOW.typed or reply.how == HOW.chosen then
      args.how = nil
      err, result = client.await(protocol.commands.task_answer, args, entry.client)
    else
      ui.error(
        ('answer not sent: this AutoCode server does not know answer kinds and would record "%s" as your own answer. '
          .. 'Type the answer instead, or update AutoCode. The question stays open.'):format(
          reply.how == HOW.delegated and M.DELEGATE or M.DEFAULT_NOTE
        )
      )
      return nil
    end
  end
  if err then
    ui.error('answer failed: ' .. client.describe(err))
    return nil
  end
  M.drop_question(entry)
  local tasks = require('autocode.tasks')
  local snap = tasks.unwrap(result)
  tasks.remember(snap, false, entry.client and entry.client.id)
  return snap
end

function M.drop_question(entry)
  M.pending = vim.tbl_filter(function(e)
    return not same(e, entry)
  end, M.pending)
end

return M
