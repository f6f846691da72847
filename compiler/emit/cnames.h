/* cnames.h — C identifiers for generated code: a model's names ("/enc/layers.0/
 * self_attn/MatMul_output_0", "layers.0.wq") made into readable, unique,
 * C-safe identifiers that shadow nothing the generated file declares or
 * includes. One NameSet per generated file holds every identifier taken. */
#ifndef KILN_CNAMES_H
#define KILN_CNAMES_H

#include "../base/base.h"

typedef struct NameSet {
  Arena *arena;
  const char **slot; /* open addressing; NULL = empty */
  int cap, n;
} NameSet;

NameSet *nameset_new(Arena *a);
bool nameset_has(const NameSet *s, const char *name);
void nameset_add(NameSet *s, const char *name);
/* Every identifier token of C text (keywords, locals, macros alike). */
void nameset_add_tokens(NameSet *s, const char *text);

/* True for names a generated identifier must not take: C keywords, the
 * generated functions' own parameters (ws, workspace, weights, state), the
 * macros and functions of the headers the generated code includes
 * (expf, memcpy, INFINITY, int64_t, KILN_*). */
bool cname_reserved(const char *s);
/* s as a C identifier: runs of characters other than [A-Za-z0-9] become
 * one '_', no leading or trailing '_', `prefix` put in front when it
 * would start with a digit (or be empty); at most 60 characters, keeping
 * the tail (the most specific part of a path-like name). */
const char *cname_sanitize(Arena *a, const char *s, const char *prefix);
/* A fresh identifier from `stem` (sanitized, then suffixed _2, _3, ... when
 * taken or reserved), added to s. */
const char *cname_unique(NameSet *s, const char *stem, const char *prefix);

#endif
