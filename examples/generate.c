/* generate.c — text generation on the command line with a Llama-style
 * model compiled by kiln from a GGUF file (SmolLM2-135M-Instruct): encode
 * the prompt with the model's own byte-level BPE tokenizer (tables kiln
 * wrote into the model's weights blob, or its C with --weights-mode=inline),
 * prefill the KV cache, then pick the most likely token step by step
 * (greedy) and print the text as it comes.
 *
 *   $ export PATH=$PWD/build:$PATH
 *   $ gguf=$(bash tests/gguf/fetch_smollm.sh build/smollm)   # SmolLM2-135M-Instruct.Q4_1.gguf (docs-test: network)
 *   $ kiln compile examples/llama.lua --weights "$gguf" --set ctx=512 -o out/smol.c
 *   $ cc -O2 -march=native -ffp-contract=fast -Iout -c out/smol.c out/smol_weights.S
 *   $ cc -O2 -std=c11 -Iout examples/generate.c smol.o smol_weights.o -lm -o out/generate
 *   $ out/generate --tokens 32 "The capital of France is"
 *   $ out/generate --chat "What is the capital of France?"
 *
 * The model is chosen when this file is compiled: -DKILN_MODEL=NAME
 * includes NAME.h and calls NAME_prefill, NAME_step, ... (default smol);
 * give its upper-case form too for another name (-DKILN_MODEL=tiny
 * -DKILN_MODEL_UC=TINY), since the preprocessor cannot upper-case.
 *
 * Options:
 *   --tokens N          generate at most N tokens (default 32); stops early at EOS
 *                       and when the KV cache is full
 *   --ignore-eos        go on past EOS (printed as its text): exactly N tokens,
 *                       for benchmarks and reference comparisons
 *   --chat              wrap the prompt in the model's ChatML template:
 *                       <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n
 *                       {prompt}<|im_end|>\n<|im_start|>assistant\n
 *   --system TEXT       the system turn for --chat (default: SmolLM2's, as its GGUF
 *                       template writes it; "" leaves the turn out)
 *   --prompt-ids 1,2,3  the prompt as token ids (no tokenizer)
 *   --ids               print token ids instead of text: the prompt's on one line,
 *                       the generated ones on the next, comma-separated
 *   --tokenize          print the prompt's ids (one comma-separated line) and stop
 *   --detokenize        print the prompt's text (of --prompt-ids) and stop
 *   --dump-logits FILE  write the logits that chose each generated token (EOS
 *                       too), VOCAB f32 each (native byte order), in order: the
 *                       prefill's last position, then each step's
 *
 * Timing goes to stderr as one line a benchmark script can parse (ms are
 * wall-clock; decode counts the step calls, not the first token, which
 * comes from the prefill's logits):
 *   timing: prefill_tokens=5 prefill_ms=12.345 prefill_tok_s=405.0 decode_tokens=31 decode_ms=456.789 decode_tok_s=67.9
 *
 * The tokenizer: special tokens (the control and user-defined ones, such
 * as <|im_start|>) are recognised in the prompt by their text; the text
 * between them is split as the "smollm" pre-tokenizer splits it (Hugging
 * Face tokenizers: every digit alone, then GPT-2's regex
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+),
 * each piece's bytes become tokens and the BPE merges join the pair of
 * lowest rank until none applies. Where this differs: \p{L}, \p{N} and \s
 * are exact for ASCII and Latin-1 and approximate beyond (a code point
 * above U+00FF is a letter unless it lies in a block of punctuation,
 * symbols, marks or digits listed in char_class), so text in some
 * non-Latin scripts (combining marks, rare digits) may split differently.
 * tests/generate/run_tokenizer.sh checks it against Hugging Face's on
 * varied English text and a few lines of other scripts (measured too: the
 * same ids on all 319 paragraphs of kiln's own Markdown docs and sources).
 *
 * Memory: the model's state (KV cache and length) is a few tens of MB, too
 * big for the stack, so it is a static object, as are the logits; the
 * merge hash table, the list of special tokens and the prompt's buffers are
 * malloc'ed. */
