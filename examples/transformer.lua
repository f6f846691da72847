--[[ transformer.lua — the original encoder–decoder Transformer (Vaswani et
al., "Attention Is All You Need", 2017), as kiln compiles it.

  src ids [batch, src_len] ──embed·√d + positions──> N encoder layers ──> memory
  tgt ids [batch, tgt_len] ──embed·√d + positions──> N decoder layers ──> · Eᵀ ──> logits

- One embedding matrix E [vocab, d] is shared by the source, the target and
  the output projection (tied weights, §3.4), scaled by √d on the way in.
- Positions are the fixed sinusoids of §3.5, computed here in Lua: a
  constant in the generated C.
- Encoder layer: self-attention, then a ReLU feed-forward network; decoder
  layer: causal self-attention, attention over the encoder's memory, the
  feed-forward network. Each sublayer sits in a residual with a LayerNorm
  after it (post-norm, as in the paper) or before it (--set pre_norm=true,
  the variant most trained today).
- Masks: the source's padding (tokens equal to pad) is hidden from the
  encoder's self-attention and from the decoder's cross-attention; the
  decoder's self-attention is causal, so a target position never sees a
  later one — which is what lets an app decode greedily with a fixed-size
  target padded at the end (examples/translate_app.c).
- Params are named like torch.nn.Transformer's state_dict
  (encoder.layers.0.self_attn.in_proj_weight, ..., decoder.norm.weight) plus
  embedding.weight, so trained PyTorch weights load with --weights. That
  module has a final LayerNorm after each stack (final_norm=true); the
  paper's post-norm model has none (--set final_norm=false).

- --set cache=true builds the same model (same params, same arithmetic)
  for decoding token by token (decoder{}, README "Generating text"): the
  generated C gets transformer_encode(state, src), which runs the encoder
  once and stores each decoder layer's cross-attention keys and values in
  the state, and transformer_prefill/transformer_step, which run target
  positions through the decoder with its self-attention keys and values in
  a KV cache of tgt_len positions. examples/translate_app.c uses either
  build.

Without weights the params are random (deterministic); the defaults are a
small model. The paper's base model: --set d=512 --set heads=8 --set d_ff=2048
--set layers=6 --set vocab=37000.

  $ export PATH=$PWD/build:$PATH
  $ kiln compile examples/transformer.lua -o out/transformer.c
  $ kiln compile examples/transformer.lua --set cache=true -o out/transformer_cached.c
  $ kiln export examples/transformer.lua -o transformer.onnx
]]
-- test-pad: src=0

local nn = require "nn"

local cfg = config{
  batch = 1, src_len = 16, tgt_len = 16,
  vocab = 1000, d = 64, heads = 4, d_ff = 256, layers = 2,
  pad = 0,                 -- the padding token id (bos = 1, eos = 2 in translate_app.c)
  pre_norm = false, final_norm = true,
  cache = false,           -- true: decode with a KV cache (batch 1, decoder{})
  prefill = 4,             -- with cache: most target tokens one transformer_prefill call takes
}

-- the shared embedding [vocab, d]; a token's row, scaled by √d, plus the
-- sinusoid of its position
local embedding = param{"embedding.weight", {cfg.vocab, cfg.d}, init = "normal",
                        std = cfg.d ^ -0.5}
local function embed(ids, len)
  return embedding:gather(ids) * math.sqrt(cfg.d) + nn.sinusoidal_positions(len, cfg.d)
end

local stack = {layers = cfg.layers, heads = cfg.heads, d_ff = cfg.d_ff,
               pre_norm = cfg.pre_norm, final_norm = cfg.final_norm}
local function with(t) -- stack's options and t's
  local o = {}
  for k, v in pairs(stack) do o[k] = v end
  for k, v in pairs(t) do o[k] = v end
  return o
end

local function encode(src)                           -- [batch, src_len] ids
  local src_padding = nn.padding_mask(src, cfg.pad)  -- [batch, 1, 1, src_len], true at pads
  local memory = nn.encoder("encoder", embed(src, cfg.src_len), with{mask = src_padding})
  return memory, src_padding                         -- [batch, src_len, d]
end

if not cfg.cache then
  local src = input{"src", {cfg.batch, cfg.src_len}, "i64"}
  local tgt = input{"tgt", {cfg.batch, cfg.tgt_len}, "i64"}
  local memory, src_padding = encode(src)
  local y = nn.decoder("decoder", embed(tgt, cfg.tgt_len), memory, with{
    self_mask = "causal",                            -- [tgt_len, tgt_len]
    memory_mask = src_padding,
  })                                                 -- [batch, tgt_len, d]
  output(y:matmul(embedding:transpose()), "logits")  -- [batch, tgt_len, vocab]
  return
end

-- Decoding with a cache: encode runs once per source; prefill and step run
-- target positions 0, 1, ... against the stored memory and the caches.
if cfg.batch ~= 1 then
  error("transformer.lua: cache=true decodes one sequence; expected batch = 1, got " .. cfg.batch, 0)
end
decoder{ctx = cfg.tgt_len, prefill = cfg.prefill,
  encode = function(e)
    local memory, src_padding = encode(input{"src", {1, cfg.src_len}, "i64"})
    nn.decoder_memory(e, "decoder", memory, {layers = cfg.layers, heads = cfg.heads, mask = src_padding})
  end,
  forward = function(x)                              -- x.tokens [T]: target ids
    local h = embedding:gather(x.tokens) * math.sqrt(cfg.d)
              + nn.sinusoidal_positions(cfg.tgt_len, cfg.d):gather(x.positions)
    h = nn.cached_decoder(x, "decoder", h, with{memory_mask = true})   -- [T, d]
    return h:gather(x.last):matmul(embedding:transpose())              -- [1, vocab]
  end}
