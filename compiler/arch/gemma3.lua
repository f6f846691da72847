--[[ gemma3.lua — Google's Gemma 3 text decoder (Gemma Team, "Gemma 3
Technical Report", 2025) from a GGUF file's own metadata (gemma3.* keys),
generating token by token with a KV cache:

  $ export PATH=$PWD/build:$PATH
  $ gguf=$(bash tests/gguf/fetch_gemma3.sh build/gemma3)     # Gemma 3 270M Q4_K_M (docs-test: network)
  $ kiln compile "$gguf" --set ctx=1024 -o out/gemma.c       # picks this file by general.architecture

  tokens [T] ──token_embd · √d──> N blocks ──RMSNorm──> last token ──token_embd──> logits [vocab]

  block:  n = RMSNorm(h)
          q, k = RMSNorm_head(attn_q(n)), RMSNorm_head(attn_k(n))        QK-norm, per head
          a = attn_output(attention(rope(q), cache(rope(k)), cache(attn_v(n))))
          h += RMSNorm(a)                                                post-attention norm
          h += RMSNorm(ffn_down(gelu_tanh(ffn_gate(n')) · ffn_up(n')))    n' = RMSNorm(h), post-FFN norm

- Every number comes from the GGUF: gemma3.block_count, .embedding_length,
  .feed_forward_length, .attention.head_count(_kv), .attention.key_length
  (head_dim, 256 for every Gemma 3), .attention.value_length,
  .attention.layer_norm_rms_epsilon, .rope.freq_base (the global layers'
  base, 1e6), .attention.sliding_window (the local layers' window, 512),
  and, when the file has them, .rope.freq_base_swa (the local layers'
  base; 10000 otherwise), .attention.sliding_window_pattern (every n-th
  layer is global, 6 otherwise: layers 5, 11, 17 of 18; or a list saying
  per layer whether it is local) and .final_logit_softcapping. Only the
  cache's capacity `ctx`, the prefill chunk `prefill`, the caches' dtype
  `kv` and `query_pre_attn_scalar` (Gemma's attention scale is its
  -1/2 power; the 27B model's differs from head_dim, which is the default)
  are set here. With no weights bound the defaults make a small random
  model (tests/gguf/tiny_gemma3.gguf has the same shape).
- RMSNorm: Gemma's scales its output by (1 + w); llama.cpp's converter
  stores w + 1 in the GGUF (every *norm.weight, QK-norm's too), so the
  file's weight is the scale as it is.
- Local layers attend to the `sliding_window` newest positions, the query's
  own included (x:attention's {window = W}: the kernel never reads the
  keys before the window); global layers to every position. RoPE pairs
  dims i and i + head_dim/2 (NeoX / Hugging Face rotate_half: Gemma's Q
  and K are not permuted by the converter).
- Grouped-query attention (head_count / head_count_kv query heads per kv
  head), scale query_pre_attn_scalar^-1/2.
- Tied output: the logits are token_embd · h (262,144 rows for Gemma 3),
  unless the file has output.weight.
]]
-- test: --set ctx=32 --set prefill=8 --weights-mode=inline
local nn = require "nn"

local cfg = config{ctx = 512, prefill = 64, kv = "f32", query_pre_attn_scalar = 0}
local arch = gguf_arch("gemma3") -- a GGUF of another architecture is an error that says so
local function meta(key, default) return gguf_meta(arch .. "." .. key, default) end
local layers = meta("block_count", 3)
local d = meta("embedding_length", 64)
local heads = meta("attention.head_count", 4)
local kv_heads = meta("attention.head_count_kv", 2)
local head_dim = meta("attention.key_length", 16)
local v_dim = meta("attention.value_length", head_dim)
local d_ff = meta("feed_forward_length", 128)
local eps = meta("attention.layer_norm_rms_epsilon", 1e-6)
local theta_global = meta("rope.freq_base", 1000000.0)
local theta_local = meta("rope.freq_base_swa", 10000.0)
local window = meta("attention.sliding_window", 4)
local pattern = meta("attention.sliding_window_pattern", gguf_meta("gemma3.block_count", nil) and 6 or 3)
local softcap = meta("final_logit_softcapping", 0.0)
local vocab = (param_shape("token_embd.weight") or {256})[1]            -- the file's rows
local tied = not has_param("output.weight")
local scalar = cfg.query_pre_attn_scalar > 0 and cfg.query_pre_attn_scalar or head_dim

local scaling = meta("rope.scaling.type", "none")
if scaling ~= "none" and meta("rope.scaling.factor", 1.0) ~= 1.0 then
  fail(("gemma3.rope.scaling.type is '%s' with factor %g; expected none (the 270M and 1B models): "
        .. "scaled RoPE is not written yet"):format(scaling, meta("rope.scaling.factor", 1.0)))
end
if v_dim ~= head_dim then
  fail(("gemma3.attention.value_length is %d and key_length %d; expected them equal"):format(v_dim, head_dim))
end

-- is layer i local (sliding window)? every pattern-th layer is global, or
-- the file's list says so per layer
local function is_local(i)
  if type(pattern) == "table" then
    if #pattern ~= layers then
      fail(("gemma3.attention.sliding_window_pattern has %d items; expected one per layer (%d)")
           :format(#pattern, layers))
    end
    return pattern[i + 1] == true or pattern[i + 1] == 1
  end
  return pattern > 0 and i % pattern < pattern - 1
end

local function linear(name, x, out)
  return nn.linear(name, x, out, {bias = false})
end

-- RMSNorm over the last dim of x by the file's weight (w + 1 already)
local function norm(name, x, n)
  return x:rms_norm(param{name, {n}, init = "ones"}, eps):named(name:gsub("%.weight$", ""))
end

-- [T, n·head_dim] -> QK-normed, rotated [T, n, head_dim]
local function qk(b, what, x, t, n, theta, positions)
  local y = norm(b .. "attn_" .. what .. "_norm.weight", x:reshape(t, n, head_dim), head_dim)
  return y:reshape(1, t, n * head_dim)
          :rope{positions = positions:reshape(1, t), theta = theta, interleaved = false,
                max_pos = cfg.ctx, heads = n}
          :named(b .. what .. "_rope")
          :reshape(t, n, head_dim)
end

decoder{ctx = cfg.ctx, prefill = cfg.prefill, forward = function(x)
  local T = x.T
  local embd = param{"token_embd.weight", {vocab, d}, init = "normal", std = 0.5}
  local h = (embd:gather(x.tokens) * math.sqrt(d)):named("embd")       -- [T, d]
  for i = 0, layers - 1 do
    local b = "blk." .. i .. "."
    local loc = is_local(i)
    local theta = loc and theta_local or theta_global
    local n = norm(b .. "attn_norm.weight", h, d)
    local q = qk(b, "q", linear(b .. "attn_q", n, heads * head_dim), T, heads, theta, x.positions)
    local k = qk(b, "k", linear(b .. "attn_k", n, kv_heads * head_dim), T, kv_heads, theta, x.positions)
    local v = linear(b .. "attn_v", n, kv_heads * head_dim):reshape(T, kv_heads, head_dim)
    local kc = x:cache(b .. "k_cache", k, {dtype = cfg.kv})                -- [ctx, kv_heads, head_dim]
    local vc = x:cache(b .. "v_cache", v, {dtype = cfg.kv})
    local opts = {scale = 1 / math.sqrt(scalar)}
    if loc and window < cfg.ctx then opts.window = window end          -- else every position is in it
    local y = x:attention(q, kc, vc, opts):named(b .. "attn")            -- [T, heads, head_dim]
    local a = linear(b .. "attn_output", y:reshape(T, heads * head_dim), d)
    h = (h + norm(b .. "post_attention_norm.weight", a, d)):named(b .. "attn_residual")
    n = norm(b .. "ffn_norm.weight", h, d)
    local f = nn.geglu("blk." .. i, n, {d_ff = d_ff, names = {gate = "ffn_gate", up = "ffn_up", down = "ffn_down"}})
    h = (h + norm(b .. "post_ffw_norm.weight", f, d)):named(b .. "ffn_residual")
  end
  h = norm("output_norm.weight", h:gather(x.last), d)                  -- [1, d]: the last real token
  local out = tied and embd or param{"output.weight", {vocab, d}, init = "normal", std = 0.05}
  local logits = h:matmul(out:transpose())                             -- [1, vocab]
  if softcap > 0 then logits = (logits * (1 / softcap)):tanh() * softcap end
  return logits
end}
