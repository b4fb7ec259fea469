-- Drives `devlint server` through Neovim's built-in LSP client, headless: open a file, edit
-- it, apply a quick fix and the fix-all source action, type half a line. Each step's outcome
-- goes to the JSON file $DEVLINT_OUT, which tests/test_server_neovim.py reads.
local file = os.getenv("DEVLINT_FILE")
local out = os.getenv("DEVLINT_OUT")
local python = os.getenv("DEVLINT_PYTHON")
local results = { steps = {} }

local function finish()
  local handle = assert(io.open(out, "w"))
  handle:write(vim.json.encode(results))
  handle:close()
  vim.cmd("qall!")
end

local function codes(buf)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(found, string.format("%s:%d:%d", d.code, d.lnum + 1, d.col + 1))
  end
  table.sort(found)
  return found
end

local function step(name, ok, value)
  table.insert(results.steps, { name = name, ok = ok, value = value })
  if not ok then
    results.failed = name
    finish()
  end
end

vim.cmd.edit(file)
local buf = vim.api.nvim_get_current_buf()
vim.bo[buf].filetype = "python"
local client_id = vim.lsp.start({
  name = "devlint",
  cmd = { python, "-m", "devlint.cli", "server" },
  root_dir = vim.fs.dirname(file),
})
step("started", client_id ~= nil, client_id)

-- Diagnostics arrive on open.
local published = 0
vim.api.nvim_create_autocmd("DiagnosticChanged", {
  buffer = buf,
  callback = function() published = published + 1 end,
})
local function wait_diagnostics(predicate)
  local ok = vim.wait(20000, function() return predicate(codes(buf)) end, 20)
  return ok, codes(buf)
end
local function has(list, wanted)
  for _, item in ipairs(list) do
    if item:match(wanted) then return true end
  end
  return false
end

step("open", wait_diagnostics(function(c) return has(c, "^DEV002") end))

-- An edit: a new bug appears as it is typed.
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { 'ckpt = torch.load("a.pt")' })
step("edit", wait_diagnostics(function(c) return has(c, "^DEV008") end))

-- The quick fix for DEV002 from the light bulb menu, on its line.
vim.api.nvim_win_set_cursor(0, { 2, 0 })
vim.lsp.buf.code_action({
  filter = function(action) return action.title:match("^Fix: Rename to `memory_reserved`") ~= nil end,
  apply = true,
})
local fixed = vim.wait(20000, function()
  return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "torch.cuda.memory_reserved()"
end, 20)
step("quick fix", fixed, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
step("quick fix diagnostics", wait_diagnostics(function(c) return not has(c, "^DEV002:2") end))

-- Fix all (what fix-on-save runs): the remaining safe fix, resolved lazily by the server.
vim.lsp.buf.code_action({ context = { only = { "source.fixAll.devlint" } }, apply = true })
local all_fixed = vim.wait(20000, function()
  return vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1] == "torch.cuda.max_memory_reserved()"
end, 20)
step("fix all", all_fixed, vim.api.nvim_buf_get_lines(buf, 0, -1, false))

-- A half-typed line: DEV000 where it stops, and the server stays up.
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "y = torch.zeros(2).cuda(" })
step("half-typed", wait_diagnostics(function(c) return has(c, "^DEV000") end))
vim.api.nvim_buf_set_lines(buf, -2, -1, false, { "y = torch.zeros(2).cuda()" })
step("completed", wait_diagnostics(function(c)
  return has(c, "^DEV001") and not has(c, "^DEV000")
end))
local client = vim.lsp.get_client_by_id(client_id)
step("alive", client ~= nil and not client:is_stopped(), published)

results.text = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
results.ok = true
finish()
