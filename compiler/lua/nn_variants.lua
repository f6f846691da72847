--[[ nn_variants.lua — the transformer family's variations on attention, in
kiln's DSL (docs/lua.md, "Attention variants and state"). Bundled into kiln;
nn.lua merges these functions into `nn`, so scripts call nn.sparse_mask,
nn.topk_attention, ... after `local nn = require "nn"`.

  Weighted Transformer      branched attention, κ and α per branch   Ahmed et al. 2017
  Sparse Transformer        strided and fixed factorized masks       Child et al. 2019
  Explicit Sparse           top-k attention                          Zhao et al. 2019
  Adaptively Sparse         α-entmax attention, α learned per head   Correia et al. 2019
  Transformer-XL            relative positions, rel_shift, memory    Dai et al. 2019
  Adaptive input            embeddings sized by frequency cluster    Baevski & Auli 2019

Conventions are nn's: a layer takes a param name prefix first, activations
are [batch, seq, d], heads [batch, heads, seq, d_head], a boolean mask is
true where attention is blocked, and masks built from sizes alone are
compile-time constants (the attention kernel can skip their blocked tiles).
nn requires this module at its end, so the basics (nn.linear, ...) are
reached through nn() inside function bodies, never at load time.
]]

local V = {}

local function nn()
  return require "nn"
end

local check = require "nn_check"
local need_rank, need_int = check.need_rank, check.need_int
local options, pick = check.options, check.pick

-- The boolean constant [rows, cols] whose element (i, j) (0-based) is
-- blocked(i, j).
local function bool_table(rows, cols, blocked)
  local t = {}
  for i = 0, rows - 1 do
    local row = {}
    for j = 0, cols - 1 do
      row[j + 1] = blocked(i, j) and true or false
    end
    t[i + 1] = row
  end
  return t
end

-- x + f(x) with a LayerNorm after (post-norm) or before f (pre-norm).
local function residual(name, x, pre_norm, eps, f)
  if pre_norm then
    return x + f(nn().layer_norm(name, x, {eps = eps}))
  end
  return nn().layer_norm(name, x + f(x), {eps = eps})
end

--- nn.attention_layer(name, x, attend, {d_ff, pre_norm = false, activation,
-- eps}): an encoder layer around any attention: x + attend(x) and the
-- feed-forward network, each in a residual with a LayerNorm, with
-- nn.encoder_layer's param names (name.norm1, name.linear1, ...).
-- attend(h) returns [batch, seq, d].
function V.attention_layer(name, x, attend, opts)
  opts = options(opts, "attention_layer", {"d_ff", "pre_norm", "activation", "eps", "seed"})
  x = residual(name .. ".norm1", x, opts.pre_norm, opts.eps, attend)
  return residual(name .. ".norm2", x, opts.pre_norm, opts.eps, function(h)
    return nn().feed_forward(name, h, opts.d_ff, {activation = opts.activation, seed = opts.seed})
  end)
end

-- ---- Weighted Transformer (Ahmed, Keskar & Socher 2017) -------------------------

