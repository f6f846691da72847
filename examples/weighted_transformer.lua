--[[ weighted_transformer.lua — the Weighted Transformer (Ahmed, Keskar &
Socher, "Weighted Transformer Network for Machine Translation", 2017): an
encoder whose multi-head attention becomes *branched* attention.

  ids [batch, seq] ──embed·√d + positions──> N weighted layers ──> hidden [batch, seq, d]

- A weighted layer has M branches, one per attention head (d_head = d/M).
  Branch i attends, projects its head back to d with its own W_O,i and
  scales the result by κ_i (the "concatenation" weights: in the standard
  Transformer every head's block of W_O has weight 1); each branch then
  runs its own ReLU feed-forward network, and the branch outputs are added
  with weights α_i:

      BranchedAttention(x) = Σ_i α_i · FFN_i(κ_i · Attention_i(x) · W_O,i)
      layer(x)             = LayerNorm(x + BranchedAttention(x))

  κ and α are learned, each summing to 1 (nn.weighted_attention normalises
  them); the paper reports they make training converge 15–40% faster and
  add about 0.5 BLEU over the Transformer of the same size.
- Because each branch has its own FFN, a layer has no separate
  feed-forward sublayer.
- Params: embedding.weight, layers.N.attn.{q,k,v}_proj, layers.N.attn.
  out_proj.weight [M, d/M, d], layers.N.attn.kappa / alpha [M], layers.N.
  attn.ffn.linear1 / linear2 (per branch), layers.N.norm.

Without weights the params are random (deterministic); the defaults are a
small model. The paper's base model: --set d=512 --set branches=8
--set d_ff=2048 --set layers=6.

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/weighted_transformer.lua -o out/weighted_transformer.c
  $ kiln export examples/weighted_transformer.lua -o weighted_transformer.onnx
]]
local nn = require "nn"

local cfg = config{
  batch = 1, seq = 16, vocab = 100, d = 64,
  branches = 4,           -- M: attention heads, each its own branch
  d_ff = 64,              -- inner size of each branch's feed-forward network
  layers = 2,
}

local ids = input{"ids", {cfg.batch, cfg.seq}, "i64"}

local x, _ = nn.embedding("embedding", ids, cfg.vocab, cfg.d, {std = cfg.d ^ -0.5})
x = x * math.sqrt(cfg.d) + nn.sinusoidal_positions(cfg.seq, cfg.d)   -- [batch, seq, d]

for i = 0, cfg.layers - 1 do
  x = nn.weighted_encoder_layer("layers." .. i, x,
                                {branches = cfg.branches, d_ff = cfg.d_ff})
end

output(x, "hidden")                                                  -- [batch, seq, d]
