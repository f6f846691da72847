/* onnx_ort_lstm.h — ONNX Runtime's com.microsoft DynamicQuantizeLSTM (what
 * onnxruntime.quantization.quantize_dynamic makes of an LSTM) imported as
 * kiln's LSTM, its int8 weights dequantized at compile time. */
#ifndef KILN_ONNX_ORT_LSTM_H
#define KILN_ONNX_ORT_LSTM_H

#include "../ir/ir.h"
#include "onnx.pb-c.h"

/* Is the node ONNX Runtime's DynamicQuantizeLSTM? */
bool ort_lstm_is(const char *domain, const char *op_type);

/* Add np to g as an LSTM node named nname: W_quantized [D, I, 4H] and
 * R_quantized [D, H, 4H] (int8 or uint8, a scale and zero point per
 * direction or per column, all initializers) become f32 constants in
 * LSTM's layout, (q - zero_point) * scale, transposed to [D, 4H, I] and
 * [D, 4H, H]; the other inputs and the attributes are LSTM's. False with
 * d set on anything else. */
bool ort_lstm_import(Graph *g, const Onnx__NodeProto *np, const char *nname, Diag *d);

#endif
