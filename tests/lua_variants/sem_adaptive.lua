-- sem_adaptive.lua — adaptive input embeddings with weights from a file
-- (semantics.py looks every token up in its cluster by hand).
local nn = require "nn"
local ids = input{"ids", {2, 5}, "i64"}
output(nn.adaptive_embedding("emb", ids, {vocab = 10, d_embed = 8, d_proj = 6, cutoffs = {3, 6},
                                          div_val = 2}), "y")
