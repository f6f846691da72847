-- sem_sparse_attention.lua — nn.sparse_attention with the two parts split
-- across heads, weights from a file (semantics.py: attention head by head
-- over the paper's sets).
local nn = require "nn"
local x = input{"x", {2, 9, 8}}
output(nn.sparse_attention("a", x, {heads = 2, pattern = "fixed", stride = 3, c = 1,
                                    combine = "heads"}), "y")
