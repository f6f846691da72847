/* onnx_decoder.h — `kiln compile decoder_with_past.onnx --kv-cache=N`: an
 * ONNX decoder exported with past_key_values inputs and present outputs
 * turned into a generative model (Graph.decoder) with a prefill and a
 * step entry over KV-cache states (onnx_decoder.c says which patterns). */
#ifndef KILN_ONNX_DECODER_H
#define KILN_ONNX_DECODER_H

#include "../ir/ir.h"

/* Does g (an imported ONNX graph) have past_key_values inputs? */
bool onnx_has_past_inputs(const Graph *g);
/* A new graph in g's arena: g's forward pass twice, for `prefill` tokens
 * and for one, with every Concat(past, new) a CacheWrite into a cache of
 * ctx positions and the attention that reads it a CachedAttention; NULL
 * + d (one line naming the node or input and what was expected) when the
 * model does not have that shape. 1 <= prefill <= ctx. The caches are
 * kv_dt: f32, or f16/bf16 (f32 keys and values rounded as they are
 * stored). */
Graph *onnx_decoder_from_past(Graph *g, int64_t ctx, int64_t prefill, DType kv_dt, Diag *d);

#endif
