--[[ bert.lua — a BERT-style encoder (Devlin et al., 2019) that loads real
Hugging Face checkpoints: BertModel, and the MiniLM sentence encoders built
on it (sentence-transformers/all-MiniLM-L6-v2: 6 layers, d 384, 12 heads,
feed-forward 1536).

  input_ids, token_type_ids [batch, seq] ──word + position + segment
      embeddings, LayerNorm──> N encoder layers ──> last_hidden_state
                                                └─ [CLS] row, dense, tanh ──> pooler_output

- Embeddings: the sum of a token's row, its position's row (learned,
  positions 0..seq-1) and its segment's row, then a LayerNorm.
- Encoder layer (post-norm, as in BERT): self-attention with a residual
  and LayerNorm, then a GELU feed-forward network (exact, erf) with a
  residual and LayerNorm. LayerNorm eps is 1e-12.
- attention_mask [batch, seq] is Hugging Face's: 1 for a real token, 0 for
  padding; padded keys are hidden from every query.
- Pooler (optional, pooler=true): tanh(dense(h[:, 0])) — the [CLS] vector.
  Sentence-transformers take a masked mean of last_hidden_state instead;
  the app does that with the mask it already has.

Params carry Hugging Face's BertModel names (embeddings.word_embeddings.weight,
encoder.layer.0.attention.self.query.weight, ...,
encoder.layer.0.output.LayerNorm.bias, pooler.dense.weight), so a
model.safetensors loads unchanged:

  $ export PATH=$PWD/build:$PATH
  $ /usr/bin/python3 tools/minilm.py fetch      # build/minilm/model/ (docs-test: network)
  $ kiln compile examples/bert.lua --set seq=128 --weights build/minilm/model/model.safetensors -o out/minilm.c

(examples/embed.c turns all-MiniLM-L6-v2's last_hidden_state into sentence
embeddings; tools/minilm.py fetches the checkpoint. README, "Real models".)

- Tensors the script does not use are skipped with one note (kiln: note:
  FILE: 1 of 104 tensors not used by the model: embeddings.position_ids
  ...): the position_ids buffer most checkpoints carry, or a pooler with
  --set pooler=false. --strict-weights makes them an error. A file saved
  from a task model (BertForMaskedLM, ...) has a "bert." prefix: --set
  prefix=bert.
- F16 and BF16 files are converted to f32 on load.
- The weights go to a blob beside the C (out/minilm.weights.bin, 90 MB,
  and out/minilm_weights.S that links it in): the .c holds code only
  (0.9 MB for MiniLM) and builds in seconds. See the README's generated API.
- Other BERT sizes: --set preset=base (12 layers, d 768, 12 heads, ff 3072),
  or any of layers, d, heads, d_ff, vocab, max_pos individually.

Without weights the params are random (deterministic); --set preset=tiny
gives a small model for tests.
]]
-- test: --set preset=tiny --set seq=16 --set batch=2

local nn = require "nn"

local PRESETS = {
  minilm = {layers = 6, d = 384, heads = 12, d_ff = 1536, vocab = 30522, max_pos = 512},
  base = {layers = 12, d = 768, heads = 12, d_ff = 3072, vocab = 30522, max_pos = 512},
  tiny = {layers = 2, d = 64, heads = 4, d_ff = 256, vocab = 1000, max_pos = 64},
}

local cfg = config{
  preset = "minilm", batch = 1, seq = 128,
  layers = 0, d = 0, heads = 0, d_ff = 0, vocab = 0, max_pos = 0,  -- 0: the preset's
  type_vocab = 2, eps = 1e-12,
  pooler = true, position_ids = false, prefix = "",
}
local shape = PRESETS[cfg.preset]
if not shape then
  error("--set preset=" .. cfg.preset .. ": expected minilm, base or tiny")
end
for key, value in pairs(shape) do
  if cfg[key] == 0 then cfg[key] = value end
end
if cfg.seq > cfg.max_pos then
  error(string.format("seq %d is longer than the %d learned positions", cfg.seq, cfg.max_pos))
end

local P = cfg.prefix   -- "" for BertModel, "bert." for a task model's encoder
local ln = {eps = cfg.eps}

-- inputs in the order of Hugging Face's BertModel.forward (and its ONNX exports)
local ids = input{"input_ids", {cfg.batch, cfg.seq}, "i64"}
local attention_mask = input{"attention_mask", {cfg.batch, cfg.seq}, "i64"}
local segments = input{"token_type_ids", {cfg.batch, cfg.seq}, "i64"}

-- embeddings: token + position + segment, then LayerNorm  [batch, seq, d]
local function embeddings()
  local e = P .. "embeddings."
  local words = nn.embedding(e .. "word_embeddings", ids, cfg.vocab, cfg.d, {std = 0.02})
  local types = nn.embedding(e .. "token_type_embeddings", segments, cfg.type_vocab, cfg.d,
                             {std = 0.02})
  local positions = param{e .. "position_embeddings.weight", {cfg.max_pos, cfg.d},
                          init = "normal", std = 0.02}
  if cfg.position_ids then -- a buffer some checkpoints store: 0, 1, 2, ...
    param{e .. "position_ids", {1, cfg.max_pos}, "i64", init = "zeros"}
  end
  local x = words + positions:narrow(0, 0, cfg.seq) + types
  return nn.layer_norm(e .. "LayerNorm", x, ln)
end

-- one encoder layer, Hugging Face names under encoder.layer.N  [batch, seq, d]
local HF_ATTENTION = {query = "self.query", key = "self.key", value = "self.value",
                      out = "output.dense"}
local function encoder_layer(name, x, mask)
  local a = nn.multi_head_attention(name .. ".attention", x,
                                    {heads = cfg.heads, mask = mask, names = HF_ATTENTION})
  x = nn.layer_norm(name .. ".attention.output.LayerNorm", x + a, ln)
  local f = nn.feed_forward(name, x, cfg.d_ff,
                            {activation = "gelu",
                             names = {inner = "intermediate.dense", outer = "output.dense"}})
  return nn.layer_norm(name .. ".output.LayerNorm", x + f, ln)
end

local padding = attention_mask:eq(0):unsqueeze(1, 2)   -- [batch, 1, 1, seq], true at pads
local h = embeddings()
for i = 0, cfg.layers - 1 do
  h = encoder_layer(P .. "encoder.layer." .. i, h, padding)
end
output(h, "last_hidden_state")                         -- [batch, seq, d]

if cfg.pooler then
  local cls = h:narrow(1, 0, 1):squeeze(1)             -- [batch, d]
  output(nn.linear(P .. "pooler.dense", cls, cfg.d):tanh(), "pooler_output")
end
