/* kv_cache.c — the kv_cache pass (`kiln compile --kv-cache=N`): an ONNX
 * decoder exported with its past (past_key_values.L.key/.value inputs,
 * present.* outputs) made a generative model with a prefill and a step
 * entry over KV-cache states. The rewrite is onnx_decoder.c's (the
 * patterns in onnx_decoder_match.c); it reads the graph as imported, so
 * the pass runs first, and only when --kv-cache is given. */
#include "onnx_decoder.h"
#include "passes.h"

bool pass_kv_cache_asked(const PassOptions *o) { return o->kv_cache > 0; }

bool pass_kv_cache(Graph *g, const PassOptions *o, Diag *d) {
  if (!o->kv_cache)
    return true;
  if (!onnx_has_past_inputs(g))
    return diag_error(d, "--kv-cache needs a decoder exported with its past (inputs past_key_values.L.key / "
                      ".value, use_cache=True); the model has no past_key_values input");
  int64_t prefill = o->kv_prefill ? o->kv_prefill : o->kv_cache < 64 ? o->kv_cache : 64;
  Graph *dec = onnx_decoder_from_past(g, o->kv_cache, prefill, o->kv_dtype ? o->kv_dtype : DT_F32, d);
  if (!dec)
    return false;
  *g = *dec; /* the new graph lives in g's arena; the old one's arrays stay there unused */
  return true;
}
