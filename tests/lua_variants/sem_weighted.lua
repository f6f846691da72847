-- sem_weighted.lua — nn.weighted_attention with weights from a file
-- (semantics.py writes them and computes the paper's formula branch by
-- branch).
local nn = require "nn"
local x = input{"x", {2, 5, 8}}
output(nn.weighted_attention("wa", x, {branches = 2, d_ff = 6}), "y")
