--[[ nn.lua — layers for the transformer family, written in kiln's own DSL
(docs/lua.md, "The nn library"), bundled into kiln: `local nn = require "nn"`.

Each function adds nodes to the graph the script is building, nothing more:
there are no module objects. A layer with weights takes a name prefix and
makes its params as `prefix .. ".weight"`, `prefix .. ".bias"`, ..., so a
checkpoint binds by name (`weights(...)`, `--weights`). PyTorch conventions
throughout: a Linear weight is [out, in] and y = x·Wᵀ + b; the encoder and
decoder layers use torch.nn.Transformer's state_dict names
(self_attn.in_proj_weight, linear1, norm1, ...); multi_head_attention can
also take Hugging Face's names (query/key/value/output.dense).

Shapes: activations are [batch, seq, d_model]; inside attention the heads
are [batch, heads, seq, d_head]. Masks follow PyTorch: a boolean mask is
true where attention is blocked; a float mask is added to the scores.
Without bound weights, params get deterministic values (uniform ±1/√in, as
torch.nn.Linear), which is what the examples and tests use.
]]

local nn = {}

-- A score far enough below any real one that softmax gives it exactly 0,
-- yet finite, so two masks can be added and a fully masked row stays finite.
nn.MASKED = -1e9

local check = require "nn_check"
local is_tensor, need_tensor = check.is_tensor, check.need_tensor
local need_rank, need_int = check.need_rank, check.need_int
local options, pick = check.options, check.pick

-- Layers take their params' name prefix first; a tensor there is the
-- common slip of leaving it out.
local function need_name(name, fn)
  if type(name) ~= "string" then
    fail(string.format("nn.%s: the first argument is a %s; expected the params' name prefix, "
                       .. "e.g. nn.%s(\"layer0\", x, ...)", fn, type(name), fn))
  end
end

local function last_dim(x)
  return x.shape[x.rank]
end

-- ---- basic layers -----------------------------------------------------------

--- nn.linear(name, x, out_features [, {bias = true, seed = 0}]): x·Wᵀ + b
-- with params name.weight [out, in] and name.bias [out] (torch.nn.Linear).
function nn.linear(name, x, out_features, opts)
  need_name(name, "linear")
  opts = options(opts, "linear", {"bias", "seed"})
  need_tensor(x, "linear", "x")
  need_int(out_features, "linear", "out_features")
  local in_features = last_dim(x)
  local bound = 1 / math.sqrt(in_features)
  local w = param{name .. ".weight", {out_features, in_features}, init = "uniform",
                  bound = bound, seed = opts.seed}
  local y = x:matmul(w:transpose())
  if opts.bias ~= false then
    y = y + param{name .. ".bias", {out_features}, init = "uniform", bound = bound,
                  seed = opts.seed}
  end
  return y:named(name)
end

--- nn.embedding(name, ids, num, dim [, {std = 1, seed = 0}]): rows of
-- name.weight [num, dim] picked by the integer ids; returns the rows and
-- the weight (to tie an output projection to it).
function nn.embedding(name, ids, num, dim, opts)
  need_name(name, "embedding")
  opts = options(opts, "embedding", {"std", "seed"})
  need_tensor(ids, "embedding", "ids")
  need_int(num, "embedding", "num")
  need_int(dim, "embedding", "dim")
  if ids.dtype ~= "i64" and ids.dtype ~= "i32" then
    fail(string.format("nn.embedding: ids are %s; expected i64 or i32 token ids", ids.dtype))
  end
  local w = param{name .. ".weight", {num, dim}, init = "normal", std = opts.std or 1,
                  seed = opts.seed}
  return w:gather(ids), w
end

--- nn.layer_norm(name, x [, {eps = 1e-5}]): normalise the last axis, then
-- scale by name.weight and shift by name.bias (both [d]).
function nn.layer_norm(name, x, opts)
  need_name(name, "layer_norm")
  opts = options(opts, "layer_norm", {"eps"})
  need_tensor(x, "layer_norm", "x")
  local d = last_dim(x)
  local gamma = param{name .. ".weight", {d}, init = "ones"}
  local beta = param{name .. ".bias", {d}, init = "zeros"}
  return x:layer_norm(gamma, beta, opts.eps or 1e-5)
