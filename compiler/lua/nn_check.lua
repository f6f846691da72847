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

return C
