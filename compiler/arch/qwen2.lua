--[[ qwen2.lua — a Qwen2-architecture decoder (Qwen Team, "Qwen2 Technical
Report", 2024; Hugging Face's Qwen2ForCausalLM) from a GGUF file whose
general.architecture is qwen2, as llama.cpp's convert_hf_to_gguf.py writes
it. `kiln compile model.gguf` runs this description for such a file:

  $ kiln compile qwen2-0_5b-instruct-q8_0.gguf --set ctx=512 -o out/qwen.c

  tokens [T] ──token_embd──> N blocks ──RMSNorm──> last token ──> logits [vocab]

  block:  h += attn_output(attention(rope(attn_q(n) + bq), cache(rope(attn_k(n) + bk)), cache(attn_v(n) + bv)))
          n = RMSNorm(h) before each half;   h += ffn_down(silu(ffn_gate(n)) · ffn_up(n))

What sets it apart from llama.lua (examples/llama.lua):
- Q, K and V have biases (blk.N.attn_q.bias, attn_k.bias, attn_v.bias);
  the attention output and the MLP have none.
- RoPE rotates the halves of each head (dims i and i + head_dim/2, Hugging
  Face's rotate_half; llama.cpp's NEOX rope type for qwen2): the converter
  writes Q and K as Hugging Face has them, without the row permutation it
  applies to Llama for interleaved pairs. The base is qwen2.rope.freq_base
  (1,000,000 in the released models), over the whole head.
- Every number comes from the file's qwen2.* keys (block_count,
  embedding_length, attention.head_count(_kv), feed_forward_length,
  rope.freq_base, attention.layer_norm_rms_epsilon); the vocabulary's size
  from token_embd.weight's rows (the file has no qwen2.vocab_size). Only
  the cache's capacity `ctx`, the prefill chunk `prefill` and the caches'
  dtype `kv` are set here (--set ctx=N ...), as in llama.lua.
- The output projection is output.weight, or token_embd.weight when the
  file has none (tied embeddings: Qwen2-0.5B and 1.5B).
- With no GGUF bound the defaults make a small random model (tests).
]]
-- test: --set ctx=32 --set prefill=8
local nn = require "nn"

local cfg = config{ctx = 512, prefill = 64, kv = "f32"}
local arch = gguf_arch("qwen2")
local meta = function(key, default) return gguf_meta(arch .. "." .. key, default) end
local layers = meta("block_count", 2)
local d = meta("embedding_length", 64)
local heads = meta("attention.head_count", 4)
local kv_heads = meta("attention.head_count_kv", heads)
local d_ff = meta("feed_forward_length", 128)
local theta = meta("rope.freq_base", 1000000.0)
local eps = meta("attention.layer_norm_rms_epsilon", 1e-6)
local head_dim = d // heads
local vocab = meta("vocab_size", (param_shape("token_embd.weight") or {256})[1])
local tied = not has_param("output.weight")

local function norm(name, x)
  return x:rms_norm(param{name, {d}, init = "ones"}, eps):named(name:gsub("%.weight$", ""))
end

-- [T, n·head_dim] -> rotated [T, n, head_dim], the halves paired
local function rope(name, x, t, n, positions)
  return x:reshape(1, t, n * head_dim)
          :rope{positions = positions:reshape(1, t), theta = theta, interleaved = false,
                max_pos = cfg.ctx, heads = n}
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
    local q = rope(b .. "q_rope", nn.linear(b .. "attn_q", n, heads * head_dim), T, heads, x.positions)
    local k = rope(b .. "k_rope", nn.linear(b .. "attn_k", n, kv_heads * head_dim), T, kv_heads, x.positions)
    local v = nn.linear(b .. "attn_v", n, kv_heads * head_dim):reshape(T, kv_heads, head_dim)
    local kc = x:cache(b .. "k_cache", k, {dtype = cfg.kv})                -- [ctx, kv_heads, head_dim]
    local vc = x:cache(b .. "v_cache", v, {dtype = cfg.kv})
    local y = x:attention(q, kc, vc):named(b .. "attn")                   -- [T, heads, head_dim]
    local o = nn.linear(b .. "attn_output", y:reshape(T, heads * head_dim), d, {bias = false})
    h = (h + o):named(b .. "attn_residual")
    n = norm(b .. "ffn_norm.weight", h)
    h = (h + nn.swiglu("blk." .. i, n, {d_ff = d_ff, names = {gate = "ffn_gate", up = "ffn_up", down = "ffn_down"}}))
        :named(b .. "ffn_residual")
  end
  h = norm("output_norm.weight", h:gather(x.last))                    -- [1, d]: the last real token
  local out = tied and embd or param{"output.weight", {vocab, d}, init = "normal", std = 0.05}
  return h:matmul(out:transpose())                                    -- [1, vocab]
end}
