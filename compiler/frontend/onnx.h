/* onnx.h — the ONNX frontend: model files into kiln's IR, and TensorProto
 * files (the backend-test layout's input_K.pb / output_K.pb) in and out. */
#ifndef KILN_ONNX_H
#define KILN_ONNX_H

#include "../ir/ir.h"

/* Import an ONNX model file into a new Graph in arena a. The protobuf
 * message is freed before returning. On failure returns NULL with d set. */
Graph *onnx_import(Arena *a, const char *path, Diag *d);
/* The same from bytes in memory; path names the model in messages and its
 * folder is where external data files are looked for. */
Graph *onnx_import_bytes(Arena *a, const void *bytes, size_t len, const char *path, Diag *d);

/* Write g (standard ops only: run decompose_kiln_ops first) as an ONNX
 * model at path, atomically: inputs, initializers with raw_data, nodes with
 * their origins as doc_string, value_info for typed intermediates, the
 * graph's opset. False + diag (and no file) on failure. */
bool onnx_export(Graph *g, const char *path, Diag *d);

/* Read one serialized TensorProto (.pb). name receives its name field (may
 * be empty). */
bool onnx_read_tensor(Arena *a, const char *path, Tensor *t, const char **name, Diag *d);
/* Write t as a serialized TensorProto with raw_data. */
bool onnx_write_tensor(const char *path, const Tensor *t, const char *name, Diag *d);

#endif
