--[[ entmax_attention.lua — attention with sparse probabilities, from
"Adaptively Sparse Transformers" (Correia, Niculae & Martins, 2019).

  ids [batch, seq] ──embed·√d + positions──> N encoder layers (α-entmax attention) ──> hidden

- Softmax gives every key some weight. α-entmax generalises it: α = 1 is
  softmax, α = 2 is sparsemax (the Euclidean projection of the scores onto
  the probability simplex), and in between 1.5-entmax. For α > 1 keys
  scoring below a per-row threshold τ get exactly zero:

      sparsemax(z)_j  = max(z_j − τ, 0)
      1.5-entmax(z)_j = max(z_j/2 − τ, 0)²        (τ such that the row sums to 1)

  Fixed per model: --set normalizer=entmax15 (default), sparsemax or
  softmax. Any α in [1, 2]: --set alpha=1.3. The paper's learned α per
  head (α = 1 + sigmoid(a), a the param layers.N.self_attn.alpha): --set
  alpha=learned.
- Sparsemax and Entmax15 are kiln ops with exact sorting-based kernels in
  the generated C; any other α is the Entmax op (bisection on the
  threshold); `kiln export` lowers all three to standard ONNX ops.
- Otherwise the layers are the Transformer's: post-norm residuals around
  attention and a ReLU feed-forward network (nn.attention_layer).

Without weights the params are random (deterministic).

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/entmax_attention.lua --set normalizer=sparsemax -o out/sparsemax.c
]]
local nn = require "nn"

local cfg = config{
  batch = 1, seq = 16, vocab = 100, d = 64, heads = 4, d_ff = 256, layers = 2,
  normalizer = "entmax15",   -- or "sparsemax", "softmax"
  alpha = "",                -- a number in [1, 2], or "learned": overrides normalizer
}

local ids = input{"ids", {cfg.batch, cfg.seq}, "i64"}

local x, _ = nn.embedding("embedding", ids, cfg.vocab, cfg.d, {std = cfg.d ^ -0.5})
x = x * math.sqrt(cfg.d) + nn.sinusoidal_positions(cfg.seq, cfg.d)   -- [batch, seq, d]

for i = 0, cfg.layers - 1 do
  local name = "layers." .. i
  x = nn.attention_layer(name, x, function(h)
    local how = cfg.alpha == "" and {heads = cfg.heads, normalizer = cfg.normalizer}
                or {heads = cfg.heads, alpha = tonumber(cfg.alpha) or cfg.alpha}
    return nn.entmax_attention(name .. ".self_attn", h, how)
  end, {d_ff = cfg.d_ff})
end

output(x, "hidden")                                                  -- [batch, seq, d]