#define _POSIX_C_SOURCE 200112L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KILN_MODEL
#define KILN_MODEL smol
#define KILN_MODEL_UC SMOL
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#include STR(KILN_MODEL.h)

/* the model's names: M(step) is smol_step, MU(VOCAB) is SMOL_VOCAB */
#define M(name) CAT(KILN_MODEL, CAT(_, name))
#define MU(name) CAT(KILN_MODEL_UC, CAT(_, name))

enum {
  VOCAB = MU(VOCAB),
  CTX = MU(CTX),
  PREFILL = MU(PREFILL),
  NTOKENS = MU(TOKENS),
  NMERGES = MU(MERGES),
};
typedef char vocab_matches_tokens[VOCAB == NTOKENS ? 1 : -1]; /* a compile-time check */

/* SentencePiece (tokenizer.ggml.model "llama": Gemma) or byte-level BPE */
#if MU(TOKENIZER_SPM)
#define SPM 1
#define ADD_SPACE_PREFIX MU(ADD_SPACE_PREFIX)
#define HAS_CHAT_TEMPLATE MU(HAS_CHAT_TEMPLATE)
#else
#define SPM 0
#endif

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "generate: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    die("out of memory (%s)", "malloc");
  return p;
}

/* ------------------------------------------------------------ token ids */

typedef struct Ids {
  int64_t *id;
  int n, cap;
} Ids;

static void ids_push(Ids *v, int64_t id) {
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    int64_t *p = realloc(v->id, (size_t)v->cap * sizeof *p);
    if (!p)
      die("out of memory (%s)", "realloc");
    v->id = p;
  }
  v->id[v->n++] = id;
}

/* the tokenizer's tables (NAME_tokenizer_tables(): in the weights blob,
 * so set in main once the weights are bound) */
static M(tokenizer) tok;

static const char *token_bytes(int64_t id, size_t *len) {
  uint32_t at = tok.token_offset[id];
  *len = tok.token_offset[id + 1] - at - 1;
  return tok.token_text + at;
}

/* the special tokens: control and user-defined ones, matched by their
 * text in a prompt (found once, in tokenizer_init) */
static int32_t *special;
static int nspecial;

static bool is_special(int64_t id) {
  int t = tok.token_type[id];
  return t == MU(TOKEN_CONTROL) || t == MU(TOKEN_USER_DEFINED) || t == MU(TOKEN_UNKNOWN);
}

#if SPM
/* the special token whose text is s, or -1 */
static int64_t special_id(const char *s) {
  for (int i = 0; i < nspecial; i++) {
    size_t len;
    const char *t = token_bytes(special[i], &len);
    if (len == strlen(s) && !memcmp(t, s, len))
      return special[i];
  }
  return -1;
}
#endif

/* ------------------------------------------------------------ merges */

/* (left, right) -> rank + 1 in an open-addressing table; 0 = empty */
static uint32_t *merge_slot;
#if !SPM
static uint32_t merge_mask;

static uint32_t pair_hash(int32_t l, int32_t r) {
  uint64_t k = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
  k *= 0x9E3779B97F4A7C15ull;
  return (uint32_t)(k >> 32);
}
#endif

static void tokenizer_init(void) {
  special = xmalloc(NTOKENS * sizeof *special);
  for (int32_t id = 0; id < NTOKENS; id++)
    if (is_special(id) && tok.token_offset[id + 1] - tok.token_offset[id] > 1)
      special[nspecial++] = id;
#if !SPM /* the merges: byte-level BPE's */
  uint32_t n = 16;
  while (n < 2u * NMERGES)
    n *= 2;
  merge_slot = calloc(n, sizeof *merge_slot);
  if (!merge_slot)
    die("out of memory (%s)", "merges");
  merge_mask = n - 1;
  for (uint32_t r = 0; r < NMERGES; r++) {
    const int32_t *m = tok.merges + 3 * r;
    uint32_t i = pair_hash(m[0], m[1]) & merge_mask;
    while (merge_slot[i]) { /* an earlier (lower) rank of the same pair wins */
      const int32_t *o = tok.merges + 3 * (merge_slot[i] - 1);
      if (o[0] == m[0] && o[1] == m[1])
        break;
      i = (i + 1) & merge_mask;
    }
    if (!merge_slot[i])
      merge_slot[i] = r + 1;
  }
#endif
}

