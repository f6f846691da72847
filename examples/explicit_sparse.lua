--[[ explicit_sparse.lua — the Explicit Sparse Transformer (Zhao, Lin, Chen,
Sun & Sun, "Explicit Sparse Transformer: Concentrated Attention Through
Explicit Selection", 2019): attention that keeps only each query's k
highest scores.

  ids [batch, seq] ──embed·√d + positions──> N encoder layers (top-k attention) ──> hidden

- Scores are computed as usual (q·kᵀ/√d_head); in each query's row only
  the k largest survive — the row's k-th largest value is the threshold,
  the others are set to a large negative number — and softmax runs over
  what is left, so every query spreads its attention over exactly k keys
  (nn.topk_softmax: TopK, GreaterOrEqual, Where, Softmax). The paper finds
  k = 8 works well for translation and that the concentration helps on
  long inputs.
- Otherwise the layers are the Transformer's: post-norm residuals around
  attention and a ReLU feed-forward network (nn.attention_layer), params
  named like torch.nn.TransformerEncoderLayer's.

Without weights the params are random (deterministic).

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/explicit_sparse.lua --set k=4 -o out/explicit_sparse.c
]]
local nn = require "nn"

local cfg = config{
  batch = 1, seq = 16, vocab = 100, d = 64, heads = 4, d_ff = 256, layers = 2,
  k = 8,                  -- keys each query keeps
  causal = false,         -- true: a decoder's self-attention (then top-k among earlier keys)
}

local ids = input{"ids", {cfg.batch, cfg.seq}, "i64"}

local x, _ = nn.embedding("embedding", ids, cfg.vocab, cfg.d, {std = cfg.d ^ -0.5})
x = x * math.sqrt(cfg.d) + nn.sinusoidal_positions(cfg.seq, cfg.d)   -- [batch, seq, d]

for i = 0, cfg.layers - 1 do
  local name = "layers." .. i
  x = nn.attention_layer(name, x, function(h)
    return nn.topk_attention(name .. ".self_attn", h,
                             {heads = cfg.heads, k = cfg.k, mask = cfg.causal and "causal" or nil})
  end, {d_ff = cfg.d_ff})
end

output(x, "hidden")                                                  -- [batch, seq, d]