--- nn.weighted_attention(name, x, {branches, d_ff, mask, seed}): branched
-- attention. Each of the M branches is one attention head (d_head = d/M)
-- projected back to d by its own W_O,i [d_head, d] and scaled by κ_i; its
-- own ReLU feed-forward network (inner size d_ff) follows; the outputs are
-- summed with weights α_i:  Σ_i α_i · FFN_i(κ_i · head_i · W_O,i).
-- κ and α are normalised to sum to 1 (|w| / Σ|w|, a constant). Params:
-- name.{q,k,v}_proj, name.out_proj.weight [M, d_head, d], name.kappa [M],
-- name.alpha [M], name.ffn.linear1.{weight [M, d_ff, d], bias [M, d_ff]},
-- name.ffn.linear2.{weight [M, d, d_ff], bias [M, d]}.
local WEIGHTED = {"branches", "d_ff", "mask", "seed"}
function V.weighted_attention(name, x, opts)
  opts = options(opts, "weighted_attention", WEIGHTED)
  need_rank(x, 3, "weighted_attention", "x", "[batch, seq, d_model]")
  local m, d_ff = opts.branches, opts.d_ff
  need_int(m, "weighted_attention", "branches")
  need_int(d_ff, "weighted_attention", "d_ff")
  local d = x.shape[3]
  if d % m ~= 0 then
    fail(string.format("nn.weighted_attention: d_model %d is not divisible by %d branches", d, m))
  end
  local N = nn()
  local lin = {seed = opts.seed}
  local q = N.split_heads(N.linear(name .. ".q_proj", x, d, lin), m)
  local k = N.split_heads(N.linear(name .. ".k_proj", x, d, lin), m)
  local v = N.split_heads(N.linear(name .. ".v_proj", x, d, lin), m)
  local heads = N.attention(q, k, v, {mask = opts.mask})           -- [b, M, t, d/M]
  local bound = 1 / math.sqrt(d // m)
  local w_o = param{name .. ".out_proj.weight", {m, d // m, d}, init = "uniform", bound = bound,
                    seed = opts.seed}
  local function branch_weights(p)                                 -- [1, M, 1, 1], Σ = 1
    local w = param{name .. "." .. p, {m}, init = "uniform", bound = 1, seed = opts.seed}:abs()
    return (w / w:sum()):reshape(1, m, 1, 1)
  end
  local h = heads:matmul(w_o) * branch_weights("kappa")           -- [b, M, t, d]
  local function branch_linear(p, n_out, n_in, y)                  -- per-branch y·Wᵀ + b
    local bnd = 1 / math.sqrt(n_in)
    local w = param{p .. ".weight", {m, n_out, n_in}, init = "uniform", bound = bnd, seed = opts.seed}
    local b = param{p .. ".bias", {m, n_out}, init = "uniform", bound = bnd, seed = opts.seed}
    return y:matmul(w:transpose(-2, -1)) + b:reshape(m, 1, n_out)
  end
  h = branch_linear(name .. ".ffn.linear1", d_ff, d, h):relu()    -- [b, M, t, d_ff]
  h = branch_linear(name .. ".ffn.linear2", d, d_ff, h)           -- [b, M, t, d]
  return (h * branch_weights("alpha")):sum(1)                      -- [b, t, d]
end

--- nn.weighted_encoder_layer(name, x, {branches, d_ff, mask, eps, seed}):
-- the Weighted Transformer's layer: LayerNorm(x + branched attention). The
-- branches carry their own feed-forward networks, so there is no separate
-- one. Params under name.attn, and name.norm.
function V.weighted_encoder_layer(name, x, opts)
  opts = options(opts, "weighted_encoder_layer", {"branches", "d_ff", "mask", "eps", "seed"})
  return residual(name .. ".norm", x, false, opts.eps, function(h)
    return V.weighted_attention(name .. ".attn", h, pick(opts, WEIGHTED))
  end)
end

-- ---- Sparse Transformer (Child, Gray, Radford & Sutskever 2019) ------------------

-- Which positions j query i sees, per pattern and part ("local" is A(1) of
-- the paper, "summary" A(2)); causal: never j > i.
local PATTERNS = {
  strided = {
    ["local"] = function(i, j, l) return i - j <= l and j - i <= l end,  -- within l (A1: t = i-l .. i)
    summary = function(i, j, l) return (i - j) % l == 0 end,              -- every l-th
  },
  fixed = {
    ["local"] = function(i, j, l) return i // l == j // l end,           -- the same block
    summary = function(i, j, l, c) return j % l >= l - c or j == i end,  -- blocks' last c, and i
  },
}

--- nn.sparse_mask(t, {pattern = "strided", stride, c = 1, part = "both",
-- causal = true}): the Sparse Transformer's factorized pattern as a boolean
-- constant [t, t], true where query i may NOT attend to key j. pattern
-- "strided": A(1) = the previous stride positions (i - stride ≤ j ≤ i),
-- A(2) = every stride-th (stride divides i - j); "fixed": A(1) = the same
-- block of stride positions, A(2) = the last c positions of every block
-- (and i itself, so that no query of a head attending with A(2) alone is
-- left without keys). part: "local" (A1), "summary" (A2) or "both" (their
-- union: one head that sees both). causal = false makes the pattern
-- symmetric (no j ≤ i).
local SPARSE_MASK = {"pattern", "stride", "c", "part", "causal"}
function V.sparse_mask(t, opts)
  opts = options(opts, "sparse_mask", SPARSE_MASK)
  need_int(t, "sparse_mask", "t")
  need_int(opts.stride, "sparse_mask", "stride")
  local pattern = PATTERNS[opts.pattern or "strided"]
  if not pattern then
    fail(string.format("nn.sparse_mask: pattern '%s'; expected \"strided\" or \"fixed\"",
                       tostring(opts.pattern)))
  end
  local part, l, c = opts.part or "both", opts.stride, opts.c or 1
  if part ~= "both" and not pattern[part] then
    fail(string.format("nn.sparse_mask: part '%s'; expected \"local\", \"summary\" or \"both\"",
                       tostring(part)))
  end
  need_int(c, "sparse_mask", "c")
  local causal = opts.causal ~= false
  local function sees(i, j)
    if causal and j > i then
      return false
    end
    if part == "both" then
      return pattern["local"](i, j, l, c) or pattern.summary(i, j, l, c)
    end
    return pattern[part](i, j, l, c)
  end
  return const(bool_table(t, t, function(i, j) return not sees(i, j) end), "bool")
end

--- nn.sparse_head_masks(t, heads, opts): the Sparse Transformer's other
-- way to combine the two parts: half of the heads attend with A(1), half
-- with A(2) (even heads local, odd heads summary). A boolean constant
-- [heads, t, t]; opts as nn.sparse_mask's, without part.
local HEAD_MASKS = {"pattern", "stride", "c", "causal"}
function V.sparse_head_masks(t, heads, opts)
  opts = options(opts, "sparse_head_masks", HEAD_MASKS)
  need_int(heads, "sparse_head_masks", "heads")
  local parts = {}
  for h = 1, heads do
    local o = pick(opts, HEAD_MASKS)
    o.part = h % 2 == 1 and "local" or "summary"
    parts[h] = V.sparse_mask(t, o):unsqueeze(0)
  end
  return cat(parts, 0)
end

--- nn.sparse_attention(name, x, {heads, pattern, stride, c, causal,
-- combine = "union", seed}): nn.multi_head_attention under a sparse mask;
-- combine "union" gives every head both parts (nn.sparse_mask part
-- "both"), "heads" splits them across heads (nn.sparse_head_masks).
local SPARSE_ATTENTION_MASK = {"combine", "heads", "pattern", "stride", "c", "causal"}
function V.sparse_attention(name, x, opts)
  opts = options(opts, "sparse_attention", {"heads", "pattern", "stride", "c", "causal", "combine", "seed"})
  need_rank(x, 3, "sparse_attention", "x", "[batch, seq, d_model]")
  local mask = V.sparse_attention_mask(x.shape[2], pick(opts, SPARSE_ATTENTION_MASK))
  return nn().multi_head_attention(name, x, {heads = opts.heads, mask = mask, seed = opts.seed})
end

--- nn.sparse_attention_mask(t, opts): the mask nn.sparse_attention uses
-- ([t, t] for combine "union", [heads, t, t] for "heads"), for layers that
-- take a mask (nn.encoder_layer).
function V.sparse_attention_mask(t, opts)
  opts = options(opts, "sparse_attention_mask", SPARSE_ATTENTION_MASK)
  local combine = opts.combine or "union"
  if combine == "heads" then
    return V.sparse_head_masks(t, opts.heads, pick(opts, HEAD_MASKS))
  elseif combine ~= "union" then
    fail(string.format("nn.sparse_attention: combine '%s'; expected \"union\" or \"heads\"",
                       tostring(combine)))
  end
  local o = pick(opts, HEAD_MASKS)
  o.part = "both"
  return V.sparse_mask(t, o)
end

-- ---- Explicit Sparse Transformer (Zhao et al. 2019) ------------------------------

--- nn.topk_softmax(scores, k): softmax over each row's k largest scores
-- only; the others get probability 0 (they are set to nn.MASKED first).
-- The threshold is the row's k-th largest score (TopK), so ties with it
-- are kept too.
function V.topk_softmax(scores, k)
  need_int(k, "topk_softmax", "k")
  local n = scores.shape[scores.rank]
  if k > n then
    fail(string.format("nn.topk_softmax: k %d is more than the %d scores in a row", k, n))
  end
  local top = scores:topk(k, -1)                      -- [..., k], descending
  local kth = top:narrow(-1, k - 1, 1)                -- [..., 1]
  return where(scores:ge(kth), scores, nn().MASKED):softmax(-1)
end

--- nn.topk_attention(name, x, {heads, k, mask, seed}): multi-head
-- attention where each query attends to its k highest-scoring keys (after
-- the mask), the Explicit Sparse Transformer's top-k selection.
function V.topk_attention(name, x, opts)
  opts = options(opts, "topk_attention", {"heads", "k", "mask", "seed"})
  local k = opts.k
  need_int(k, "topk_attention", "k")
  return nn().multi_head_attention(name, x, {heads = opts.heads, mask = opts.mask, seed = opts.seed,
    normalize = function(s) return V.topk_softmax(s, k) end})
end

-- ---- Adaptively Sparse Transformers (Correia, Niculae & Martins 2019) --------------

local NORMALIZERS = {
  softmax = function(s) return s:softmax(-1) end,
  sparsemax = function(s) return s:sparsemax(-1) end,       -- α = 2
  entmax15 = function(s) return s:entmax15(-1) end,         -- α = 1.5
}

-- The normalizer of a per-head α: alpha a number in [1, 2] (one Entmax
-- with that attribute), "learned" (the paper's α = 1 + sigmoid(a), a =
-- name.alpha [heads], zeros unless bound: α = 1.5) or a tensor of the
-- heads' α values [heads] (a param, or an input: clamped to [1, 2] at run
-- time). Entmax reads a per-head α as [1, heads, 1, 1] against the scores
-- [batch, heads, seq_q, seq_k].
local function alpha_normalizer(name, alpha, heads)
  need_int(heads, "entmax_attention", "heads")
  if math.type(alpha) and alpha >= 1 and alpha <= 2 then
    return function(s) return op("Entmax", {s}, {alpha = alpha + 0.0}) end
  end
  local per_head
  if alpha == "learned" then
    per_head = param{name .. ".alpha", {heads}, init = "zeros"}:sigmoid() + 1
  elseif check.is_tensor(alpha) and alpha.rank == 1 and alpha.shape[1] == heads then
    per_head = alpha
  else
    fail(string.format("nn.entmax_attention: alpha is %s; expected a number in [1, 2], \"learned\" or "
                       .. "a tensor of the %d heads' values [%d]",
                       check.is_tensor(alpha) and "a tensor of shape [" .. table.concat(alpha.shape, ", ") .. "]"
                       or tostring(alpha), heads, heads))
  end
  per_head = per_head:reshape(1, heads, 1, 1)
  return function(s) return op("Entmax", {s, per_head}, {}) end
end

--- nn.entmax_attention(name, x, {heads, normalizer = "entmax15", alpha,
-- mask, seed}): multi-head attention whose probabilities are α-entmax of
-- the scores instead of softmax: normalizer "entmax15" (α = 1.5) or
-- "sparsemax" (α = 2) give exact zeros to low scores; "softmax" (α = 1)
-- is the baseline. alpha instead of normalizer: any α in [1, 2], the same
-- for every head, or one per head, "learned" as in the paper (α = 1 +
-- sigmoid(name.alpha)) or given as a tensor [heads] (the Entmax op:
-- bisection on the threshold).
function V.entmax_attention(name, x, opts)
  opts = options(opts, "entmax_attention", {"heads", "normalizer", "alpha", "mask", "seed"})
  local normalize
  if opts.alpha ~= nil then
    if opts.normalizer ~= nil then
      fail("nn.entmax_attention: both normalizer and alpha; expected one of them (normalizer "
           .. "\"entmax15\" is alpha = 1.5, \"sparsemax\" 2, \"softmax\" 1)")
    end
    normalize = alpha_normalizer(name, opts.alpha, opts.heads)
  else
    normalize = NORMALIZERS[opts.normalizer or "entmax15"]
    if not normalize then
      fail(string.format("nn.entmax_attention: normalizer '%s'; expected \"entmax15\", "
                         .. "\"sparsemax\" or \"softmax\"", tostring(opts.normalizer)))
    end
  end
  return nn().multi_head_attention(name, x, {heads = opts.heads, mask = opts.mask,
                                             seed = opts.seed, normalize = normalize})
end

-- ---- Transformer-XL (Dai et al. 2019) ------------------------------------------------

--- nn.rel_positions(klen, d): Transformer-XL's relative position
-- embeddings [klen, d] for the distances klen-1, ..., 1, 0 (row r is
-- distance klen-1-r): sin(dist·f_i) in the first d/2 columns, cos in the
-- last, f_i = 10000^(-2i/d). A constant.
function V.rel_positions(klen, d)
  need_int(klen, "rel_positions", "klen")
  need_int(d, "rel_positions", "d")
  if d % 2 ~= 0 then
    fail(string.format("nn.rel_positions: d %d is odd; expected an even size", d))
  end
  local rows = {}
  for r = 0, klen - 1 do
    local dist, row = klen - 1 - r, {}
    for i = 0, d // 2 - 1 do
      local angle = dist * 10000 ^ (-2 * i / d)
      row[i + 1], row[d // 2 + i + 1] = math.sin(angle), math.cos(angle)
    end
    rows[r + 1] = row
  end
  return const(rows, "f32")
end

--- nn.rel_shift(x): Transformer-XL's shift of the position scores x
-- [..., tq, tk] (tk = mlen + tq): out[i, j] = x[i, j + tq - 1 - i], the
-- score of query i against the distance of key j, for every j ≤ i + mlen;
-- the rest (blocked by the causal mask) get other scores. Done as in the
-- paper's code: pad a zero column in front, view as [tk+1, tq], drop the
-- first row, view back.
function V.rel_shift(x)
  local r = x.rank
  local tq, tk = x.shape[r - 1], x.shape[r]
  local lead = {}
  for i = 1, r - 2 do lead[i] = x.shape[i] end
  local function shape(a, b)
    local s = {table.unpack(lead)}
    s[#s + 1], s[#s + 2] = a, b
    return s
  end
  local zero = zeros(shape(tq, 1), x.dtype)
  local padded = cat({zero, x}, -1):reshape(shape(tk + 1, tq))
  return padded:narrow(r - 2, 1, tk):reshape(shape(tq, tk))
end

--- nn.rel_multi_head_attention(name, x, mem, {heads, d_head, mask =
-- "causal", key_mask, seed}): Transformer-XL's attention of the segment x
-- [b, t, d] over [mem; x] (mem [b, m, d], the previous segment's hidden
-- states, read but never trained through): scores (q + u)·kᵀ (content) +
-- rel_shift((q + v)·rᵀ) (position), r the projected nn.rel_positions,
-- u = name.r_w_bias and v = name.r_r_bias [heads, d_head], scaled by
-- 1/√d_head; mask "causal" hides keys after the query (the memory stays
-- visible), key_mask (optional, additive [.., m + t]) is added too.
-- Params (the reference code's names): name.qkv_net.weight, name.r_net.weight,
-- name.o_net.weight (no biases), name.r_w_bias, name.r_r_bias.
local REL_ATTENTION = {"heads", "d_head", "mask", "key_mask", "seed"}
function V.rel_multi_head_attention(name, x, mem, opts)
  opts = options(opts, "rel_multi_head_attention", REL_ATTENTION)
  need_rank(x, 3, "rel_multi_head_attention", "x", "[batch, seq, d_model]")
  need_rank(mem, 3, "rel_multi_head_attention", "mem", "[batch, mem_len, d_model]")
  local N = nn()
  local heads, dh = opts.heads, opts.d_head
  need_int(heads, "rel_multi_head_attention", "heads")
  need_int(dh, "rel_multi_head_attention", "d_head")
  local b, t, d, m = x.shape[1], x.shape[2], x.shape[3], mem.shape[2]
  local klen = m + t
  local lin = {bias = false, seed = opts.seed}
  local whole = cat({mem, x}, 1)                                          -- [b, klen, d]
  local q, k, v = N.linear(name .. ".qkv_net", whole, 3 * heads * dh, lin):split(3, -1)
  q = N.split_heads(q:narrow(1, m, t), heads)                              -- [b, H, t, dh]
  k, v = N.split_heads(k, heads), N.split_heads(v, heads)                  -- [b, H, klen, dh]
  local r = N.linear(name .. ".r_net", V.rel_positions(klen, d), heads * dh, lin)
  r = r:reshape(klen, heads, dh):permute(1, 2, 0)                          -- [H, dh, klen]
  local function bias(p)
    return param{name .. "." .. p, {heads, dh}, init = "normal", std = 0.1,
                 seed = opts.seed}:reshape(heads, 1, dh)
  end
  local content = (q + bias("r_w_bias")):matmul(k:transpose(-2, -1))     -- [b, H, t, klen]
  local position = V.rel_shift((q + bias("r_r_bias")):matmul(r))        -- [b, H, t, klen]
  local scores = (content + position) * (1 / math.sqrt(dh))
  local mask = N.additive_mask(opts.mask == nil and "causal" or opts.mask, t, klen)
  if mask then scores = scores + mask end
  if opts.key_mask then scores = scores + opts.key_mask end
  local ctx = N.merge_heads(scores:softmax(-1):matmul(v))                 -- [b, t, H·dh]
  return N.linear(name .. ".o_net", ctx, d, lin)
end

--- nn.xl_layer(name, x, mem, {heads, d_head, d_ff, mask, key_mask, eps,
-- seed}): one Transformer-XL decoder layer, post-norm as in the paper's
-- code: h = LayerNorm(x + rel attention), then LayerNorm(h + FFN(h)) with
-- a ReLU FFN. Params: name.dec_attn.* (nn.rel_multi_head_attention and
-- its name.dec_attn.layer_norm), name.pos_ff.CoreNet.0 / .3 (the FFN's
-- linears), name.pos_ff.layer_norm.
function V.xl_layer(name, x, mem, opts)
  opts = options(opts, "xl_layer", {"heads", "d_head", "d_ff", "mask", "key_mask", "eps", "seed"})
  need_int(opts.d_ff, "xl_layer", "d_ff")
  local N = nn()
  local h = N.layer_norm(name .. ".dec_attn.layer_norm",
                         x + V.rel_multi_head_attention(name .. ".dec_attn", x, mem, pick(opts, REL_ATTENTION)),
                         {eps = opts.eps})
  local ff = N.linear(name .. ".pos_ff.CoreNet.0", h, opts.d_ff, {seed = opts.seed}):relu()
  ff = N.linear(name .. ".pos_ff.CoreNet.3", ff, h.shape[3], {seed = opts.seed})
  return N.layer_norm(name .. ".pos_ff.layer_norm", h + ff, {eps = opts.eps})
end

--- nn.xl_memory(mem, h): the memory for the next segment: the last m
-- positions of [mem; h] (mem [b, m, d], h [b, t, d]): the newest hidden
-- states, older ones shifted out.
function V.xl_memory(mem, h)
  local m, t = mem.shape[2], h.shape[2]
  return cat({mem, h}, 1):narrow(1, t, m)
end

-- ---- Adaptive input representations (Baevski & Auli 2019) ---------------------------

--- nn.adaptive_embedding(name, ids, {vocab, d_embed, d_proj = d_embed,
-- cutoffs, div_val = 4, scale = true, seed}): token ids [b, t] to
-- [b, t, d_proj] with a vocabulary split at the cutoffs into clusters of
-- falling frequency: cluster i (ids cutoffs[i] .. cutoffs[i+1]-1, with 0
-- and vocab at the ends) has its own table name.emb_layers.i.weight
-- [size_i, d_embed / div_val^i] and projection name.emb_projs.i
-- [d_proj, d_embed / div_val^i]; a token is its cluster's row projected
-- to d_proj, times √d_proj when scale (Transformer-XL's AdaptiveEmbedding).
function V.adaptive_embedding(name, ids, opts)
  opts = options(opts, "adaptive_embedding", {"vocab", "d_embed", "d_proj", "cutoffs", "div_val", "scale",
                                              "seed"})
  need_rank(ids, 2, "adaptive_embedding", "ids", "token ids [batch, seq]")
  local vocab, d_embed = opts.vocab, opts.d_embed
  need_int(vocab, "adaptive_embedding", "vocab")
  need_int(d_embed, "adaptive_embedding", "d_embed")
  local d_proj, div = opts.d_proj or d_embed, opts.div_val or 4
  local ends = {0}
  for _, c in ipairs(opts.cutoffs or {}) do
    if math.type(c) ~= "integer" or c <= ends[#ends] or c >= vocab then
      fail(string.format("nn.adaptive_embedding: cutoff %s; expected increasing integers "
                         .. "between 1 and vocab-1 (%d)", tostring(c), vocab - 1))
    end
    ends[#ends + 1] = c
  end
  ends[#ends + 1] = vocab
  local sum
  for i = 0, #ends - 2 do
    local lo, hi = ends[i + 1], ends[i + 2]
    local d_i = d_embed // div ^ i
    if d_i < 1 then
      fail(string.format("nn.adaptive_embedding: cluster %d has d_embed / div_val^%d < 1", i, i))
    end
    d_i = math.tointeger(d_i)
    local table_i = param{name .. ".emb_layers." .. i .. ".weight", {hi - lo, d_i},
                          init = "normal", std = 1, seed = opts.seed}
    local proj_i = param{name .. ".emb_projs." .. i, {d_proj, d_i}, init = "uniform",
                         bound = 1 / math.sqrt(d_i), seed = opts.seed}
    local inside = ids:ge(lo):land(ids:lt(hi)):unsqueeze(-1)              -- [b, t, 1]
    local rows = table_i:gather((ids - lo):maximum(0):minimum(hi - lo - 1))
    local part = where(inside, rows:matmul(proj_i:transpose()), 0.0)     -- [b, t, d_proj]
    sum = sum and sum + part or part
  end
  if opts.scale ~= false then
    sum = sum * math.sqrt(d_proj)
  end
  return sum
end

return V