#if !SPM
/* the rank of merging l and r, or -1 */
static int64_t merge_rank(int32_t l, int32_t r) {
  for (uint32_t i = pair_hash(l, r) & merge_mask; merge_slot[i]; i = (i + 1) & merge_mask) {
    const int32_t *m = tok.merges + 3 * (merge_slot[i] - 1);
    if (m[0] == l && m[1] == r)
      return merge_slot[i] - 1;
  }
  return -1;
}

/* One pre-token's bytes into tokens: each byte's token, then merge the
 * adjacent pair of lowest rank (the leftmost of equals) until none is a
 * merge. Quadratic in the piece's length, which is a word or a run of
 * spaces. */
static void bpe(const unsigned char *s, size_t n, Ids *out) {
  int32_t *t = xmalloc(n * sizeof *t);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (tok.byte_token[s[i]] >= 0) /* a byte-level vocabulary has all 256 */
      t[k++] = tok.byte_token[s[i]];
  for (;;) {
    int64_t best = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < k; i++) {
      int64_t r = merge_rank(t[i], t[i + 1]);
      if (r >= 0 && (best < 0 || r < best))
        best = r, at = i;
    }
    if (best < 0)
      break;
    t[at] = tok.merges[3 * best + 2];
    memmove(t + at + 1, t + at + 2, (k - at - 2) * sizeof *t);
    k--;
  }
  for (size_t i = 0; i < k; i++)
    ids_push(out, t[i]);
  free(t);
}
#endif

/* ------------------------------------------------------------ SentencePiece */

#if SPM
/* piece text -> id in an open-addressing table (id + 1; 0 = empty); a
 * text stored twice is its last id, as llama.cpp's map keeps it */
static uint32_t *piece_slot;
static uint32_t piece_mask;

static uint32_t text_hash(const unsigned char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 16777619u;
  return h;
}

static void pieces_init(void) {
  uint32_t n = 16;
  while (n < 2u * NTOKENS)
    n *= 2;
  piece_slot = calloc(n, sizeof *piece_slot);
  if (!piece_slot)
    die("out of memory (%s)", "pieces");
  piece_mask = n - 1;
  for (int32_t id = 0; id < NTOKENS; id++) {
    size_t len;
    const unsigned char *t = (const unsigned char *)token_bytes(id, &len);
    uint32_t i = text_hash(t, len) & piece_mask;
    for (; piece_slot[i]; i = (i + 1) & piece_mask) {
      size_t ol;
      const char *o = token_bytes(piece_slot[i] - 1, &ol);
      if (ol == len && !memcmp(o, t, len))
        break;
    }
    piece_slot[i] = (uint32_t)id + 1;
  }
}

/* the id of the piece s[0..n), or -1 */
static int64_t piece_id(const unsigned char *s, size_t n) {
  for (uint32_t i = text_hash(s, n) & piece_mask; piece_slot[i]; i = (i + 1) & piece_mask) {
    size_t len;
    const char *t = token_bytes(piece_slot[i] - 1, &len);
    if (len == n && !memcmp(t, s, n))
      return piece_slot[i] - 1;
  }
  return -1;
}

/* Text between special tokens, as llama.cpp's SentencePiece encoder does
 * it: every space as ▁ (U+2581; a ▁ first with ADD_SPACE_PREFIX after a
 * special token or at the start), one symbol per UTF-8 character, then
 * the adjacent pair whose join is a piece of the highest score merged
 * (the leftmost of equals) until no join is a piece; a symbol that is no
 * piece becomes its bytes' <0xNN> tokens (byte fallback). Quadratic in
 * the text's length. */
