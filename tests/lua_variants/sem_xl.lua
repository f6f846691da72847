-- sem_xl.lua — Transformer-XL's relative attention over [mem; x] and the
-- memory update, with weights from a file (semantics.py computes the
-- scores with explicit distances instead of rel_shift).
local nn = require "nn"
local x = input{"x", {2, 4, 8}}
local mem = input{"mem", {2, 3, 8}}
local long_mem = input{"long_mem", {2, 6, 8}}
output(nn.rel_multi_head_attention("att", x, mem, {heads = 2, d_head = 3}), "y")
output(nn.xl_memory(mem, x), "next_mem")
output(nn.xl_memory(long_mem, x), "next_long_mem")
