-- model.lua — binds every tensor of tests/gguf/tiny_llama.gguf by its
-- llama.cpp name (run with --weights tiny_llama.gguf --strict-weights):
-- each matrix W ([out, in] as kiln sees it, GGUF ne reversed) gives
-- x @ W^T, each norm x * w, so the outputs show every value of every
-- tensor, F32, F16 and the Q8_0 / Q4_0 / Q4_1 blocks (DequantizeBlocks)
-- alike. make_bind_case.py wrote the reference outputs with the gguf
-- package's own dequantization. The sizes come from gguf_meta.
local d = gguf_meta("llama.embedding_length")
local ffn = gguf_meta("llama.feed_forward_length")
local heads, kv_heads = gguf_meta("llama.attention.head_count"), gguf_meta("llama.attention.head_count_kv")
local kv = d // heads * kv_heads
local vocab = gguf_meta("llama.vocab_size")
assert(gguf_meta("general.architecture") == "llama")
assert(gguf_meta("llama.rope.freq_base") == 10000.0)
assert(gguf_meta("llama.no_such_key", 7) == 7)

local x = input{"x", {2, d}}
local xf = input{"xf", {2, ffn}}
local function lin(name, rows, cols, from)
  output((from or x):matmul(param{name, {rows, cols}}:transpose()), "y." .. name)
end
lin("token_embd.weight", vocab, d)
for n = 0, gguf_meta("llama.block_count") - 1 do
  local b = "blk." .. n .. "."
  output(x * param{b .. "attn_norm.weight", {d}}, "y." .. b .. "attn_norm.weight")
  lin(b .. "attn_q.weight", d, d)
  lin(b .. "attn_k.weight", kv, d)
  lin(b .. "attn_v.weight", kv, d)
  lin(b .. "attn_output.weight", d, d)
  output(x * param{b .. "ffn_norm.weight", {d}}, "y." .. b .. "ffn_norm.weight")
  lin(b .. "ffn_gate.weight", ffn, d)
  lin(b .. "ffn_up.weight", ffn, d)
  lin(b .. "ffn_down.weight", d, ffn, xf)
end
output(x * param{"output_norm.weight", {d}}, "y.output_norm.weight")
lin("output.weight", vocab, d)
