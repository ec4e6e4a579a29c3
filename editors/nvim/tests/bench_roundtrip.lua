-- Benchmark (driven by tests/bench/bench_nvim.py): the plugin's command call
-- against a bare client:request of the same executeCommand, and :AutoCode
-- doctor to its buffer, in one Neovim against one server. Prints JSON.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local client = require('autocode.client')
local N = tonumber(vim.env.AUTOCODE_BENCH_N or '60')
local c = assert(client.ensure())
H.client()
H.call('autocode.protocol.info')

local function bare()
  local done = false
  c:request('workspace/executeCommand', { command = 'autocode.protocol.info', arguments = { vim.empty_dict() } }, function()
    done = true
  end)
  vim.wait(10000, function()
    return done
  end, 1)
end

local function plugin()
  local done = false
  client.call('autocode.protocol.info', {}, function()
    done = true
  end, c)
  vim.wait(10000, function()
    return done
  end, 1)
end

-- Until the doctor buffer shows a new report (the buffer is reused, as `r` does).
local function doctor()
  local ui = require('autocode.ui')
  local buf = ui.find('doctor')
  if buf then
    ui.set_lines(buf, { 'old' })
  end
  vim.cmd('AutoCode doctor')
  vim.wait(30000, function()
    local b = ui.find('doctor')
    return b ~= nil and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] ~= 'old'
  end, 1)
end

local function raw_doctor()
  local done = false
  c:request('workspace/executeCommand', { command = 'autocode.doctor', arguments = { { workspace = vim.fn.getcwd() } } }, function()
    done = true
  end)
  vim.wait(30000, function()
    return done
  end, 1)
end

local samples = { bare = {}, plugin = {}, doctor = {}, raw_doctor = {} }
local fns = { bare = bare, plugin = plugin, doctor = doctor, raw_doctor = raw_doctor }
for i = 1, N do
  for _, name in ipairs({ 'bare', 'plugin', 'raw_doctor', 'doctor' }) do
    if i <= 3 or name == 'bare' or name == 'plugin' or i % 4 == 0 then
      local t0 = vim.uv.hrtime()
      fns[name]()
      table.insert(samples[name], (vim.uv.hrtime() - t0) / 1e6)
    end
  end
end
io.stdout:write('BENCH ' .. vim.json.encode(samples) .. '\n')
H.done()
