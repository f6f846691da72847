--[[ nn_check.lua — argument checks shared by the bundled nn modules (nn.lua,
nn_variants.lua): each failure is one `fail` at the calling script's line,
"nn.FN: WHAT is ...; expected ...". Not part of the documented DSL. ]]

local C = {}

function C.is_tensor(x)
  return type(x) == "userdata"
end

function C.need_tensor(x, fn, what)
  if not C.is_tensor(x) then
    fail(string.format("nn.%s: %s is a %s; expected a tensor", fn, what, type(x)))
  end
end

function C.need_rank(x, rank, fn, what, example)
  C.need_tensor(x, fn, what)
  if x.rank ~= rank then
    fail(string.format("nn.%s: %s is rank %d; expected rank %d (%s)", fn, what, x.rank, rank,
                       example))
  end
end

function C.need_int(n, fn, what)
  if math.type(n) ~= "integer" or n < 1 then
    fail(string.format("nn.%s: %s is %s; expected a positive integer", fn, what, tostring(n)))
  end
end

-- The keys of a list, as a set.
local function set_of(keys)
  local set = {}
  for _, k in ipairs(keys) do set[k] = true end
  return set
end

--- C.options(opts, fn, keys [, table_name]): opts (nil: an empty table)
-- after checking that it is a table whose every key is in the list keys;
-- a key not in it fails "nn.FN: unknown option 'KEY'; expected one of a,
-- b, c" (the first unknown key in sorted order, so the message does not
-- depend on the table's order). table_name names a table other than the
-- options (a names table: "unknown names key 'KEY'"). Every nn function
-- with an options table checks it here: a misspelt or unsupported option
-- is an error, never silently ignored.
function C.options(opts, fn, keys, table_name)
  if opts == nil then
    return {}
  end
  if type(opts) ~= "table" then
    fail(string.format("nn.%s: %s is a %s; expected a table {%s = ...}", fn,
                       table_name or "the options argument", type(opts), keys[1]))
  end
  local known, unknown = set_of(keys), {}
  for k in pairs(opts) do
    if not known[k] then unknown[#unknown + 1] = tostring(k) end
  end
  if #unknown > 0 then
    table.sort(unknown)
    fail(string.format("nn.%s: unknown %s '%s'; expected one of %s", fn,
                       table_name and table_name .. " key" or "option", unknown[1],
                       table.concat(keys, ", ")))
  end
  return opts
end

--- C.pick(opts, keys): a copy of opts with only the keys in the list keys,
-- for a function that hands its options on to one that takes fewer.
function C.pick(opts, keys)
  local copy = {}
  for _, k in ipairs(keys) do copy[k] = opts[k] end
  return copy
end

return C
