/* tokenizer.h — a GGUF model's tokenizer as tables in the generated C or
 * its weights blob, so an app (examples/generate.c) can turn text into
 * token ids and back with nothing beside the model.
 *
 * Byte-level BPE (tokenizer.ggml.model "gpt2": GPT-2, SmolLM, Llama 3,
 * Qwen) and SentencePiece (model "llama": Gemma, Llama 2, Mistral; the
 * pieces as stored, their scores, the <0xNN> byte tokens as byte_token,
 * NAME_TOKENIZER_SPM 1). kiln resolves everything it can at compile time: each token's text
 * is decoded from GPT-2's byte-to-unicode form to the bytes it stands for,
 * and each merge "left right" becomes three token ids (left, right, merged),
 * in rank order. What the app still does is the pre-tokenization (a regex's
 * worth of splitting) and the merge loop.
 *
 * What is written (NAME is the model's prefix; README "Generating text"):
 *   header: NAME_TOKENS, NAME_MERGES, NAME_TOKEN_TEXT_SIZE, NAME_BOS_ID,
 *           NAME_EOS_ID, NAME_UNK_ID, NAME_PAD_ID (-1 when absent),
 *           NAME_ADD_BOS (0/1), NAME_TOKENIZER_PRE ("smollm", "" when
 *           absent), NAME_TOKEN_NORMAL .. NAME_TOKEN_BYTE (GGUF's token
 *           types), the struct NAME_tokenizer of the five tables' pointers
 *           and NAME_tokenizer_tables(), which returns it;
 *   tables: token_text (every token's bytes, each followed by a NUL),
 *           token_offset (where each starts; one more entry, the end),
 *           token_type, byte_token (the token of each single byte, -1
 *           when none), merges (NAME_MERGES triples, flat, then -1).
 * With an Emit in blob mode (--weights=blob) the tables are weight arrays
 * (emit_const_array): they go into the weights blob beside the model's
 * constants, the .c holds only NAME_tokenizer_tables(), which reads them
 * through the bound blob and returns NULL pointers before a bind.
 * Otherwise (inline weights, or no model: tests/generate/tok_stub.c) they
 * are static arrays of literals in the .c: the text one string literal in
 * lines of about 100 characters, the integers bare, 16-24 a line.
 * Output is deterministic: the same vocabulary gives the same bytes. */
#ifndef KILN_TOKENIZER_H
#define KILN_TOKENIZER_H

#include "../base/base.h"
#include "../formats/gguf.h"

/* GGUF's token types (llama.cpp's llama_token_type) */
enum {
  TOKEN_NORMAL = 1,
  TOKEN_UNKNOWN = 2,
  TOKEN_CONTROL = 3,
  TOKEN_USER_DEFINED = 4,
  TOKEN_UNUSED = 5,
  TOKEN_BYTE = 6,
};

/* A vocabulary as the GGUF keys give it, before any checking. */
typedef struct TokVocab {
  const char *path;           /* the model file, for messages */
  const char *model;          /* tokenizer.ggml.model, e.g. "gpt2" */
  const char *pre;            /* tokenizer.ggml.pre, or NULL */
  int ntokens;
  const char *const *tokens;  /* [ntokens]: the text as stored (GPT-2 byte-level form) */
  const size_t *token_len;    /* [ntokens] byte lengths, or NULL: strlen */
  const int32_t *types;       /* [ntokens], or NULL: all normal */
  int nmerges;
  const char *const *merges;  /* [nmerges]: "left right", rank order */
  const size_t *merge_len;    /* [nmerges] byte lengths, or NULL: strlen */
  int64_t bos, eos, unk, pad; /* token ids, -1 when the key is absent */
  bool add_bos;               /* tokenizer.ggml.add_bos_token */
  const float *scores;        /* [ntokens] SentencePiece's (model "llama"), else NULL */
  bool add_space_prefix;      /* tokenizer.ggml.add_space_prefix (SentencePiece) */
  bool has_chat_template;     /* tokenizer.chat_template is there */
} TokVocab;

struct Emit;

/* Append the tables (or, in blob mode, their accessor) to c (the generated
 * .c, after its #includes; in blob mode after the blob's struct and
 * bound_weights) and their macros and declarations to h (the header,
 * inside its include guard and extern "C" block). e: the model's emitter
 * (its names, and its blob in blob mode), or NULL for a tokenizer alone. False + d ("FILE: key 'tokenizer.ggml.merges': ...")
 * on a vocabulary kiln cannot use: a model other than gpt2, a normal token
 * that is not byte-level text, a merge whose parts or result are not
 * tokens, an id out of range, more than INT32_MAX of anything. */
bool tokenizer_emit_vocab(const TokVocab *v, const char *prefix, struct Emit *e, Buf *c, Buf *h, Diag *d);

/* The same from a GGUF file's tokenizer.ggml.* keys. Returns false + d
 * when the tokenizer is absent (no tokenizer.ggml.model) as well; call it
 * when that key is there. */
bool tokenizer_emit(const Gguf *gg, const char *prefix, struct Emit *e, Buf *c, Buf *h, Diag *d);
/* Whether gg has a tokenizer tokenizer_emit can write (model "gpt2"). */
bool tokenizer_present(const Gguf *gg);

/* GPT-2's byte-to-unicode map: the code point byte b is written as in
 * byte-level BPE text ('!'..'~' and most of Latin-1 as themselves, the
 * rest from U+0100 up). */
uint32_t tokenizer_byte_char(int b);

#endif
