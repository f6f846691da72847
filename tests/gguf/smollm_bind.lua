-- smollm_bind.lua — binds every one of the 272 tensors of the real
-- SmolLM2-135M-Instruct Q4_1 GGUF (run with --weights FILE
-- --strict-weights; ctest gguf_bind_smollm): the F32 norms as f32
-- constants, the Q4_1 block matrices and the Q8_0 embedding through
-- DequantizeBlocks, with the shapes gguf_meta gives. Not a language model:
-- each tensor is used once, in a chain that only has to be well-typed.
local d = gguf_meta("llama.embedding_length")
local ffn = gguf_meta("llama.feed_forward_length")
local kv = d // gguf_meta("llama.attention.head_count") * gguf_meta("llama.attention.head_count_kv")
local x = input{"x", {1, d}}
output(x:matmul(param{"token_embd.weight", {gguf_meta("llama.vocab_size"), d}}:transpose()), "logits")
local h = x
for n = 0, gguf_meta("llama.block_count") - 1 do
  local b = "blk." .. n .. "."
  local function w(name, rows, cols) return param{b .. name, {rows, cols}}:transpose() end
  h = h * param{b .. "attn_norm.weight", {d}} * param{b .. "ffn_norm.weight", {d}}
  local kvh = h:matmul(w("attn_k.weight", kv, d)) + h:matmul(w("attn_v.weight", kv, d))
  h = h:matmul(w("attn_q.weight", d, d)) + h:matmul(w("attn_output.weight", d, d)) + kvh:sum(-1, true)
  h = (h:matmul(w("ffn_gate.weight", ffn, d)) * h:matmul(w("ffn_up.weight", ffn, d))):matmul(w("ffn_down.weight", d, ffn))
end
output(h * param{"output_norm.weight", {d}}, "h")