static void spm_encode(const unsigned char *s, size_t n, bool after_special, Ids *out) {
  if (n == 0)
    return;
  unsigned char *t = xmalloc(3 * n + 3);
  size_t m = 0;
  if (ADD_SPACE_PREFIX && after_special)
    memcpy(t, "\xe2\x96\x81", 3), m = 3;
  for (size_t i = 0; i < n; i++)
    if (s[i] == ' ')
      memcpy(t + m, "\xe2\x96\x81", 3), m += 3;
    else
      t[m++] = s[i];
  size_t *at = xmalloc(m * sizeof *at), *len = xmalloc(m * sizeof *len), k = 0;
  for (size_t i = 0; i < m; k++) { /* symbols: a character each (a lead byte's length, clipped) */
    unsigned c = t[i];
    size_t l = c < 0x80 ? 1 : c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    at[k] = i, len[k] = l < m - i ? l : m - i;
    i += len[k];
  }
  for (;;) {
    size_t best = 0;
    float best_score = 0;
    bool found = false;
    for (size_t i = 0; i + 1 < k; i++) {
      int64_t id = piece_id(t + at[i], len[i] + len[i + 1]);
      if (id >= 0 && (!found || tok.token_score[id] > best_score))
        best = i, best_score = tok.token_score[id], found = true;
    }
    if (!found)
      break;
    len[best] += len[best + 1];
    memmove(at + best + 1, at + best + 2, (k - best - 2) * sizeof *at);
    memmove(len + best + 1, len + best + 2, (k - best - 2) * sizeof *len);
    k--;
  }
  for (size_t i = 0; i < k; i++) {
    int64_t id = piece_id(t + at[i], len[i]);
    if (id >= 0) {
      ids_push(out, id);
      continue;
    }
    for (size_t j = 0; j < len[i]; j++) { /* byte fallback */
      int32_t b = tok.byte_token[t[at[i] + j]];
      ids_push(out, b >= 0 ? b : MU(UNK_ID) >= 0 ? MU(UNK_ID) : 0);
    }
  }
  free(t);
  free(at);
  free(len);
}
#endif

/* ------------------------------------------------------------ pre-tokenizer */
#if !SPM

/* one UTF-8 code point at s[0..n): its length (invalid bytes: 1, as U+FFFD) */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  *cp = 0xfffd;
  if (len == 0 || (size_t)len > n)
    return 1;
  uint32_t v = len == 1 ? c : c & (0x7f >> len);
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 1;
    v = v << 6 | (s[i] & 0x3f);
  }
  *cp = v;
  return len;
}

enum { SPACE, LETTER, NUMBER, OTHER };

/* \s, \p{L}, \p{N} or neither: exact for ASCII and Latin-1; beyond, a
 * letter unless in one of these blocks of spaces, digits, marks,
 * punctuation and symbols */
