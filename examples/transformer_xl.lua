--[[ transformer_xl.lua — Transformer-XL (Dai, Yang, Yang, Carbonell, Le &
Salakhutdinov, "Transformer-XL: Attentive Language Models Beyond a
Fixed-Length Context", 2019), read one segment per call, with adaptive input
embeddings (Baevski & Auli, "Adaptive Input Representations for Neural
Language Modeling", 2019).

  ids [batch, seg] ──adaptive embedding──> N XL layers ──> linear ──> logits [batch, seg, vocab]
                                              ▲   │
                    state mems.N [batch, mem, d]  └── last `mem` hidden states ──> mems.N (next call)

- Segment-level recurrence: each layer attends over [memory; segment],
  where its memory holds the hidden states that entered the same layer
  during the previous segment(s). The memory is *state*: the generated C
  keeps it in a caller-owned struct (transformer_xl_state) that each call
  reads and then overwrites with the newest `mem` positions
  (state{} / state_update(), nn.xl_memory). An app calls the model on
  segment after segment and the context reaches back N·mem positions.
- Relative positions: the score of query i and key j is
        (q_i + u)·k_j  +  (q_i + v)·W_r·R_{i-j}
  (content, and position through the sinusoid R of the distance i-j), with
  learned biases u (r_w_bias) and v (r_r_bias) in place of the absolute
  positions that could not be reused across segments;
  nn.rel_multi_head_attention computes the position term for all
  distances at once and aligns it with nn.rel_shift (the paper's
  pad-and-reshape trick). The mask is causal over the segment; the memory
  is visible to every query.
- A cold start has no memory. With mask_empty_memory (default) a small
  i64 state `mem_filled` counts the memory slots that hold real states and
  the others are masked, so the first segment computes exactly what the
  reference code computes with empty memory; without it, the first segment
  also attends to the zeros the memory starts as.
- Adaptive input: token ids below cutoff1 (the most frequent) get d-wide
  embeddings, ids in [cutoff1, cutoff2) d/div_val, the rest d/div_val², each
  projected to d and scaled by √d (nn.adaptive_embedding).
- Layers are post-norm as in the reference code; the output is a plain
  linear layer to the vocabulary (the paper uses an adaptive softmax).
- Params use the reference PyTorch code's names (word_emb.emb_layers.0.
  weight, layers.0.dec_attn.qkv_net.weight, layers.0.pos_ff.CoreNet.0.
  weight, ...; r_w_bias / r_r_bias per layer).

examples/xl_app.c runs the compiled model over a stream of tokens:

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/transformer_xl.lua --weights-mode=inline -o out/transformer_xl.c
  $ cc -O2 -Iout examples/xl_app.c out/transformer_xl.c -lm -o out/xl_app && out/xl_app
  $ kiln export examples/transformer_xl.lua -o xl.onnx     # memory: inputs mems.N, outputs mems.N.next
]]
-- test-range: ids=0..255
-- test-range: mem_filled=0..8
local nn = require "nn"

local cfg = config{
  batch = 1, seg = 8, mem = 8, vocab = 256, d = 64, heads = 4, d_head = 16, d_ff = 256,
  layers = 2,
  cutoff1 = 32, cutoff2 = 128, div_val = 2,
  mask_empty_memory = true,
}

local ids = input{"ids", {cfg.batch, cfg.seg}, "i64"}

local h = nn.adaptive_embedding("word_emb", ids, {
  vocab = cfg.vocab, d_embed = cfg.d, d_proj = cfg.d,
  cutoffs = {cfg.cutoff1, cfg.cutoff2}, div_val = cfg.div_val,
})                                                            -- [batch, seg, d]

-- which memory slots hold real hidden states: the last mem_filled of them
local key_mask
if cfg.mask_empty_memory then
  local filled = state{"mem_filled", {1}, "i64"}              -- 0 at the first call
  local empty = arange(0, cfg.mem):lt(cfg.mem - filled)       -- [mem], true = no state yet
  local blocked = cat({empty, full({cfg.seg}, 0, "bool")}, 0) -- [mem + seg]
  key_mask = where(blocked, nn.MASKED, 0.0):reshape(1, 1, 1, cfg.mem + cfg.seg)
  state_update(filled, (filled + cfg.seg):minimum(cfg.mem))
end

for i = 0, cfg.layers - 1 do
  local mem = state{"mems." .. i, {cfg.batch, cfg.mem, cfg.d}} -- what entered layer i before
  state_update(mem, nn.xl_memory(mem, h))
  h = nn.xl_layer("layers." .. i, h, mem, {
    heads = cfg.heads, d_head = cfg.d_head, d_ff = cfg.d_ff, key_mask = key_mask,
  })
end

output(nn.linear("out", h, cfg.vocab), "logits")              -- [batch, seg, vocab]
