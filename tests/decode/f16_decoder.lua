--[[ f16_decoder.lua — a small Llama-shaped decoder with random weights and
f16 KV caches for tests/decode/f16_match.sh: the shape of
tests/generate/tiny_decoder.lua with head dim 32 (keys read 16 values at a
time: the 16- and 8-wide conversions both apply) on one kv head, and a
context longer than the attention's chunk of 256 keys. ]]
local cfg = config{ctx = 300, prefill = 8, vocab = 50, d = 64, heads = 2, kv_heads = 1, layers = 2, d_ff = 96}
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
    local y = x:attention(q, x:cache(p .. "k_cache", k, {dtype = "f16"}), x:cache(p .. "v_cache", v, {dtype = "f16"}))
    h = h + linear(p .. "o", y:reshape(x.T, cfg.d), cfg.d)
    n = h:rms_norm(param{p .. "ffn_norm", {cfg.d}, init = "ones"}, 1e-5)
    local gate = linear(p .. "gate", n, cfg.d_ff)
    h = h + linear(p .. "down", gate * gate:sigmoid() * linear(p .. "up", n, cfg.d_ff), cfg.d)
  end
  h = h:gather(x.last):rms_norm(param{"out_norm", {cfg.d}, init = "ones"}, 1e-5)   -- [1, d]
  return h:matmul(emb:transpose())                                    -- [1, vocab]
end}