static int char_class(uint32_t c) {
  if (c < 0x80)
    return c == ' ' || (c >= 9 && c <= 13) ? SPACE
           : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? LETTER
           : c >= '0' && c <= '9' ? NUMBER
                                  : OTHER;
  if (c < 0x100)
    return c == 0x85 || c == 0xa0 ? SPACE
           : c == 0xaa || c == 0xb5 || c == 0xba ? LETTER
           : c == 0xb2 || c == 0xb3 || c == 0xb9 || (c >= 0xbc && c <= 0xbe) ? NUMBER
           : c < 0xc0 || c == 0xd7 || c == 0xf7 ? OTHER
                                                : LETTER;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
      c == 0x205f || c == 0x3000)
    return SPACE;
  static const uint32_t numbers[][2] = {
      {0x660, 0x669},   {0x6f0, 0x6f9},   {0x966, 0x96f},   {0x2070, 0x2070}, {0x2074, 0x2079},
      {0x2080, 0x2089}, {0x2150, 0x2189}, {0x2460, 0x249b}, {0x24ea, 0x24ff}, {0x2776, 0x2793},
      {0xff10, 0xff19},
  };
  static const uint32_t others[][2] = {
      {0x300, 0x36f},     /* combining diacritics */
      {0x2000, 0x206f},   /* general punctuation */
      {0x207a, 0x207e},   {0x208a, 0x208e}, /* super/subscript signs */
      {0x20a0, 0x20ff},   /* currency, combining marks for symbols */
      {0x2190, 0x2bff},   /* arrows, math, technical, box drawing, shapes, dingbats */
      {0x2e00, 0x2e7f},   /* supplemental punctuation */
      {0x3001, 0x303f},   /* CJK symbols and punctuation */
      {0xe000, 0xf8ff},   /* private use */
      {0xfe00, 0xfe0f},   /* variation selectors */
      {0xfe30, 0xfe6f},   /* CJK compatibility, small forms */
      {0xff01, 0xff0f},   {0xff1a, 0xff20}, {0xff3b, 0xff40}, {0xff5b, 0xff65}, /* fullwidth */
      {0xfff0, 0xffff},   /* specials, U+FFFD */
      {0x1f000, 0x1faff}, /* emoji, pictographs */
  };
  for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
    if (c >= numbers[i][0] && c <= numbers[i][1])
      return NUMBER;
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    if (c >= others[i][0] && c <= others[i][1])
      return OTHER;
  return LETTER;
}

/* A run of text with no digit: GPT-2's regex, piece by piece, each to bpe.
 * cls[i] and len[i] are code point i's class and byte length. */
static void gpt2_split(const unsigned char *s, const uint8_t *cls, const uint8_t *len, size_t n, Ids *out) {
  size_t i = 0, at = 0; /* code point i starts at byte at */
  while (i < n) {
    size_t j = i, end = at;
#define TAKE() (end += len[j], j++)
    if (s[at] == '\'' && i + 1 < n) { /* 's 't 're 've 'm 'll 'd */
      unsigned char a = s[at + 1], b = i + 2 < n ? s[at + 2] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd')
        j = i + 2, end = at + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        j = i + 3, end = at + 3;
    }
    if (j == i) {
      int want = cls[i] != SPACE ? cls[i] : s[at] == ' ' && i + 1 < n && cls[i + 1] != SPACE ? cls[i + 1] : SPACE;
      if (want != SPACE) { /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' */
        if (cls[i] == SPACE)
          TAKE();
        while (j < n && cls[j] == want)
          TAKE();
      } else { /* \s+(?!\S): all the spaces but one before a non-space; \s+ */
        while (j < n && cls[j] == SPACE)
          TAKE();
        if (j < n && j - i > 1)
          j--, end -= len[j];
      }
    }
#undef TAKE
    bpe(s + at, end - at, out);
    i = j, at = end;
  }
}

/* Text without special tokens: every \p{N} alone (the Digits step of the
 * "smollm" pre-tokenizer), GPT-2's regex on the runs between. */
static void encode_text(const unsigned char *s, size_t n, Ids *out) {
  uint8_t *cls = xmalloc(n), *len = xmalloc(n);
  size_t k = 0;
  for (size_t at = 0; at < n; k++) {
    uint32_t cp;
    len[k] = (uint8_t)utf8_decode(s + at, n - at, &cp);
    cls[k] = (uint8_t)char_class(cp);
    at += len[k];
  }
  size_t run = 0, run_at = 0, at = 0;
  for (size_t i = 0; i <= k; i++) {
    if (i == k || cls[i] == NUMBER) {
      gpt2_split(s + run_at, cls + run, len + run, i - run, out);
      if (i < k)
        bpe(s + at, len[i], out);
      run = i + 1, run_at = at + (i < k ? len[i] : 0);
    }
    if (i < k)
      at += len[i];
  }
  free(cls);
  free(len);
}
#endif

/* The whole prompt: special tokens by their text (the longest that starts
 * here), the rest through encode_text (SentencePiece: spm_encode). */
