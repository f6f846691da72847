/* tokenizer.h — a GGUF model's tokenizer as tables in the generated C, so
 * an app (examples/generate.c) can turn text into token ids and back with
 * no file beside the model.
 *
 * Byte-level BPE only (tokenizer.ggml.model "gpt2": GPT-2, SmolLM, Llama 3,
 * Qwen). kiln resolves everything it can at compile time: each token's text
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
 *           types), and the arrays' declarations;
 *   .c:     NAME_token_text (every token's bytes, each followed by a NUL),
 *           NAME_token_offset (where each starts; one more entry, the end),
 *           NAME_token_type, NAME_byte_token (the token of each single
 *           byte, -1 when none), NAME_merges (NAME_MERGES triples, flat).
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
} TokVocab;

/* Append the tables to c (the generated .c, after its #includes) and their
 * macros and declarations to h (the header, inside its include guard and
 * extern "C" block). False + d ("FILE: key 'tokenizer.ggml.merges': ...")
 * on a vocabulary kiln cannot use: a model other than gpt2, a normal token
 * that is not byte-level text, a merge whose parts or result are not
 * tokens, an id out of range, more than INT32_MAX of anything. */
bool tokenizer_emit_vocab(const TokVocab *v, const char *prefix, Buf *c, Buf *h, Diag *d);

/* The same from a GGUF file's tokenizer.ggml.* keys. Returns false + d
 * when the tokenizer is absent (no tokenizer.ggml.model) as well; call it
 * when that key is there. */
bool tokenizer_emit(const Gguf *gg, const char *prefix, Buf *c, Buf *h, Diag *d);
/* Whether gg has a tokenizer tokenizer_emit can write (model "gpt2"). */
bool tokenizer_present(const Gguf *gg);

/* GPT-2's byte-to-unicode map: the code point byte b is written as in
 * byte-level BPE text ('!'..'~' and most of Latin-1 as themselves, the
 * rest from U+0100 up). */
uint32_t tokenizer_byte_char(int b);

#endif
