-- args: --weights @DIR/kquant.gguf
-- expect: param 'blk.0.attn_q.weight':
-- expect: kquant.gguf: tensor 'blk.0.attn_q.weight' is Q2_K; kiln reads F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K
local w = param{"blk.0.attn_q.weight", {16, 256}}
output(input{"x", {1, 256}}:matmul(w:transpose()), "y")
