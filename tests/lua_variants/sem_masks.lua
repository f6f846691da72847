-- sem_masks.lua — the Sparse Transformer's masks as outputs (true =
-- blocked), for semantics.py to compare with the paper's definitions.
local nn = require "nn"
local cfg = config{ t = 12, stride = 3, c = 2, heads = 4 }
local x = input{"x", {1}}
local function mask(pattern, part, causal)
  return nn.sparse_mask(cfg.t, {pattern = pattern, stride = cfg.stride, c = cfg.c, part = part,
                                causal = causal})
end
for _, pattern in ipairs({"strided", "fixed"}) do
  for _, part in ipairs({"both", "local", "summary"}) do
    output(mask(pattern, part), pattern .. "_" .. part)
  end
  output(mask(pattern, "both", false), pattern .. "_both_noncausal")
  output(nn.sparse_head_masks(cfg.t, cfg.heads, {pattern = pattern, stride = cfg.stride, c = cfg.c}),
         pattern .. "_heads")
end
output(x, "x")
