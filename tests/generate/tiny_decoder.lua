--[[ tiny_decoder.lua — a small Llama-shaped decoder with random weights for
the KV-cache tests (tests/generate/run_cache.sh): learned positions,
RMSNorm, grouped-query attention over the cache, a SiLU-gated feed-forward,
tied output projection. prefill + steps must equal prefill of the whole
sequence. ]]
local cfg = config{ctx = 24, prefill = 8, vocab = 50, d = 32, heads = 4, kv_heads = 2, layers = 2, d_ff = 48}
local hd = cfg.d // cfg.heads

local function linear(name, x, out)
  local w = param{name, {out, x.shape[x.rank]}, init = "uniform", bound = 1 / math.sqrt(x.shape[x.rank])}
  return x:matmul(w:transpose())
end

decoder{ctx = cfg.ctx, prefill = cfg.prefill, forward = function(x)
  local emb = param{"tok_emb", {cfg.vocab, cfg.d}, init = "normal", std = 1}
  local pos = param{"pos_emb", {cfg.ctx, cfg.d}, init = "normal", std = 0.5}
  local h = emb:gather(x.tokens) + pos:gather(x.positions)            -- [T, d]
  for i = 0, cfg.layers - 1 do
    local p = "blk." .. i .. "."
    local n = h:rms_norm(param{p .. "attn_norm", {cfg.d}, init = "ones"}, 1e-5)
    local q = linear(p .. "q", n, cfg.d):reshape(x.T, cfg.heads, hd)
    local k = linear(p .. "k", n, cfg.kv_heads * hd):reshape(x.T, cfg.kv_heads, hd)
    local v = linear(p .. "v", n, cfg.kv_heads * hd):reshape(x.T, cfg.kv_heads, hd)
    local y = x:attention(q, x:cache(p .. "k_cache", k), x:cache(p .. "v_cache", v))
    h = h + linear(p .. "o", y:reshape(x.T, cfg.d), cfg.d)
    n = h:rms_norm(param{p .. "ffn_norm", {cfg.d}, init = "ones"}, 1e-5)
    local gate = linear(p .. "gate", n, cfg.d_ff)
    h = h + linear(p .. "down", gate * gate:sigmoid() * linear(p .. "up", n, cfg.d_ff), cfg.d)
  end
  h = h:gather(x.last):rms_norm(param{"out_norm", {cfg.d}, init = "ones"}, 1e-5)   -- [1, d]
  return h:matmul(emb:transpose())                                    -- [1, vocab]
end}
