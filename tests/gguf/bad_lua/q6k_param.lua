-- args: --weights @DIR/q6k.gguf
-- expect: param 'blk.0.ffn_down.weight':
-- expect: q6k.gguf: tensor 'blk.0.ffn_down.weight' is Q6_K; kiln reads F32, F16, Q8_0, Q4_0, Q4_1
local w = param{"blk.0.ffn_down.weight", {64, 256}}
output(input{"x", {1, 256}}:matmul(w:transpose()), "y")
