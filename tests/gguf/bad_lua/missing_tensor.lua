-- args: --weights @DIR/tiny_llama.gguf
-- expect: no tensor 'blk.2.attn_q.weight' (f32[64,64]); expected one for each parameter; the file has 'token_embd.weight'
local w = param{"blk.2.attn_q.weight", {64, 64}}
output(input{"x", {1, 64}}:matmul(w), "y")
