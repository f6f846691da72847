--[[ sparse_transformer.lua — the Sparse Transformer (Child, Gray, Radford &
Sutskever, "Generating Long Sequences with Sparse Transformers", 2019): an
autoregressive decoder whose attention follows a fixed sparse pattern, so a
position attends to O(√n) others instead of all n before it.

  ids [batch, seq] ──embed·√d + positions──> N pre-norm layers ──> LayerNorm ──> · Eᵀ ──> logits

- The pattern factorizes full causal attention into two parts with a
  stride l (about √n), both causal (a query never sees a later key):
    strided (--set pattern=strided, for data with a period such as images):
      A(1) = the l positions before i, A(2) = every l-th position before i;
    fixed (--set pattern=fixed, for text):
      A(1) = i's own block of l positions, A(2) = the last c positions of
      every block ("summary" cells every later position can read; kiln's
      A(2) also holds i itself, so a head using A(2) alone has no empty row).
  Every position can reach every earlier one in two steps through them.
- combine=union gives each head both parts (the paper's "merged" head);
  combine=heads gives half of the heads A(1) and half A(2).
- The masks are boolean constants computed here in Lua (nn.sparse_mask):
  in the generated C they are known at compile time, and the attention
  kernel skips the blocks they hide.
- Layers are pre-norm (the paper's pre-activation residual blocks) with a
  GELU feed-forward network; a final LayerNorm, then logits tied to the
  embedding.

Without weights the params are random (deterministic). Try
--set pattern=fixed --set stride=4 --set c=2, or --set seq=64 --set stride=8.

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/sparse_transformer.lua -o out/sparse_transformer.c
  $ kiln compile examples/sparse_transformer.lua --set pattern=fixed --set stride=4 --set c=2 -o out/sparse_fixed.c
  $ kiln export examples/sparse_transformer.lua --set pattern=fixed -o sparse_fixed.onnx
]]
local nn = require "nn"

local cfg = config{
  batch = 1, seq = 16, vocab = 100, d = 64, heads = 4, d_ff = 256, layers = 2,
  pattern = "strided",    -- or "fixed"
  stride = 4,             -- l: block size / stride, about √seq
  c = 1,                  -- fixed pattern: summary positions per block
  combine = "union",      -- or "heads"
}

local ids = input{"ids", {cfg.batch, cfg.seq}, "i64"}

local x, embedding = nn.embedding("embedding", ids, cfg.vocab, cfg.d, {std = cfg.d ^ -0.5})
x = x * math.sqrt(cfg.d) + nn.sinusoidal_positions(cfg.seq, cfg.d)   -- [batch, seq, d]

-- [seq, seq] (union) or [heads, seq, seq] (heads): true where blocked
local mask = nn.sparse_attention_mask(cfg.seq, {
  pattern = cfg.pattern, stride = cfg.stride, c = cfg.c,
  combine = cfg.combine, heads = cfg.heads,
})

x = nn.encoder("layers", x, {
  layers = cfg.layers, heads = cfg.heads, d_ff = cfg.d_ff, activation = "gelu",
  pre_norm = true, final_norm = true, mask = mask,
})

output(x:matmul(embedding:transpose()), "logits")                    -- [batch, seq, vocab]
