-- :AutoCode and its sub-commands, with completion.
local M = {}

local function tasks()
  return require('autocode.tasks')
end

local function memory()
  return require('autocode.memory')
end

local function rest(args)
  return table.concat(args, ' ')
end

--- name -> {run = fun(args: string[]), desc = string, complete = fun(arglead): string[]}
M.subcommands = {
  start = {
    desc = 'start a task (brief from the argument or a prompt)',
    run = function(args)
      tasks().start(rest(args))
    end,
  },
  answer = {
    desc = 'answer the open questions of a task',
    run = function(args)
      tasks().answer(args[1])
    end,
  },
  approve = {
    desc = 'approve the plan of a task',
    run = function(args)
      tasks().approve(args[1])
    end,
  },
  reject = {
    desc = 'reject the plan of a task, with feedback',
    run = function(args)
      local id = table.remove(args, 1)
      tasks().reject(id, #args > 0 and rest(args) or nil)
    end,
  },
  complete = {
    desc = 'apply the verified change of a task (same as apply)',
    run = function(args)
      tasks().complete(args[1])
    end,
  },
  apply = {
    desc = 'apply the verified change of a task to your files',
    run = function(args)
      tasks().complete(args[1])
    end,
  },
  review = {
    desc = 'open what a task waits for (plan, diff or conflicts) and go there',
    run = function(args)
      tasks().review(args[1])
    end,
  },
  hunks = {
    desc = 'review the result hunk by hunk against your buffers (keep or undo each, then apply)',
    run = function(args)
      require('autocode.review').open(args[1], true)
    end,
  },
  hunk = {
    desc = 'hunk keep|undo: keep or leave out the hunk under the cursor of the hunk review',
    run = function(args)
      require('autocode.review').hunk(args[1])
    end,
  },
  resolve = {
    desc = 'choose mine / theirs / markers for each conflicted file',
    run = function(args)
      tasks().resolve(args[1])
    end,
  },
  cancel = {
    desc = 'cancel a task',
    run = function(args)
      tasks().cancel(args[1])
    end,
  },
  resume = {
    desc = 'continue a task whose server stopped while it worked, or that failed on its endpoint or a budget',
    run = function(args)
      tasks().resume(args[1])
    end,
  },
  output = {
    desc = "open a task's whole test output (evidence/test-output.txt)",
    run = function(args)
      tasks().output(args[1])
    end,
  },
  retry = {
    desc = "run a failed task's tests again (after you fixed the cause)",
    run = function(args)
      tasks().retry(args[1])
    end,
  },
  transcript = {
    desc = 'open what the model did in a task, step by step (transcript.md)',
    run = function(args)
      tasks().transcript(args[1])
    end,
  },
  messages = {
    desc = 'show the recent messages too long for one line',
    run = function()
      local ui = require('autocode.ui')
      local lines = {}
      for _, m in ipairs(ui.long_messages) do
        vim.list_extend(lines, vim.split(m, '\n', { plain = true }))
        table.insert(lines, '')
      end
      ui.scratch('messages', #lines > 0 and lines or { '(no long messages)' }, 'markdown', {})
    end,
  },
  status = {
    desc = 'show a task',
    run = function(args)
      tasks().status(args[1])
    end,
  },
  tasks = {
    desc = "list the workspace's tasks",
    run = function()
      tasks().list()
    end,
  },
  doctor = {
    desc = 'settings origins, learned record, memory and environment',
    run = function()
      memory().doctor()
    end,
  },
  model = {
    desc = 'the model tasks use and where each setting came from (or: model check, one request to its endpoint)',
    run = function(args)
      if args[1] == 'check' then
        require('autocode.model').check()
      elseif args[1] == nil then
        require('autocode.model').show()
      else
        vim.notify(('AutoCode: :AutoCode model takes nothing or check (got %q)'):format(args[1]), vim.log.levels.ERROR)
      end
    end,
  },
  key = {
    desc = "type the model's key (not shown, kept in memory only) and give it to every running server",
    run = function(args)
      if #args > 0 then
        -- A key written on the command line is in the command history (and so the ShaDa file):
        -- take it out again, and ask for it at the prompt instead.
        if vim.fn.histget('cmd', -1):match('^[%s:]*AutoC%a*%s+key%s') then
          vim.fn.histdel('cmd', -1)
        end
        vim.notify('AutoCode: :AutoCode key takes no argument: run it alone and type the key at its prompt (not shown)', vim.log.levels.ERROR)
        return
      end
      require('autocode.model').prompt_key()
    end,
  },
  forget = {
    desc = "remove the workspace's learned record (asks first)",
    run = function()
      memory().forget()
    end,
  },
  trust = {
    desc = "show what the repository's settings ask for and trust it (or: trust revoke)",
    run = function(args)
      require('autocode.trust').run(args)
    end,
  },
  memory = {
    desc = 'memory search|save|delete|list',
    sub = {
      search = function(args)
        memory().search(args)
      end,
      save = function(args)
        memory().save(args)
      end,
      delete = function(args)
        memory().delete(args)
      end,
      list = function(args)
        memory().list(args)
      end,
    },
  },
  promote = {
    desc = 'plan and apply promotion of team memories to skills',
    run = function()
      memory().promote()
    end,
  },
}

local function task_ids(lead)
  local out = {}
  for id in pairs(tasks().snapshots) do
    if vim.startswith(id, lead) then
      table.insert(out, id)
    end
  end
  table.sort(out)
  return out
end

local function names(tbl, lead)
  local out = {}
  for k in pairs(tbl) do
    if vim.startswith(k, lead) then
      table.insert(out, k)
    end
  end
  table.sort(out)
  return out
end

local takes_task = {
  answer = true,
  approve = true,
  reject = true,
  complete = true,
  apply = true,
  review = true,
  hunks = true,
  resolve = true,
  cancel = true,
  resume = true,
  status = true,
  output = true,
  retry = true,
  transcript = true,
}
local memory_flags = {
  save = { '--scope=project', '--scope=global', '--shared', '--category=' },
  search = { '--scope=all', '--scope=project', '--scope=global', '--owner=all', '--owner=self', '--owner=team' },
  list = { '--scope=all', '--scope=project', '--scope=global', '--owner=all', '--owner=self', '--owner=team' },
}

--- Completion for :AutoCode.
function M.complete(arglead, cmdline, _)
  local words = vim.split(vim.trim(cmdline:gsub('^%s*%S+', '', 1)), '%s+', { trimempty = true })
  local n = #words
  if arglead == '' then
    n = n + 1
  end
  if n <= 1 then
    return names(M.subcommands, arglead)
  end
  local sub = words[1]
  if sub == 'memory' then
    if n == 2 then
      return names(M.subcommands.memory.sub, arglead)
    end
    return vim.tbl_filter(function(f)
      return vim.startswith(f, arglead)
    end, memory_flags[words[2]] or {})
  end
  if sub == 'hunk' and n == 2 then
    return names({ keep = true, undo = true }, arglead)
  end
  if sub == 'model' and n == 2 then
    return vim.startswith('check', arglead) and { 'check' } or {}
  end
  if sub == 'trust' and n == 2 then
    return vim.startswith('revoke', arglead) and { 'revoke' } or {}
  end
  if takes_task[sub] and n == 2 then
    return task_ids(arglead)
  end
  return {}
end

local function usage()
  local lines = { 'AutoCode: usage :AutoCode {sub-command}' }
  for _, name in ipairs(names(M.subcommands, '')) do
    table.insert(lines, ('  %-9s %s'):format(name, M.subcommands[name].desc))
  end
  return table.concat(lines, '\n')
end

--- Runs `:AutoCode <fargs>`.
function M.run(fargs)
  local args = vim.deepcopy(fargs)
  local name = table.remove(args, 1)
  local spec = name and M.subcommands[name]
  if not spec then
    local msg = name and ('AutoCode: unknown sub-command %q\n'):format(name) or ''
    vim.notify(msg .. usage(), name and vim.log.levels.ERROR or vim.log.levels.INFO)
    return
  end
  if spec.sub then
    local verb = table.remove(args, 1)
    local fn = verb and spec.sub[verb]
    if not fn then
      vim.notify(
        ('AutoCode: :AutoCode memory needs one of %s'):format(table.concat(names(spec.sub, ''), ', ')),
        vim.log.levels.ERROR
      )
      return
    end
    return fn(args)
  end
  return spec.run(args)
end

return M
