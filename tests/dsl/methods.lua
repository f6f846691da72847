-- methods.lua — every tensor method, operator and global of the DSL core
-- once (docs/lua.md), so each is checked against ONNX Runtime on the
-- exported model and against the interpreter.
local cfg = config{ b = 2, s = 3, d = 4 }
local x = input{"x", {cfg.b, cfg.s, cfg.d}}
local y = input{name = "y", shape = {cfg.b, cfg.s, cfg.d}}
local ids = input{"ids", {cfg.b, cfg.s}, "i64"}
local pos = x:abs() + 0.25

local outs = {}
local function out(t) outs[#outs + 1] = t end

-- operators and binary methods
out(x + y - x * y / (pos + 1))
out(-x + 2 * x ^ 2 - 1 / pos)
out(x % 0.3)
out(x:add(y):sub(1):mul(y):div(pos):pow(const(2.0)))
out(x:matmul(y:transpose(-2, -1)))
out(x:maximum(y):minimum(0.5))
out(x:prelu(const({0.1, 0.2, 0.3, 0.4})))
-- comparisons and logic, made numeric
local c = x:gt(y):land(x:lt(0.5)):lor(x:eq(y)):lxor(x:ge(0)):land(x:le(1)):lnot()
out(where(c, x, y))
out(where(x:ne(y), 1.0, 0.0))
-- unary methods
out(x:neg():abs():exp():log():sqrt():reciprocal())
out(x:tanh() + x:sigmoid() + x:relu() + x:erf() + x:sin() + x:cos())
out(x:floor() + x:ceil() + (x * 3):round() + x:sign() + x:softplus() + x:identity())
out(where(pos:log():isnan(), 0.0, 1.0))
out(x:gelu() + x:gelu("tanh"))
-- normalisation and softmax family
out(x:softmax() + x:softmax(1) + x:log_softmax(-1):exp())
out(x:sparsemax(-1) + x:entmax15(-1))
local g = param{"gamma", {cfg.d}, init = "ones"}
local bt = param{"beta", {cfg.d}, init = "uniform", seed = 7}
out(x:layer_norm(g, bt) + x:layer_norm(g, nil, 1e-3))
out(x:rms_norm(bt) + x:rms_norm(g, 1e-3, 1))
-- SiLU and rotary embedding (tables from theta; a start offset, interleaved, partial)
out(x:silu())
out(x:rope{heads = 2, theta = 100}:rope{heads = 1, dim = 2, interleaved = true, positions = 1, max_pos = 8})
-- layout
out(x:permute(2, 0, 1):reshape(cfg.d, -1))
out(x:reshape{cfg.b * cfg.s, cfg.d}:flatten(0))
out(x:narrow(2, 1, 2):unsqueeze(0):squeeze(0):expand(2, 2, 3, 2))
out(x:slice(-1, 0, -1):tile(1, 1, 2))
local a, b = x:split(2, -1)
local p, q, r = x:split({1, 1, 2}, -1)
out(cat({b, a, p, q, r}, -1))
-- reductions and indexing
out(x:sum() + x:mean(-1) :sum() + x:max({0, 1}):sum() + x:min(1, true):sum() + pos:prod(-1):sum())
out(x:argmax(-1):cast("f32") + x:argmax(1, true):cast("f32"):sum())
local v, i = x:topk(2)
out(v + i:cast("f32"))
local emb = param{"emb", {5, cfg.d}, seed = 3}
out(emb:gather(ids))
out(x:clip(-0.5, 0.5) + x:clip(0) + x:cumsum(-1))
out(ones({cfg.s, cfg.s}):triu(1) + ones({cfg.s, cfg.s}):tril() + full({cfg.s, cfg.s}, 0.5))
out(x:shape_of():cast("f32") + arange(3):cast("f32") + arange(0.5, 2.0, 0.5))
out(zeros({cfg.s}) + const(1.5) + const({{1, 2, 3}}, "f32"))
out(op("Gemm", {x:reshape(6, 4), y:reshape(6, 4)}, {transB = 1, alpha = 0.5}))
for k = 1, #outs do output(outs[k], "out" .. k) end
