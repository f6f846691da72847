/* npy.h — tensor files in and out of kiln run, check and bench: NumPy's
 * .npy format (versions 1.0, 2.0 and 3.0; little-endian, C order; the
 * element types kiln computes with) beside ONNX's serialized TensorProto
 * (.pb), told apart by the file's extension. Every size and offset read
 * from a file is checked before use, and every error names the file. */
#ifndef KILN_NPY_H
#define KILN_NPY_H

#include "../ir/ir.h"

/* A .npy file's bytes into t (its data copied into arena a). On failure
 * false, with d->file = path (when d had no error yet) and a message
 * saying what is wrong and what was expected. */
bool npy_parse(Arena *a, const void *bytes, size_t len, const char *path, Tensor *t, Diag *d);
/* t as a version 1.0 .npy file (header padded to 64 bytes) into *out
 * (appended); false + d for a type .npy cannot hold (bf16). */
bool npy_serialize(const Tensor *t, Buf *out, Diag *d);

/* True when path ends in ".npy". */
bool tensor_file_is_npy(const char *path);
/* The tensor in path: .npy by its extension, else a TensorProto. Errors
 * name the file (d->file = path). */
bool tensor_file_read(Arena *a, const char *path, Tensor *t, Diag *d);
/* t written atomically as path: .npy by its extension, else a TensorProto
 * named `name`. False + d (naming path), and no file, on failure. */
bool tensor_file_write(const char *path, const Tensor *t, const char *name, Diag *d);

/* t, read from path, fits graph input v: the same element type and rank,
 * and the same size wherever v fixes one (symbolic dims take the file's);
 * else false + d naming path. */
bool tensor_file_fits_input(const char *path, const Tensor *t, const Value *v, Diag *d);
/* One --input NAME=FILE flag of kiln run or kiln bench: the file read
 * into in[i] for g's input i named NAME (given[i] set). Its element type
 * and rank must be the input's, and so must every dim the model fixes;
 * errors name the flag or the file. */
bool tensor_file_read_input(Arena *a, const Graph *g, const char *flag, Tensor *in, bool *given,
                            Diag *d);

#endif