end

--- nn.rms_norm(name, x [, {eps = 1e-6}]): x / √(mean(x²) + eps) · name.weight
-- (RMSNorm, Zhang & Sennrich 2019; no mean subtraction, no bias): one
-- RMSNormalization node over the last axis.
function nn.rms_norm(name, x, opts)
  need_name(name, "rms_norm")
  opts = options(opts, "rms_norm", {"eps"})
  need_tensor(x, "rms_norm", "x")
  local gamma = param{name .. ".weight", {last_dim(x)}, init = "ones"}
  return x:rms_norm(gamma, opts.eps or 1e-6)
end

--- nn.relu(x): max(x, 0).
function nn.relu(x)
  need_tensor(x, "relu", "x")
  return x:relu()
end

--- nn.gelu(x [, approximate]): x·Φ(x) exactly (erf), or with the tanh
-- approximation when approximate is "tanh" (or true).
function nn.gelu(x, approximate)
  need_tensor(x, "gelu", "x")
  if approximate == true then
    approximate = "tanh"
  end
  return x:gelu(approximate or "none")
end

--- nn.softmax(x [, axis = -1])
function nn.softmax(x, axis)
  need_tensor(x, "softmax", "x")
  return x:softmax(axis or -1)
end

--- nn.dropout(x [, p]): the identity; kiln compiles for inference.
function nn.dropout(x, p)
  need_tensor(x, "dropout", "x")
  return x
end

--- nn.activation(x, how): how is "relu", "gelu", "gelu_tanh" or a function.
function nn.activation(x, how)
  if how == nil or how == "relu" then
    return x:relu()
  elseif how == "gelu" then
    return x:gelu("none")
  elseif how == "gelu_tanh" then
    return x:gelu("tanh")
  elseif type(how) == "function" then
    return how(x)
  end
  fail(string.format("nn: activation '%s'; expected \"relu\", \"gelu\", \"gelu_tanh\" or a "
                     .. "function", tostring(how)))
end

-- ---- positions and masks --------------------------------------------------------

-- The [len, dim] sinusoids as a constant.
local function sinusoids(len, dim)
  local rows = {}
  for pos = 0, len - 1 do
    local row = {}
    for j = 0, dim - 1 do
      local angle = pos / 10000 ^ ((j - j % 2) / dim)
      row[j + 1] = j % 2 == 0 and math.sin(angle) or math.cos(angle)
    end
    rows[pos + 1] = row
  end
  return const(rows, "f32")
end
local positions_of = {} -- "16x64" -> that constant, made once per size

--- nn.sinusoidal_positions(len, dim): the constant [len, dim] table of
-- Vaswani et al.: sin(pos / 10000^(2i/dim)) in even columns 2i, cos in odd
-- ones. Computed here in Lua, so it is baked into the generated C (once
-- per size, however often it is asked for).
function nn.sinusoidal_positions(len, dim)
  need_int(len, "sinusoidal_positions", "len")
  need_int(dim, "sinusoidal_positions", "dim")
  local key = len .. "x" .. dim
  positions_of[key] = positions_of[key] or sinusoids(len, dim)
  return positions_of[key]
end

--- nn.causal_mask(tq [, tk = tq]): boolean constant [tq, tk], true where
-- query i may not see key j: j > i + (tk - tq). With tk > tq the extra
-- keys (a memory before the segment) stay visible to every query.
function nn.causal_mask(tq, tk)
  tk = tk or tq
  need_int(tq, "causal_mask", "tq")
  need_int(tk, "causal_mask", "tk")
  local rows = {}
  for i = 1, tq do
    local row = {}
    for j = 1, tk do
      row[j] = j > i + (tk - tq)
    end
    rows[i] = row
  end
  return const(rows, "bool")
