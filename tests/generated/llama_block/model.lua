-- One Llama decoder block (tools/make_llama_block_case.py): RMSNorm,
-- grouped-query attention (6 heads, 2 kv heads) with rotary embedding on
-- runtime positions, SwiGLU; GGUF names and GGUF's adjacent-pair rotation
local nn = require "nn"
weights("model.safetensors")
local x = input{"x", {1, 7, 96}}
local pos = input{"pos", {1, 7}, "i64"}
local attn = {query = "attn_q", key = "attn_k", value = "attn_v", out = "attn_output"}
local h = x + nn.multi_head_attention("blk.0", nn.rms_norm("blk.0.attn_norm", x, {eps = 1e-5}),
  {heads = 6, kv_heads = 2, names = attn, bias = false, mask = "causal",
   rope = {positions = pos, theta = 1e5, max_pos = 32, interleaved = true}})
local ffn = {gate = "ffn_gate", up = "ffn_up", down = "ffn_down"}
output(h + nn.swiglu("blk.0", nn.rms_norm("blk.0.ffn_norm", h, {eps = 1e-5}), {d_ff = 128, names = ffn}), "y")
