--[[ llama.lua — a Llama-architecture decoder (Touvron et al., "LLaMA: Open
and Efficient Foundation Language Models", 2023) that generates token by
token with a KV cache, built from a GGUF file's own metadata:

  $ export PATH=$PWD/build:$PATH
  $ gguf=$(bash tests/gguf/fetch_smollm.sh build/smollm)   # the GGUF, fetched once (docs-test: network)
  $ kiln compile examples/llama.lua --weights "$gguf" --set ctx=512 -o out/smol.c
  $ cc -O2 -march=native -Iout -c out/smol.c out/smol_weights.S
  $ cc -O2 -Iout examples/generate.c smol.o smol_weights.o -lm -o out/generate

This file is also kiln's bundled description of the llama architecture:
`kiln compile model.gguf` runs it for a GGUF whose general.architecture is
llama (embedded in kiln as arch/llama.lua, installed as
share/kiln/arch/llama.lua; compiler/arch/README.md), so

  $ kiln compile "$gguf" --set ctx=512 -o out/smol.c

writes the same C as the command above.

  tokens [T] ──token_embd──> N blocks ──RMSNorm──> last token ──> logits [vocab]

  block:  h += attn_output(attention(rope(attn_q(n)), cache(rope(attn_k(n))), cache(attn_v(n))))   n = RMSNorm(h)
          h += ffn_down(silu(ffn_gate(n)) · ffn_up(n))                                             n = RMSNorm(h)

- Every number comes from the GGUF (llama.block_count, .embedding_length,
  .attention.head_count(_kv), .feed_forward_length, .rope.freq_base,
  .attention.layer_norm_rms_epsilon, .rope.dimension_count); only the
  cache's capacity `ctx`, the prefill chunk `prefill` and the caches'
  dtype `kv` are set here (--set ctx=N, --set prefill=N, --set kv=f16:
  f16 or bf16 caches hold half the bytes, which long contexts read at
  every step; values are rounded as they are stored). With no weights bound the defaults make
  a small random model (the tests use it).
- Tensor names are llama.cpp's (token_embd.weight, blk.N.attn_q.weight,
  ...). Quantized tensors (Q8_0, Q4_0, Q4_1) stay quantized: their
  products dequantize in registers.
- RoPE pairs dims 2i and 2i+1 (interleaved): llama.cpp's converter
  permutes Q and K's rows for that layout. Positions are the cache's
  length plus 0 .. T-1 (x.positions).
- Grouped-query attention: head_count query heads share head_count_kv
  key/value heads; the caches hold the rotated keys and the values,
  [ctx, head_count_kv, head_dim] per block.
- The output projection is output.weight, or token_embd.weight when the
  file has none (tied embeddings, as SmolLM2).
- decoder{} calls forward twice: for a prompt chunk of `prefill` tokens
  and for one token; the generated C has NAME_prefill and NAME_step
  (README, "Generating text").
]]
-- test: --set ctx=32 --set prefill=8
local nn = require "nn"

local cfg = config{ctx = 512, prefill = 64, kv = "f32"}
local arch = gguf_arch("llama") -- a GGUF of another architecture is an error that says so
local meta = function(key, default) return gguf_meta(arch .. "." .. key, default) end
local layers = meta("block_count", 2)
local d = meta("embedding_length", 64)
local heads = meta("attention.head_count", 4)
local kv_heads = meta("attention.head_count_kv", heads)
local d_ff = meta("feed_forward_length", 128)
local theta = meta("rope.freq_base", 10000.0)
local eps = meta("attention.layer_norm_rms_epsilon", 1e-5)
local head_dim = d // heads
local rot_dim = meta("rope.dimension_count", head_dim)
local vocab = meta("vocab_size", (param_shape("token_embd.weight") or {256})[1])
local tied = not has_param("output.weight")

local function linear(name, x, out)
  return nn.linear(name, x, out, {bias = false})
end

local function norm(name, x)
  return x:rms_norm(param{name, {d}, init = "ones"}, eps):named(name:gsub("%.weight$", ""))
end

-- [T, heads·head_dim] -> rotated [T, heads, head_dim]
local function rope(name, x, t, n, positions)
  return x:reshape(1, t, n * head_dim)
          :rope{positions = positions:reshape(1, t), theta = theta, interleaved = true,
                dim = rot_dim, max_pos = cfg.ctx, heads = n}
          :named(name)
          :reshape(t, n, head_dim)
end

decoder{ctx = cfg.ctx, prefill = cfg.prefill, forward = function(x)
  local T = x.T
  local embd = param{"token_embd.weight", {vocab, d}, init = "normal", std = 0.5}
  local h = embd:gather(x.tokens):named("embd")                       -- [T, d]
  for i = 0, layers - 1 do
    local b = "blk." .. i .. "."
    local n = norm(b .. "attn_norm.weight", h)
    local q = rope(b .. "q_rope", linear(b .. "attn_q", n, heads * head_dim), T, heads, x.positions)
    local k = rope(b .. "k_rope", linear(b .. "attn_k", n, kv_heads * head_dim), T, kv_heads, x.positions)
    local v = linear(b .. "attn_v", n, kv_heads * head_dim):reshape(T, kv_heads, head_dim)
    local kc = x:cache(b .. "k_cache", k, {dtype = cfg.kv})                -- [ctx, kv_heads, head_dim]
    local vc = x:cache(b .. "v_cache", v, {dtype = cfg.kv})
    local y = x:attention(q, kc, vc):named(b .. "attn")                   -- [T, heads, head_dim]
    h = (h + linear(b .. "attn_output", y:reshape(T, heads * head_dim), d)):named(b .. "attn_residual")
    n = norm(b .. "ffn_norm.weight", h)
    h = (h + nn.swiglu("blk." .. i, n, {d_ff = d_ff, names = {gate = "ffn_gate", up = "ffn_up", down = "ffn_down"}}))
        :named(b .. "ffn_residual")
  end
  h = norm("output_norm.weight", h:gather(x.last))                    -- [1, d]: the last real token
  local out = tied and embd or param{"output.weight", {vocab, d}, init = "normal", std = 0.05}
  return h:matmul(out:transpose())                                    -- [1, vocab]
end}