end

--- nn.padding_mask(ids, pad_id): boolean [batch, 1, 1, seq] from token ids
-- [batch, seq], true at padding: it blocks those keys for every head and
-- every query (PyTorch's key_padding_mask, broadcast).
function nn.padding_mask(ids, pad_id)
  need_rank(ids, 2, "padding_mask", "ids", "token ids [batch, seq]")
  return ids:eq(pad_id or 0):unsqueeze(1, 2)
end

-- The additive form of each boolean mask tensor, made once however many
-- layers use the mask (weak keys: a table entry never keeps a tensor alive).
local additive_of = setmetatable({}, {__mode = "k"})
local causal_of = {} -- "16x16" -> the additive causal mask of those sizes

--- nn.additive_mask(mask, tq, tk): any mask as a float tensor to add to
-- the scores, or nil. mask: nil; "causal"; a boolean tensor (true =
-- blocked); a float tensor (used as is); or a list of these (combined).
function nn.additive_mask(mask, tq, tk)
  if mask == nil or mask == false then
    return nil
  elseif mask == "causal" then
    local key = tq .. "x" .. tk
    causal_of[key] = causal_of[key] or nn.additive_mask(nn.causal_mask(tq, tk), tq, tk)
    return causal_of[key]
  elseif is_tensor(mask) then
    if mask.dtype == "bool" then
      additive_of[mask] = additive_of[mask] or where(mask, nn.MASKED, 0.0)
      return additive_of[mask]
    end
    return mask
  elseif type(mask) == "table" then
    local sum
    for _, m in ipairs(mask) do
      local a = nn.additive_mask(m, tq, tk)
      if a then
        sum = sum and sum + a or a
      end
    end
    return sum
  end
  fail(string.format("nn: mask is a %s; expected nil, \"causal\", a boolean or float tensor, "
                     .. "or a list of them", type(mask)))
end

-- ---- attention ------------------------------------------------------------------

--- nn.split_heads(x, heads): [batch, seq, heads·d_head] -> [batch, heads, seq, d_head].
function nn.split_heads(x, heads)
  local b, t, d = x.shape[1], x.shape[2], x.shape[3]
  return x:reshape(b, t, heads, d // heads):permute(0, 2, 1, 3)
end

--- nn.merge_heads(x [, name]): [batch, heads, seq, d_head] -> [batch, seq,
-- heads·d_head]; name (optional) names the result in the IR and the C.
function nn.merge_heads(x, name)
  local b, h, t, dh = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
  local y = x:permute(0, 2, 1, 3) -- the values the reshape views: the name goes here
  if name then
    y = y:named(name)
  end
  return y:reshape(b, t, h * dh)
end

--- nn.repeat_kv(x, groups): [b, h, t, d] -> [b, h·groups, t, d], each head
-- repeated groups times in place (head j reads x's head j // groups):
-- Hugging Face's repeat_kv, which the attention fusion reads through
-- without making the copy.
function nn.repeat_kv(x, groups)
  need_rank(x, 4, "repeat_kv", "x", "[batch, heads, seq, d_head]")
  if groups == 1 then
    return x
  end
  local b, h, t, d = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
  return x:unsqueeze(2):expand(b, h, groups, t, d):reshape(b, h * groups, t, d)
end

--- nn.attention(q, k, v [, {mask, scale, normalize}]): scaled dot-product
-- attention on heads [batch, heads, seq, d_head]: normalize(q·kᵀ·scale +
-- mask)·v, scale 1/√d_head, normalize softmax over the keys (a function of
-- the scores can replace it: sparsemax, entmax, top-k, ...). Written as
-- MatMul → Mul → Add → Softmax → MatMul, the pattern kiln's attention
-- fusion looks for. k and v may have fewer heads than q (grouped-query
-- attention: heads a multiple of theirs; query head h reads kv head
-- h // (heads / kv_heads), through nn.repeat_kv).
function nn.attention(q, k, v, opts)
  opts = options(opts, "attention", {"mask", "scale", "normalize"})
  need_rank(q, 4, "attention", "q", "[batch, heads, seq, d_head]")
  need_rank(k, 4, "attention", "k", "[batch, kv_heads, seq_k, d_head]")
  local h, hkv = q.shape[2], k.shape[2]
  if h ~= hkv then
    if h % hkv ~= 0 or v.shape[2] ~= hkv then
      fail(string.format("nn.attention: q has %d heads, k %d and v %d; expected k and v with a divisor "
                         .. "of q's heads (grouped-query attention)", h, hkv, v.shape[2]))
    end
    k, v = nn.repeat_kv(k, h // hkv), nn.repeat_kv(v, h // hkv)
  end
  local tq, tk = q.shape[3], k.shape[3]
  local scores = q:matmul(k:transpose(-2, -1)) * (opts.scale or 1 / math.sqrt(q.shape[4]))
  local mask = nn.additive_mask(opts.mask, tq, tk)
  if mask then
    scores = scores + mask
  end
  local probs = opts.normalize and opts.normalize(scores) or scores:softmax(-1)
  return probs:matmul(v)
end

-- The weights of the three input projections, by naming scheme:
-- "torch" packs them in one [3d, d] matrix (nn.MultiheadAttention);
-- a table names one Linear per projection, relative to the layer's prefix.
local SEPARATE = {query = "q_proj", key = "k_proj", value = "v_proj", out = "out_proj"}

-- torch's packed in_proj_weight [3d, d] and in_proj_bias [3d] (or nil
-- with bias = false) of the attention name.
local function packed_weights(name, d, opts)
  local bound = 1 / math.sqrt(d)
  local w = param{name .. ".in_proj_weight", {3 * d, d}, init = "uniform", bound = bound,
                  seed = opts.seed}
  local b = opts.bias ~= false and
            param{name .. ".in_proj_bias", {3 * d}, init = "uniform", bound = bound,
                  seed = opts.seed}
  return w, b
end

-- Cross-attention's q from x, and k, v from memory: slices of the packed
-- weight (a constant, so the slices fold away at compile time).
local function cross_q(x, w, b, d)
  local q = x:matmul(w:narrow(0, 0, d):transpose())
  return b and q + b:narrow(0, 0, d) or q
end
local function cross_kv(memory, w, b, d)
  local kv = memory:matmul(w:narrow(0, d, 2 * d):transpose())
  if b then kv = kv + b:narrow(0, d, 2 * d) end
  return kv:split(2, -1)
end

-- q, k, v for torch's packed weights: self-attention takes one product
-- and splits it; cross-attention slices the weight.
local function packed_qkv(name, x, memory, d, opts)
  local w, b = packed_weights(name, d, opts)
  if memory == x then
    local qkv = x:matmul(w:transpose())
    if b then qkv = qkv + b end
    return qkv:split(3, -1)
  end
  local k, v = cross_kv(memory, w, b, d)
  return cross_q(x, w, b, d), k, v
end

-- A copy of the options table t with heads = h.
local function with_heads(t, h)
  local c = {}
  for key, val in pairs(t) do c[key] = val end
  c.heads = h
  return c
end

--- nn.multi_head_attention(name, x, {heads, kv_heads, rope, memory, mask,
-- names, bias, normalize, seed}): multi-head attention, self (keys and
-- values from x) or cross (from memory, [batch, seq_k, d]). names: "torch"
-- (default: name.in_proj_weight/in_proj_bias, name.out_proj), "separate"
-- (q_proj, k_proj, v_proj, out_proj) or a table {query=, key=, value=,
-- out=} of Linear names under name. kv_heads (with separate names):
-- grouped-query attention, K and V projections of kv_heads·d_head. rope:
-- the options of x:rope{...} (positions, theta, max_pos, ...), applied to
-- the heads of q and k. Returns [batch, seq, d].
function nn.multi_head_attention(name, x, opts)
  need_name(name, "multi_head_attention")
  opts = options(opts, "multi_head_attention", {"heads", "kv_heads", "rope", "memory", "mask", "names",
                                                "bias", "scale", "normalize", "seed"})
  need_rank(x, 3, "multi_head_attention", "x", "[batch, seq, d_model]")
  local memory = opts.memory or x
  need_rank(memory, 3, "multi_head_attention", "memory", "[batch, seq_k, d_model]")
  local d, heads = last_dim(x), opts.heads
  need_int(heads, "multi_head_attention", "heads")
  if d % heads ~= 0 then
    fail(string.format("nn.multi_head_attention: d_model %d is not divisible by %d heads", d,
                       heads))
  end
  local names = opts.names or "torch"
  local kv_heads = opts.kv_heads or heads
  need_int(kv_heads, "multi_head_attention", "kv_heads")
  if heads % kv_heads ~= 0 or (kv_heads ~= heads and names == "torch") then
    fail(string.format("nn.multi_head_attention: %d heads and %d kv_heads; expected kv_heads dividing "
                       .. "heads, with separate projections (names)", heads, kv_heads))
  end
  local q, k, v
  if names == "torch" then
    q, k, v = packed_qkv(name, x, memory, d, opts)
    names = {out = "out_proj"}
  else
    names = names == "separate" and SEPARATE or
            options(names, "multi_head_attention", {"query", "key", "value", "out"}, "names")
    local lin = {bias = opts.bias, seed = opts.seed}
    local dkv = d // heads * kv_heads
    q = nn.linear(name .. "." .. names.query, x, d, lin)
    k = nn.linear(name .. "." .. names.key, memory, dkv, lin)
    v = nn.linear(name .. "." .. names.value, memory, dkv, lin)
  end
  if opts.rope then -- on [b, t, heads·dh], before the head split: its transpose stays a view
    q, k = q:rope(with_heads(opts.rope, heads)), k:rope(with_heads(opts.rope, kv_heads))
  end
  local ctx = nn.attention(nn.split_heads(q, heads), nn.split_heads(k, kv_heads), nn.split_heads(v, kv_heads),
                           {mask = opts.mask, scale = opts.scale, normalize = opts.normalize})
  return nn.linear(name .. "." .. names.out, nn.merge_heads(ctx, name .. ".context"), d,
                   {bias = opts.bias, seed = opts.seed})
end

--- nn.feed_forward(name, x, d_ff [, {activation = "relu", names}]): the
-- position-wise network linear2(act(linear1(x))); names {inner=, outer=}
-- default to torch's {"linear1", "linear2"} under name.
function nn.feed_forward(name, x, d_ff, opts)
  need_name(name, "feed_forward")
  opts = options(opts, "feed_forward", {"activation", "names", "seed"})
  need_tensor(x, "feed_forward", "x")
  need_int(d_ff, "feed_forward", "d_ff")
  local names = opts.names and options(opts.names, "feed_forward", {"inner", "outer"}, "names") or
                {inner = "linear1", outer = "linear2"}
  local h = nn.linear(name .. "." .. names.inner, x, d_ff, {seed = opts.seed})
  h = nn.activation(h, opts.activation)
  return nn.linear(name .. "." .. names.outer, h, last_dim(x), {seed = opts.seed})
end

--- nn.swiglu(name, x, {d_ff [, names, bias = false, seed]}): Llama's
-- feed-forward network down(silu(gate(x)) · up(x)) (Shazeer 2020), three
-- Linears without biases named name.gate, name.up, name.down; names
-- {gate=, up=, down=} renames them (Hugging Face: gate_proj, up_proj,
-- down_proj; GGUF: ffn_gate, ffn_up, ffn_down). silu(g) · u is one
-- elementwise loop after fusion (fuse_chain).
local SWIGLU = {gate = "gate", up = "up", down = "down"}
function nn.swiglu(name, x, opts)
  need_name(name, "swiglu")
  opts = options(opts, "swiglu", {"d_ff", "names", "bias", "seed"})
  need_tensor(x, "swiglu", "x")
  need_int(opts.d_ff, "swiglu", "opts.d_ff")
  local names = opts.names and options(opts.names, "swiglu", {"gate", "up", "down"}, "names") or SWIGLU
  local lin = {bias = opts.bias or false, seed = opts.seed}
  local g = nn.linear(name .. "." .. names.gate, x, opts.d_ff, lin)
  local u = nn.linear(name .. "." .. names.up, x, opts.d_ff, lin)
  return nn.linear(name .. "." .. names.down, g:silu() * u, last_dim(x), lin)
end

--- nn.geglu(name, x, {d_ff, names, bias, seed, approximate}): the gated
-- feed-forward of Gemma (Shazeer, "GLU Variants Improve Transformer", 2020):
-- down(gelu(gate(x)) · up(x)), GELU's tanh form by default (approximate =
-- "none": erf); param names as nn.swiglu's.
function nn.geglu(name, x, opts)
  need_name(name, "geglu")
  opts = options(opts, "geglu", {"d_ff", "names", "bias", "seed", "approximate"})
  need_tensor(x, "geglu", "x")
  need_int(opts.d_ff, "geglu", "opts.d_ff")
  local names = opts.names and options(opts.names, "geglu", {"gate", "up", "down"}, "names") or SWIGLU
  local lin = {bias = opts.bias or false, seed = opts.seed}
  local g = nn.linear(name .. "." .. names.gate, x, opts.d_ff, lin)
  local u = nn.linear(name .. "." .. names.up, x, opts.d_ff, lin)
  return nn.linear(name .. "." .. names.down, g:gelu(opts.approximate or "tanh") * u, last_dim(x), lin)
end

-- ---- transformer layers (torch.nn.TransformerEncoderLayer / DecoderLayer) ----------

-- The options of the layers, and of the stacks of them (which add theirs).
local ENCODER_LAYER = {"heads", "d_ff", "mask", "pre_norm", "activation", "eps", "seed"}
local DECODER_LAYER = {"heads", "d_ff", "self_mask", "memory_mask", "pre_norm", "activation", "eps",
                       "seed"}
local function with_keys(keys, ...)
  local all = {table.unpack(keys)}
  for _, k in ipairs({...}) do all[#all + 1] = k end
  return all
end

-- x + f(x) around a sublayer, post-norm (the paper: norm(x + f(x))) or
-- pre-norm (x + f(norm(x))), with the norm named name.
local function residual(name, x, pre_norm, eps, f)
  if pre_norm then
    return x + f(nn.layer_norm(name, x, {eps = eps}))
  end
  return nn.layer_norm(name, x + f(x), {eps = eps})
end

--- nn.encoder_layer(name, x, {heads, d_ff, mask, pre_norm = false,
-- activation = "relu", eps = 1e-5}): self-attention then the feed-forward
-- network, each in a residual with a LayerNorm. Params: name.self_attn,
-- name.linear1, name.linear2, name.norm1, name.norm2.
function nn.encoder_layer(name, x, opts)
  need_name(name, "encoder_layer")
  opts = options(opts, "encoder_layer", ENCODER_LAYER)
  x = residual(name .. ".norm1", x, opts.pre_norm, opts.eps, function(h)
    return nn.multi_head_attention(name .. ".self_attn", h,
                                   {heads = opts.heads, mask = opts.mask, seed = opts.seed})
  end)
  return residual(name .. ".norm2", x, opts.pre_norm, opts.eps, function(h)
    return nn.feed_forward(name, h, opts.d_ff, {activation = opts.activation, seed = opts.seed})
  end)
end

--- nn.decoder_layer(name, x, memory, {heads, d_ff, self_mask = "causal",
-- memory_mask, pre_norm = false, activation = "relu", eps = 1e-5}): masked
-- self-attention, attention over the encoder's memory, the feed-forward
-- network. Params: name.self_attn, name.multihead_attn, name.linear1,
-- name.linear2, name.norm1..3.
function nn.decoder_layer(name, x, memory, opts)
  need_name(name, "decoder_layer")
  opts = options(opts, "decoder_layer", DECODER_LAYER)
  need_rank(memory, 3, "decoder_layer", "memory", "the encoder output [batch, seq, d_model]")
  local self_mask = opts.self_mask
  if self_mask == nil then
    self_mask = "causal"
  end
  x = residual(name .. ".norm1", x, opts.pre_norm, opts.eps, function(h)
    return nn.multi_head_attention(name .. ".self_attn", h,
                                   {heads = opts.heads, mask = self_mask, seed = opts.seed})
  end)
  x = residual(name .. ".norm2", x, opts.pre_norm, opts.eps, function(h)
    return nn.multi_head_attention(name .. ".multihead_attn", h,
                                   {heads = opts.heads, memory = memory,
                                    mask = opts.memory_mask, seed = opts.seed})
  end)
  return residual(name .. ".norm3", x, opts.pre_norm, opts.eps, function(h)
    return nn.feed_forward(name, h, opts.d_ff, {activation = opts.activation, seed = opts.seed})
  end)
end

--- nn.encoder(name, x, {layers, final_norm, ...}): opts.layers encoder
-- layers name.layers.0 .. name.layers.N-1 (torch.nn.TransformerEncoder),
-- then the LayerNorm name.norm when final_norm is true; the other options
-- go to every nn.encoder_layer.
function nn.encoder(name, x, opts)
  need_name(name, "encoder")
  opts = options(opts, "encoder", with_keys(ENCODER_LAYER, "layers", "final_norm"))
  need_int(opts.layers, "encoder", "opts.layers")
  local layer = pick(opts, ENCODER_LAYER)
  for i = 0, opts.layers - 1 do
    x = nn.encoder_layer(name .. ".layers." .. i, x, layer)
  end
  if opts.final_norm then
    x = nn.layer_norm(name .. ".norm", x, {eps = opts.eps})
  end
  return x
end

--- nn.decoder(name, x, memory, {layers, final_norm, ...}): opts.layers
-- decoder layers name.layers.0 .. (torch.nn.TransformerDecoder), then
-- name.norm when final_norm is true.
function nn.decoder(name, x, memory, opts)
  need_name(name, "decoder")
  opts = options(opts, "decoder", with_keys(DECODER_LAYER, "layers", "final_norm"))
  need_int(opts.layers, "decoder", "opts.layers")
  local layer = pick(opts, DECODER_LAYER)
  for i = 0, opts.layers - 1 do
    x = nn.decoder_layer(name .. ".layers." .. i, x, memory, layer)
  end
  if opts.final_norm then
    x = nn.layer_norm(name .. ".norm", x, {eps = opts.eps})
  end
  return x
end

-- ---- an encoder–decoder that decodes with a KV cache (decoder{}) -------------------

--- nn.decoder_memory(e, name, memory, {layers, heads, mask, bias, seed}):
-- in decoder{}'s encode, what nn.cached_decoder reads back from the
-- encoder's memory [1, src_len, d_model], computed once per source: each
-- layer's cross-attention keys and values (name.layers.i.multihead_attn's
-- packed in_proj weights, as nn.decoder) split into heads [1, heads,
-- src_len, d_head], stored as name.layers.i.memory_k and .memory_v; and,
-- when mask (the source's boolean padding mask) is given, its additive
-- form [1, 1, 1, src_len] as name.memory_mask.
function nn.decoder_memory(e, name, memory, opts)
  need_name(name, "decoder_memory")
  opts = options(opts, "decoder_memory", {"layers", "heads", "mask", "bias", "seed"})
  need_rank(memory, 3, "decoder_memory", "memory", "the encoder output [1, src_len, d_model]")
  need_int(opts.layers, "decoder_memory", "opts.layers")
  need_int(opts.heads, "decoder_memory", "opts.heads")
  local d = last_dim(memory)
  for i = 0, opts.layers - 1 do
    local layer = name .. ".layers." .. i
    local w, b = packed_weights(layer .. ".multihead_attn", d, opts)
    local k, v = cross_kv(memory, w, b, d)
    e:set(layer .. ".memory_k", nn.split_heads(k, opts.heads))
    e:set(layer .. ".memory_v", nn.split_heads(v, opts.heads))
  end
  if opts.mask then
    e:set(name .. ".memory_mask", nn.additive_mask(opts.mask, 1, memory.shape[2]))
  end
end

--- nn.cached_decoder(x, name, h, {layers, heads, d_ff, memory_mask = false,
-- pre_norm = false, final_norm, activation = "relu", eps = 1e-5, bias,
-- seed}): nn.decoder's layers (same params, same arithmetic) on decoder{}'s
-- chunk h [T, d_model] (x, forward's table): self-attention through the
-- caches name.layers.i.self_attn.k_cache / v_cache (x:cache, x:attention:
-- causal over every position so far), cross-attention over what
-- nn.decoder_memory stored (memory_mask = true when it was given a mask),
-- the feed-forward network. Returns [T, d_model].
function nn.cached_decoder(x, name, h, opts)
  need_name(name, "cached_decoder")
  opts = options(opts, "cached_decoder", {"layers", "heads", "d_ff", "memory_mask", "pre_norm", "final_norm",
                                          "activation", "eps", "bias", "seed"})
  need_rank(h, 2, "cached_decoder", "h", "the chunk [T, d_model]")
  need_int(opts.layers, "cached_decoder", "opts.layers")
  need_int(opts.heads, "cached_decoder", "opts.heads")
  local t, d, heads = h.shape[1], last_dim(h), opts.heads
  local dh = d // heads
  local mask = opts.memory_mask and x:get(name .. ".memory_mask") or nil
  local lin = {bias = opts.bias, seed = opts.seed}
  local y = h:reshape(1, t, d)
  for i = 0, opts.layers - 1 do
    local layer = name .. ".layers." .. i
    y = residual(layer .. ".norm1", y, opts.pre_norm, opts.eps, function(z)
      local at = layer .. ".self_attn"
      local q, k, v = packed_qkv(at, z, z, d, opts)
      local kc = x:cache(at .. ".k_cache", k:reshape(t, heads, dh))
      local vc = x:cache(at .. ".v_cache", v:reshape(t, heads, dh))
      local a = x:attention(q:reshape(t, heads, dh), kc, vc):named(at .. ".context") -- [T, heads, d_head]
      return nn.linear(at .. ".out_proj", a:reshape(1, t, d), d, lin)
    end)
    y = residual(layer .. ".norm2", y, opts.pre_norm, opts.eps, function(z)
      local at = layer .. ".multihead_attn"
      local w, b = packed_weights(at, d, opts)
      local a = nn.attention(nn.split_heads(cross_q(z, w, b, d), heads), x:get(layer .. ".memory_k"),
                             x:get(layer .. ".memory_v"), {mask = mask})
      return nn.linear(at .. ".out_proj", nn.merge_heads(a, at .. ".context"), d, lin)
    end)
    y = residual(layer .. ".norm3", y, opts.pre_norm, opts.eps, function(z)
      return nn.feed_forward(layer, z, opts.d_ff, {activation = opts.activation, seed = opts.seed})
    end)
  end
  if opts.final_norm then
    y = nn.layer_norm(name .. ".norm", y, {eps = opts.eps})
  end
  return y:reshape(t, d)
end

-- ---- the variants -----------------------------------------------------------------

-- Weighted, sparse, top-k, entmax and Transformer-XL attention live in
-- nn_variants.lua (bundled when present); their functions join this table.
-- Only "no such module" is tolerated: any other error in it is reported.
local found, variants = pcall(require, "nn_variants")
if found then
  for k, v in pairs(variants) do nn[k] = v end
elseif not tostring(variants):find("no such module", 1, true) then
  error(variants, 0)
end

return nn