static void encode(const char *text, Ids *out) {
  const unsigned char *s = (const unsigned char *)text;
  size_t n = strlen(text), from = 0;
  bool after_special = true;
  for (size_t at = 0; at <= n; at++) {
    int64_t best = -1;
    size_t best_len = 0;
    for (int i = 0; at < n && i < nspecial; i++) {
      size_t len;
      const char *t = token_bytes(special[i], &len);
      if (len > best_len && len <= n - at && !memcmp(s + at, t, len))
        best = special[i], best_len = len;
    }
    if (at == n || best >= 0) {
#if SPM
      spm_encode(s + from, at - from, after_special, out);
      after_special = best >= 0;
#else
      (void)after_special;
      encode_text(s + from, at - from, out);
#endif
      if (best >= 0)
        ids_push(out, best);
      at += best_len ? best_len - 1 : 0;
      from = at + 1;
    }
  }
}

/* ------------------------------------------------------------ output */

/* Bytes as they come from tokens, printed up to the last whole UTF-8
 * character: a character split across two tokens is printed once its
 * last byte arrives (a malformed sequence is printed as it is). */
static unsigned char pending[8];
static size_t npending;

static void put_bytes(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    pending[npending++] = (unsigned char)s[i];
    unsigned c = pending[0];
    size_t want = c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf8 ? 4 : 1;
    bool cont_ok = npending == 1 || (pending[npending - 1] & 0xc0) == 0x80;
    if (npending >= want || !cont_ok) {
      fwrite(pending, 1, npending, stdout);
      npending = 0;
    }
  }
  fflush(stdout);
}

static void put_flush(void) {
  fwrite(pending, 1, npending, stdout);
  npending = 0;
  fflush(stdout);
}

/* Token id as text: its bytes; for SentencePiece a piece with ▁ as a
 * space, a byte token as its byte, a control token (<bos>, <eos>,
 * <start_of_turn>) as nothing, as llama.cpp prints them. */
static void put_token(int64_t id) {
  size_t len;
  const char *t = token_bytes(id, &len);
#if SPM
  int type = tok.token_type[id];
  if (type == MU(TOKEN_CONTROL))
    return;
  if (type == MU(TOKEN_BYTE)) {
    for (int b = 0; b < 256; b++)
      if (tok.byte_token[b] == id) {
        char c = (char)b;
        put_bytes(&c, 1);
      }
    return;
  }
  if (type == MU(TOKEN_NORMAL) || type == MU(TOKEN_UNKNOWN))
    for (size_t i = 0; i < len;) {
      size_t j = i;
      while (j < len && !(j + 3 <= len && !memcmp(t + j, "\xe2\x96\x81", 3)))
        j++;
      put_bytes(t + i, j - i);
      if (j < len) {
        put_bytes(" ", 1);
        j += 3;
      }
      i = j;
    }
  else
    put_bytes(t, len);
#else
  put_bytes(t, len);
#endif
}

static void put_ids(const Ids *v, int from) {
  for (int i = from; i < v->n; i++)
    printf("%s%lld", i > from ? "," : "", (long long)v->id[i]);
  printf("\n");
}

/* ------------------------------------------------------------ the model */

static M(state) state; /* static: tens of MB of KV cache, too big for the stack */
static float logits[VOCAB];

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int64_t argmax(const float *x) {
  int64_t best = 0;
  for (int64_t i = 1; i < VOCAB; i++)
    if (x[i] > x[best])
      best = i;
  return best;
}

static void check_rc(int rc, const char *what) {
  if (rc == KILN_E_CACHE_FULL)
    die("%s: the KV cache is full (compile with a larger --set ctx=N)", what);
  if (rc != KILN_OK)
    die("%s failed (KILN_E_ARG or another error code)", what);
}

/* The weights of a model this size are in a blob, linked in by
 * NAME_weights.S (README "Weights in a blob"); -DKILN_MODEL_BLOB=0 for a
 * model compiled with --weights-mode=inline. The tokenizer's tables are in
 * the blob too: bound before anything reads them. */
