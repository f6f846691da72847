-- model.lua — binds the K-quant tensors of tests/gguf/kquant.gguf
-- (tools/make_kquant_gguf.py wrote both, and the reference outputs from
-- the gguf package's own dequantization): products x @ W^T by a Q4_K, a
-- Q5_K and a Q6_K matrix, and a Q6_K embedding table both gathered and
-- used as a (tied) output projection; Q5_0 and Q5_1 products of K 640.
-- The file's Q2_K tensor is not bound.
local up = param{"blk.0.ffn_up.weight", {64, 512}}
local gate = param{"blk.0.ffn_gate.weight", {48, 256}}
local down = param{"blk.0.ffn_down.weight", {32, 768}}
local embd = param{"token_embd.weight", {40, 256}}
local x, xg, xd = input{"x", {3, 512}}, input{"xg", {3, 256}}, input{"xd", {2, 768}}
local ids = input{"ids", {4}, "i64"}
local xa = input{"xa", {2, 640}}
local wk = param{"blk.0.attn_k.weight", {32, 640}}
local wv = param{"blk.0.attn_v.weight", {16, 640}}
output(x:matmul(up:transpose()), "y.up")
output(xg:matmul(gate:transpose()), "y.gate")
output(xd:matmul(down:transpose()), "y.down")
output(embd:gather(ids), "y.embd")
output(xg:matmul(embd:transpose()), "y.logits")
output(xa:matmul(wk:transpose()), "y.k")
output(xa:matmul(wv:transpose()), "y.v")
