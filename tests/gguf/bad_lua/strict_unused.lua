-- args: --weights @DIR/tiny_llama.gguf --strict-weights
-- expect: tensor 'blk.0.attn_norm.weight' (f32[64]) is not a parameter of the model (20 of 21 tensors unused)
local w = param{"token_embd.weight", {256, 64}}
output(input{"x", {1, 64}}:matmul(w:transpose()), "y")