#ifndef KILN_MODEL_BLOB
#define KILN_MODEL_BLOB 1
#endif
static void bind_weights(void) {
#if KILN_MODEL_BLOB
  int rc = M(verify_weights)(M(weights_blob), MU(WEIGHTS_SIZE)); /* every byte against the hash */
  if (rc == KILN_OK)
    rc = M(bind_linked_weights)();
  if (rc != KILN_OK)
    die("the linked weights: %s", M(weights_error)(rc));
#endif
  tok = M(tokenizer_tables)();
  if (!tok.token_text || !tok.token_offset || !tok.token_type || !tok.byte_token || !tok.merges)
    die("%s", "the tokenizer's tables are missing (the weights are not bound)");
#if SPM
  if (!tok.token_score)
    die("%s", "the tokenizer's scores are missing (the weights are not bound)");
#endif
}

static int64_t parse_count(const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0)
    die("--tokens wants a count, not '%s'", s);
  return v;
}

static void parse_ids(const char *s, Ids *out) {
  while (*s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0 || v >= VOCAB || (*end && *end != ','))
      die("--prompt-ids: '%s' is not a comma-separated list of token ids below the vocabulary size", s);
    ids_push(out, v);
    s = *end ? end + 1 : end;
  }
}

/* Prefill the prompt in chunks of PREFILL tokens; the last chunk's logits
 * pick the first token. */
static void prefill(const Ids *prompt) {
  int64_t chunk[PREFILL]; /* the API takes a full PREFILL array; n says how many count */
  for (int at = 0; at < prompt->n; at += PREFILL) {
    int n = prompt->n - at < PREFILL ? prompt->n - at : PREFILL;
    memset(chunk, 0, sizeof chunk);
    memcpy(chunk, prompt->id + at, (size_t)n * sizeof *chunk);
    check_rc(M(prefill)(&state, chunk, n, logits), "prefill");
  }
}

typedef struct Options {
  int64_t tokens;
  bool chat, ids, tokenize, detokenize, ignore_eos, system_set;
  const char *system, *prompt_ids, *dump_logits, *prompt;
} Options;

static const char *const usage =
    "usage: generate [--tokens N] [--ignore-eos] [--chat] [--system TEXT] [--ids] [--dump-logits FILE]\n"
    "                [--tokenize | --detokenize] (PROMPT | --prompt-ids 1,2,3)";

static Options parse_args(int argc, char **argv) {
  Options o = {.tokens = 32,
               .system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--tokens") && more)
      o.tokens = parse_count(argv[++i]);
    else if (!strcmp(a, "--ignore-eos"))
      o.ignore_eos = true;
    else if (!strcmp(a, "--chat"))
      o.chat = true;
    else if (!strcmp(a, "--system") && more)
      o.system = argv[++i], o.system_set = true;
    else if (!strcmp(a, "--ids"))
      o.ids = true;
    else if (!strcmp(a, "--tokenize"))
      o.tokenize = true;
    else if (!strcmp(a, "--detokenize"))
      o.detokenize = true;
    else if (!strcmp(a, "--prompt-ids") && more)
      o.prompt_ids = argv[++i];
    else if (!strcmp(a, "--dump-logits") && more)
      o.dump_logits = argv[++i];
    else if (a[0] == '-' && a[1] == '-')
      die("unknown option or missing value: '%s'", a);
    else if (o.prompt)
      die("one prompt only (quote it): '%s'", a);
    else
      o.prompt = a;
  }
  if (!o.prompt == !o.prompt_ids)
    die("%s", usage);
  return o;
}

/* the prompt as ids: the given ones, or the text (in the chat template
 * with --chat) through the tokenizer, BOS first when the model asks */
static void prompt_ids(const Options *o, Ids *ids) {
  if (o->prompt_ids) {
    parse_ids(o->prompt_ids, ids);
    return;
  }
  tokenizer_init(); /* only for text: the tables cost 1.3 MB of memory */
#if SPM
  pieces_init();
#endif
  if (MU(ADD_BOS) && MU(BOS_ID) >= 0)
    ids_push(ids, MU(BOS_ID));
  if (!o->chat) {
    encode(o->prompt, ids);
    return;
  }
  size_t n = strlen(o->system) + strlen(o->prompt) + 128;
  char *text = xmalloc(n);
#if SPM
  /* Gemma's turns (its GGUF's chat template writes them; a system turn
   * goes before the user's text in the first user turn) */
  if (special_id("<start_of_turn>") < 0 || special_id("<end_of_turn>") < 0)
    die("%s", "--chat: the vocabulary has no <start_of_turn> and <end_of_turn> (Gemma's turn markers)");
  if (!HAS_CHAT_TEMPLATE)
    fprintf(stderr, "generate: note: the model file has no chat template (a base model?); "
                    "using Gemma's turn markers\n");
  snprintf(text, n, "<start_of_turn>user\n%s%s%s<end_of_turn>\n<start_of_turn>model\n",
           o->system_set ? o->system : "", o->system_set && o->system[0] ? "\n\n" : "", o->prompt);
  encode(text, ids);
  free(text);
  return;
#endif
  if (o->system[0])
    snprintf(text, n, "<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n",
             o->system, o->prompt);
  else
    snprintf(text, n, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", o->prompt);
  encode(text, ids);
  free(text);
}

int main(int argc, char **argv) {
  Options o = parse_args(argc, argv);
  Ids ids = {0};
  bind_weights(); /* the tokenizer's tables too */
  prompt_ids(&o, &ids);
  if (o.tokenize || o.detokenize) {
    if (o.tokenize)
      put_ids(&ids, 0);
    for (int i = 0; o.detokenize && i < ids.n; i++)
      put_token(ids.id[i]);
    put_flush();
    free(ids.id);
    free(merge_slot);
    free(special);
    return 0;
  }
  if (ids.n == 0)
    die("%s", "the prompt is empty");
  if (ids.n > CTX)
    die("the prompt is longer than the KV cache (%s positions); compile with a larger --set ctx=N",
        STR(MU(CTX)));
  FILE *dump = NULL;
  if (o.dump_logits && !(dump = fopen(o.dump_logits, "wb")))
    die("cannot write '%s'", o.dump_logits);

  M(state_init)(&state);
  if (o.ids)
    put_ids(&ids, 0);
  else if (!o.chat)
    for (int i = 0; i < ids.n; i++) /* echo the prompt */
      put_token(ids.id[i]);
  double t0 = now_ms();
  prefill(&ids);
  double t1 = now_ms(), decode_ms = 0;
  int first = ids.n, steps = 0;
  for (int64_t k = 0; k < o.tokens; k++) {
    if (dump && fwrite(logits, sizeof logits, 1, dump) != 1)
      die("cannot write '%s'", o.dump_logits);
    int64_t next = argmax(logits);
    if (next == MU(EOS_ID) && !o.ignore_eos)
      break;
    ids_push(&ids, next);
    if (!o.ids)
      put_token(next);
    if (k + 1 == o.tokens)
      break; /* the next token's logits are not needed */
    if (M(length)(&state) >= CTX) {
      fprintf(stderr, "generate: the KV cache is full (%d positions): stopping\n", CTX);
      break;
    }
    double s0 = now_ms();
    check_rc(M(step)(&state, next, logits), "step");
    decode_ms += now_ms() - s0;
    steps++;
  }
  put_flush();
  if (o.ids)
    put_ids(&ids, first);
  else
    printf("\n");
  if (dump && fclose(dump))
    die("cannot write '%s'", o.dump_logits);
  double prefill_ms = t1 - t0;
  fprintf(stderr,
          "timing: prefill_tokens=%d prefill_ms=%.3f prefill_tok_s=%.1f decode_tokens=%d decode_ms=%.3f "
          "decode_tok_s=%.1f\n",
          first, prefill_ms, prefill_ms > 0 ? first / prefill_ms * 1e3 : 0.0, steps, decode_ms,
          decode_ms > 0 ? steps / decode_ms * 1e3 : 0.0);
  free(ids.id);
  free(merge_slot);
  free(special);
#if SPM
  free(piece_slot);
#endif
  return 0;
}
