/* embed.c — sentence embeddings on the command line with the real
 * all-MiniLM-L6-v2, compiled by kiln: BERT's WordPiece tokenizer over the
 * model's vocab.txt, the generated encoder, then sentence-transformers'
 * pooling (the mean of the real tokens' rows, scaled to unit length), and
 * the cosine similarity of every pair of sentences given.
 *
 *   $ export PATH=$PWD/build:$PATH
 *   $ /usr/bin/python3 tools/minilm.py fetch    # build/minilm/model/{model.safetensors,vocab.txt} (docs-test: network)
 *   $ kiln compile examples/bert.lua --set seq=128 --set pooler=false \
 *       --rows-axis=input_ids:1,token_type_ids:1 \
 *       --weights build/minilm/model/model.safetensors -o out/minilm.c
 *   $ cc -O2 -march=native -ffp-contract=fast -Iout -c out/minilm.c out/minilm_weights.S
 *   $ cc -O2 -std=c99 -Iout examples/embed.c minilm.o minilm_weights.o -lm -o out/embed
 *   $ out/embed --vocab build/minilm/model/vocab.txt "A man is eating food." \
 *       "A man is eating a piece of bread." "A man is riding a horse."
 *
 * The weights are linked in (minilm_weights.S .incbin's minilm.weights.bin);
 * --weights FILE reads a blob from a file instead, the form for an app that
 * ships its weights separately or maps them. Any sequence length the model
 * was compiled for works: the app reads it from minilm.h. With
 * --rows-axis (docs/rows.md) each sentence costs its own length: the app
 * hands up to BATCH sentences at a time to minilm_run_batch
 * (docs/batch.md) with their token counts; without it, minilm_run per
 * sentence over the padded SEQ. --file FILE embeds a file of sentences,
 * one per line:
 *
 *   $ printf '%s\n' "A man is eating food." "A man is riding a horse." >out/sentences.txt
 *   $ out/embed --vocab build/minilm/model/vocab.txt --file out/sentences.txt >out/embeddings.txt
 *
 * The tokenizer follows BERT's uncased BasicTokenizer: drop NUL, U+FFFD,
 * invalid UTF-8 and control characters; whitespace separates words; each
 * CJK ideograph is a word of its own; words are lower-cased and lose their
 * accents; each punctuation character is a token of its own. Then
 * WordPiece: the longest vocabulary entry that starts the word, then the
 * longest "##" entry that continues it, and so on; a word with a part no
 * entry matches, or longer than 100 characters, is [UNK]. Lower-casing and
 * accent stripping cover ASCII, Latin-1 and Latin Extended-A (and drop the
 * combining diacritics U+0300-U+036F); other scripts pass through as they
 * are, and punctuation is recognised in ASCII, Latin-1, General
 * Punctuation, CJK Symbols and the fullwidth forms. tools/minilm.py
 * tokenize is the reference the tests compare against.
 */
#define _POSIX_C_SOURCE 200112L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "minilm.h"

/* the compiled model's shapes: input_ids [1, SEQ], last_hidden_state [1, SEQ, DIM] */
enum {
  SEQ = MINILM_IN_INPUT_IDS_SIZE,
  DIM = MINILM_OUT_LAST_HIDDEN_STATE_SIZE / MINILM_IN_INPUT_IDS_SIZE,
  MAX_WORD_CHARS = 100, /* BERT's limit: a longer word is [UNK] */
  MAX_PIECE_BYTES = 4 * MAX_WORD_CHARS + 3,
  BATCH = 32, /* sentences per minilm_run_batch call */
};
typedef char seq_holds_cls_and_sep[SEQ >= 2 ? 1 : -1]; /* a compile-time check */

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "embed: ");
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

/* ------------------------------------------------------------ vocabulary */

/* vocab.txt: one token a line, its id the line number. Looked up by an
 * open-addressing hash table of ids (slot = id + 1, 0 = empty). */
typedef struct Vocab {
  char *text;    /* the file, each line's '\n' replaced by '\0' */
  char **tokens; /* [n] */
  int n;
  int *slots; /* [nslots], a power of two at least 2n */
  size_t nslots;
  int64_t unk, cls, sep, pad;
} Vocab;

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 14695981039346656037u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h;
}

/* The id of the token s[0..len), or -1. */
static int64_t vocab_find(const Vocab *v, const char *s, size_t len) {
  for (size_t i = hash_bytes(s, len) & (v->nslots - 1);; i = (i + 1) & (v->nslots - 1)) {
    int id = v->slots[i] - 1;
    if (id < 0)
      return -1;
    if (strlen(v->tokens[id]) == len && memcmp(v->tokens[id], s, len) == 0)
      return id;
  }
}

/* A token listed twice keeps its last id, as a Python dict built from the file does. */
static void vocab_insert(Vocab *v, int id) {
  const char *s = v->tokens[id];
  size_t len = strlen(s);
  size_t i = hash_bytes(s, len) & (v->nslots - 1);
  for (; v->slots[i]; i = (i + 1) & (v->nslots - 1))
    if (strcmp(v->tokens[v->slots[i] - 1], s) == 0)
      break;
  v->slots[i] = id + 1;
}

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = xmalloc(cap + 1);
  for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      char *bigger = realloc(buf, 2 * cap + 1);
      if (!bigger)
        die("out of memory reading %s", path);
      buf = bigger;
      cap *= 2;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (failed) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *size = n;
  return buf;
}

static int64_t vocab_special(const Vocab *v, const char *path, const char *token) {
  int64_t id = vocab_find(v, token, strlen(token));
  if (id < 0) {
    fprintf(stderr, "embed: %s has no %s token; expected a BERT vocab.txt\n", path, token);
    exit(1);
  }
  return id;
}

static void vocab_load(Vocab *v, const char *path) {
  size_t size;
  v->text = read_file(path, &size);
  if (!v->text) {
    fprintf(stderr, "embed: cannot read the vocabulary %s: %s; pass --vocab FILE (the model's vocab.txt)\n",
            path, strerror(errno));
    exit(1);
  }
  v->n = 0;
  for (size_t i = 0; i < size; i++)
    v->n += v->text[i] == '\n';
  if (size > 0 && v->text[size - 1] != '\n')
    v->n++; /* a last line without '\n' */
  if (v->n == 0)
    die("the vocabulary %s is empty; expected one token a line", path);
  v->tokens = xmalloc(sizeof *v->tokens * (size_t)v->n);
  char *line = v->text;
  for (int id = 0; id < v->n; id++) {
    char *end = strchr(line, '\n');
    if (end)
      *end = '\0';
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\r')
      line[len - 1] = '\0';
    v->tokens[id] = line;
    line = end ? end + 1 : line + len;
  }
  for (v->nslots = 16; v->nslots < 2 * (size_t)v->n;)
    v->nslots *= 2;
  v->slots = calloc(v->nslots, sizeof *v->slots);
  if (!v->slots)
    die("out of memory (%s)", "vocabulary");
  for (int id = 0; id < v->n; id++)
    vocab_insert(v, id);
  v->unk = vocab_special(v, path, "[UNK]");
  v->cls = vocab_special(v, path, "[CLS]");
  v->sep = vocab_special(v, path, "[SEP]");
  v->pad = vocab_special(v, path, "[PAD]");
}

/* ------------------------------------------------------------ characters */

/* Decode one UTF-8 character at s (at most n bytes); sets *len. Malformed,
 * overlong or surrogate sequences give U+FFFD, one byte long. */
static uint32_t utf8_decode(const unsigned char *s, size_t n, size_t *len) {
  *len = 1;
  if (s[0] < 0x80)
    return s[0];
  int extra = s[0] >= 0xF0 && s[0] < 0xF5 ? 3 : s[0] >= 0xE0 ? 2 : s[0] >= 0xC2 && s[0] < 0xE0 ? 1 : -1;
  if (extra < 0 || (size_t)extra >= n)
    return 0xFFFD;
  uint32_t cp = s[0] & (0x3F >> extra);
  for (int i = 1; i <= extra; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0xFFFD;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
  if (cp < least[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0xFFFD;
  *len = (size_t)extra + 1;
  return cp;
}

static size_t utf8_encode(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The whitespace BERT splits words on: ASCII's, Unicode's Zs spaces and
 * the line and paragraph separators. */
static int is_space(uint32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

/* Control and format characters (Unicode's C categories) BERT deletes,
 * for the common ranges; tab, newline and return are whitespace instead. */
static int is_control(uint32_t c) {
  if (c == '\t' || c == '\n' || c == '\r')
    return 0;
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0xAD || (c >= 0x200B && c <= 0x200F) ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF ||
         (c >= 0xE000 && c <= 0xF8FF);
}

/* CJK ideographs: the blocks BERT puts spaces around. */
static int is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Every ASCII symbol (BERT counts $, +, <, ^, ` and | as punctuation too)
 * and Unicode's P categories in Latin-1, General Punctuation, CJK Symbols
 * and Punctuation, and the fullwidth forms. */
static int is_punct(uint32_t c) {
  static const uint32_t ranges[][2] = {
      {0x21, 0x2F},     {0x3A, 0x40},     {0x5B, 0x60},     {0x7B, 0x7E},     {0xA1, 0xA1},
      {0xA7, 0xA7},     {0xAB, 0xAB},     {0xB6, 0xB7},     {0xBB, 0xBB},     {0xBF, 0xBF},
      {0x2010, 0x2027}, {0x2030, 0x2043}, {0x2045, 0x2051}, {0x2053, 0x205E}, {0x3001, 0x3003},
      {0x3008, 0x3011}, {0x3014, 0x301F}, {0xFF01, 0xFF03}, {0xFF05, 0xFF0A}, {0xFF0C, 0xFF0F},
      {0xFF1A, 0xFF1B}, {0xFF1F, 0xFF20}, {0xFF3B, 0xFF3D}, {0xFF3F, 0xFF3F}, {0xFF5B, 0xFF5B},
      {0xFF5D, 0xFF5D}, {0xFF5F, 0xFF65},
  };
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
    if (c >= ranges[i][0] && c <= ranges[i][1])
      return 1;
  return 0;
}

/* Lower-case and strip the accent: what Python's unicodedata gives for
 * c.lower(), decomposed (NFD), without its combining marks. Per character
 * of U+00C0-U+00FF and U+0100-U+017F: the base letter, or '=' (unchanged:
 * no decomposition, already lower case) or '+' (the lower-case letter next
 * to it: +0x20 in Latin-1, +1 in Latin Extended-A). Returns 0 for a
 * combining diacritic (U+0300-U+036F), which is dropped. */
static uint32_t fold(uint32_t c) {
  static const char latin1[] = "aaaaaa+ceeeeiiii+nooooo=+uuuuy+="
                               "aaaaaa=ceeeeiiii=nooooo==uuuuy=y";
  static const char latin_ext_a[] = "aaaaaaccccccccdd+=eeeeeeeeeegggggggghh+=iiiiiiiii=+=jjkk=lll"
                                    "lll+=+=nnnnnn=+=oooooo+=rrrrrrsssssssstttt+=uuuuuuuuuuuuwwyyy"
                                    "zzzzzz=";
  if (c >= 'A' && c <= 'Z')
    return c + 32;
  if (c >= 0x300 && c <= 0x36F)
    return 0;
  const char *row = c >= 0xC0 && c <= 0xFF ? &latin1[c - 0xC0]
                    : c >= 0x100 && c <= 0x17F ? &latin_ext_a[c - 0x100]
                                               : NULL;
  if (!row || *row == '=')
    return c;
  if (*row == '+')
    return c < 0x100 ? c + 0x20 : c + 1;
  return (uint32_t)*row;
}

/* ------------------------------------------------------------ tokenizer */

typedef struct Tokens {
  int64_t *ids; /* word-piece ids, without [CLS] and [SEP] */
  int n, cap;
} Tokens;

static void tokens_push(Tokens *t, int64_t id) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    int64_t *bigger = realloc(t->ids, sizeof *t->ids * (size_t)t->cap);
    if (!bigger)
      die("out of memory (%s)", "tokens");
    t->ids = bigger;
  }
  t->ids[t->n++] = id;
}

/* WordPiece on one basic token, word[0..n) (folded code points). */
static void wordpiece(const Vocab *v, const uint32_t *word, int n, Tokens *out) {
  if (n > MAX_WORD_CHARS) {
    tokens_push(out, v->unk);
    return;
  }
  int first = out->n;
  char piece[MAX_PIECE_BYTES + 1];
  for (int start = 0; start < n;) {
    int end = n;
    for (; end > start; end--) {
      size_t len = 0;
      if (start > 0) {
        piece[len++] = '#';
        piece[len++] = '#';
      }
      for (int i = start; i < end; i++)
        len += utf8_encode(word[i], piece + len);
      int64_t id = vocab_find(v, piece, len);
      if (id >= 0) {
        tokens_push(out, id);
        break;
      }
    }
    if (end == start) { /* nothing matches here: the whole word is unknown */
      out->n = first;
      tokens_push(out, v->unk);
      return;
    }
    start = end;
  }
}

/* Split a folded word on punctuation and run WordPiece on each part. */
static void split_punct(const Vocab *v, const uint32_t *word, int n, Tokens *out) {
  int start = 0;
  for (int i = 0; i < n; i++) {
    if (!is_punct(word[i]))
      continue;
    if (i > start)
      wordpiece(v, word + start, i - start, out);
    wordpiece(v, word + i, 1, out);
    start = i + 1;
  }
  if (n > start)
    wordpiece(v, word + start, n - start, out);
}

/* BERT's basic tokenizer, then WordPiece: text (UTF-8) to word-piece ids. */
static void tokenize(const Vocab *v, const char *text, Tokens *out) {
  size_t n = strlen(text), step;
  uint32_t *word = xmalloc(sizeof *word * (n + 1)); /* never more code points than bytes */
  int len = 0;
  for (size_t i = 0; i < n; i += step) {
    uint32_t c = utf8_decode((const unsigned char *)text + i, n - i, &step);
    if (c == 0xFFFD || is_control(c))
      continue;
    if (is_space(c) || is_cjk(c)) { /* a word ends; an ideograph is a word of its own */
      if (len > 0)
        split_punct(v, word, len, out);
      len = 0;
      if (is_cjk(c))
        wordpiece(v, &c, 1, out);
      continue;
    }
    uint32_t f = fold(c);
    if (f)
      word[len++] = f;
  }
  if (len > 0)
    split_punct(v, word, len, out);
  free(word);
}

/* [CLS] pieces [SEP], padded with [PAD] to SEQ; returns the number of real
 * tokens. Pieces beyond SEQ - 2 are cut off, with a note. */
static int encode(const Vocab *v, const char *text, int index, int64_t ids[SEQ],
                  int64_t mask[SEQ], int64_t types[SEQ]) {
  Tokens t = {0};
  tokenize(v, text, &t);
  int keep = t.n < SEQ - 2 ? t.n : SEQ - 2;
  if (keep < t.n)
    fprintf(stderr, "embed: note: sentence %d has %d word pieces; the model takes %d, the rest is cut off\n",
            index + 1, t.n, SEQ - 2);
  int n = 0;
  ids[n++] = v->cls;
  for (int i = 0; i < keep; i++)
    ids[n++] = t.ids[i];
  ids[n++] = v->sep;
  for (int i = 0; i < SEQ; i++) {
    if (i >= n)
      ids[i] = v->pad;
    mask[i] = i < n;
    types[i] = 0;
  }
  free(t.ids);
  return n;
}

/* ------------------------------------------------------------ the model */

/* one batch: sentence b's inputs and outputs are [b][0] */
static int64_t input_ids[BATCH][1][SEQ], attention_mask[BATCH][1][SEQ], token_type_ids[BATCH][1][SEQ];
static float last_hidden_state[BATCH][1][SEQ][DIM];
#ifdef MINILM_OUT_POOLER_OUTPUT_SIZE /* compiled with bert.lua's pooler=true: unused here */
static float pooler_output[BATCH][1][DIM];
#endif

/* The model over sentences 0..nb-1 of the batch, sentence b's len[b]
 * tokens. Compiled with --rows-axis (MINILM_ROWS defined: docs/rows.md),
 * minilm_run_batch computes only those — a 12-token sentence costs about
 * 12 rows of work, not SEQ — and leaves last_hidden_state's rows past them
 * 0; else minilm_run computes all SEQ rows of each sentence, the padding
 * hidden by the mask. Same embeddings either way. */
static void run_model(int nb, const int len[]) {
#ifdef MINILM_ROWS
#ifdef MINILM_OUT_POOLER_OUTPUT_SIZE
  int rc = minilm_run_batch(input_ids, attention_mask, token_type_ids, last_hidden_state, pooler_output, len, nb);
#else
  int rc = minilm_run_batch(input_ids, attention_mask, token_type_ids, last_hidden_state, len, nb);
#endif
  if (rc != KILN_OK)
    die("minilm_run_batch: error %s", rc == KILN_E_ARG ? "KILN_E_ARG (a count outside 1..MINILM_ROWS)" : "(weights)");
#else
  (void)len;
  for (int b = 0; b < nb; b++)
#ifdef MINILM_OUT_POOLER_OUTPUT_SIZE
    minilm_run(input_ids[b], attention_mask[b], token_type_ids[b], last_hidden_state[b], pooler_output[b]);
#else
    minilm_run(input_ids[b], attention_mask[b], token_type_ids[b], last_hidden_state[b]);
#endif
#endif
}

/* sentence-transformers' Pooling(mean) + Normalize of sentence b of the
 * batch: the mean of the rows whose attention_mask is 1, scaled to unit
 * length.  out [DIM] */
static void mean_pool_normalize(int b, float out[DIM]) {
  double sum[DIM] = {0}, norm = 0;
  int count = 0;
  for (int t = 0; t < SEQ; t++) {
    if (!attention_mask[b][0][t])
      continue;
    count++;
    for (int d = 0; d < DIM; d++)
      sum[d] += last_hidden_state[b][0][t][d];
  }
  for (int d = 0; d < DIM; d++) { /* count >= 2: [CLS] and [SEP] are always there */
    sum[d] /= count;
    norm += sum[d] * sum[d];
  }
  norm = sqrt(norm);
  for (int d = 0; d < DIM; d++)
    out[d] = (float)(sum[d] / (norm > 1e-12 ? norm : 1e-12));
}

static double cosine(const float *a, const float *b) {
  double ab = 0, aa = 0, bb = 0;
  for (int d = 0; d < DIM; d++) {
    ab += (double)a[d] * b[d];
    aa += (double)a[d] * a[d];
    bb += (double)b[d] * b[d];
  }
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/* The weights blob from a file (--weights), read straight into 64-byte-
 * aligned memory that the model reads from then on (an app may mmap the
 * file instead: mappings are page aligned). A folder or a file of another
 * size is refused before anything is allocated or read; then
 * minilm_verify_weights hashes every byte against the compiled hash (a
 * damaged copy is refused, not run) and minilm_bind_weights binds it. */
static void bind_weights_file(const char *path) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    fprintf(stderr, "embed: cannot read the weights %s: %s\n", path, strerror(errno));
    exit(1);
  }
  if (!S_ISREG(st.st_mode))
    die("--weights %s: not a regular file; expected the model's .weights.bin", path);
  if ((uintmax_t)st.st_size != MINILM_WEIGHTS_SIZE) {
    fprintf(stderr, "embed: --weights %s: %jd bytes; expected %ju (the blob minilm.c was compiled with)\n", path,
            (intmax_t)st.st_size, (uintmax_t)MINILM_WEIGHTS_SIZE);
    exit(1);
  }
  void *blob = NULL;
  if (posix_memalign(&blob, 64, MINILM_WEIGHTS_SIZE) != 0)
    die("out of memory for the weights %s", path);
  if (fread(blob, 1, MINILM_WEIGHTS_SIZE, f) != MINILM_WEIGHTS_SIZE) {
    fprintf(stderr, "embed: cannot read the weights %s: %s\n", path,
            ferror(f) ? strerror(errno) : "the file is shorter than it was");
    exit(1);
  }
  fclose(f);
  int rc = minilm_verify_weights(blob, MINILM_WEIGHTS_SIZE);
  if (rc == KILN_OK)
    rc = minilm_bind_weights(blob, MINILM_WEIGHTS_SIZE);
  if (rc != KILN_OK) {
    fprintf(stderr, "embed: %s: %s\n", path, minilm_weights_error(rc));
    exit(1);
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ main */

static void usage(void) {
  fprintf(stderr,
          "usage: embed [--vocab FILE] [--weights FILE] [--tokens | --embeddings] SENTENCE...\n"
          "       embed [--vocab FILE] [--weights FILE] [--tokens] --file FILE\n"
          "  prints the cosine similarity of every pair of sentences (all-MiniLM-L6-v2,\n"
          "  mean-pooled, normalised embeddings)\n"
          "  --vocab FILE    the model's vocab.txt (default: vocab.txt)\n"
          "  --weights FILE  a kiln weights blob (NAME.weights.bin) instead of the linked-in one\n"
          "  --tokens        print each sentence's token ids ([CLS] ... [SEP]) and stop\n"
          "  --embeddings    print each sentence's embedding (%d numbers) instead\n"
          "  --file FILE     the sentences are FILE's lines (an empty line is a sentence too);\n"
          "                  prints their embeddings, one line each, and the speed on stderr\n",
          DIM);
  exit(2);
}

/* FILE's lines, each '\n' (and a '\r' before it) cut off: *n of them. */
static char **read_lines(const char *path, int *n) {
  size_t size;
  char *text = read_file(path, &size);
  if (!text) {
    fprintf(stderr, "embed: cannot read --file %s: %s\n", path, strerror(errno));
    exit(1);
  }
  size_t count = 0;
  for (size_t i = 0; i < size; i++)
    count += text[i] == '\n';
  count += size > 0 && text[size - 1] != '\n';
  if (count == 0 || count > INT32_MAX)
    die("--file %s: no lines; expected one sentence per line", path);
  char **lines = xmalloc(sizeof *lines * count);
  *n = 0;
  for (char *p = text; p < text + size;) {
    char *end = memchr(p, '\n', (size_t)(text + size - p));
    end = end ? end : text + size;
    *end = '\0';
    if (end > p && end[-1] == '\r')
      end[-1] = '\0';
    lines[(*n)++] = p;
    p = end + 1;
  }
  return lines;
}

int main(int argc, char **argv) {
  const char *vocab_path = "vocab.txt", *weights_path = NULL, *file = NULL;
  int print_tokens = 0, print_embeddings = 0, first = 1;
  for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
    const char *a = argv[first];
    if (strcmp(a, "--") == 0) {
      first++;
      break;
    } else if (strcmp(a, "--tokens") == 0) {
      print_tokens = 1;
    } else if (strcmp(a, "--embeddings") == 0) {
      print_embeddings = 1;
    } else if (strcmp(a, "--vocab") == 0 && first + 1 < argc) {
      vocab_path = argv[++first];
    } else if (strcmp(a, "--weights") == 0 && first + 1 < argc) {
      weights_path = argv[++first];
    } else if (strcmp(a, "--file") == 0 && first + 1 < argc) {
      file = argv[++first];
    } else {
      usage();
    }
  }
  int n = argc - first;
  if ((file ? n != 0 || print_embeddings : n < 1) || (print_tokens && print_embeddings))
    usage();

  Vocab vocab;
  vocab_load(&vocab, vocab_path);
  char **texts = argv + first;
  if (file) {
    texts = read_lines(file, &n);
    print_embeddings = 1;
  }
  if (print_tokens) {
    for (int s = 0; s < n; s++) {
      int len = encode(&vocab, texts[s], s, input_ids[0][0], attention_mask[0][0], token_type_ids[0][0]);
      for (int i = 0; i < len; i++)
        printf(i ? " %lld" : "%lld", (long long)input_ids[0][0][i]);
      printf("\n");
    }
    return 0;
  }

  if (weights_path) {
    bind_weights_file(weights_path);
  } else {
    int rc = minilm_verify_weights(minilm_weights_blob, MINILM_WEIGHTS_SIZE);
    if (rc == KILN_OK)
      rc = minilm_bind_linked_weights();
    if (rc != KILN_OK)
      die("the linked-in weights: %s", minilm_weights_error(rc));
  }
  float *embedding = xmalloc(sizeof *embedding * (size_t)n * DIM); /* [n][DIM] */
  double ms = 0;
  for (int s0 = 0; s0 < n; s0 += BATCH) { /* BATCH sentences at a time */
    int nb = n - s0 < BATCH ? n - s0 : BATCH, len[BATCH];
    for (int b = 0; b < nb; b++)
      len[b] = encode(&vocab, texts[s0 + b], s0 + b, input_ids[b][0], attention_mask[b][0], token_type_ids[b][0]);
    double t0 = now_ms();
    run_model(nb, len);
    ms += now_ms() - t0;
    for (int b = 0, s = s0; b < nb; b++, s++) {
      mean_pool_normalize(b, embedding + (size_t)s * DIM);
      if (print_embeddings) {
        for (int d = 0; d < DIM; d++)
          printf(d ? " %.9g" : "%.9g", embedding[(size_t)s * DIM + d]);
        printf("\n");
      } else {
        printf("[%d] %s  (%d tokens)\n", s + 1, texts[s], len[b]);
      }
    }
  }
  if (file)
    fprintf(stderr, "embed: %d sentences, %.1f ms per sentence, %.1f sentences/s (seq %d, batches of %d)\n", n,
            ms / n, ms > 0 ? n * 1e3 / ms : 0.0, SEQ, BATCH);
  if (!print_embeddings) {
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        printf("cos([%d], [%d]) = %.4f\n", i + 1, j + 1,
               cosine(embedding + (size_t)i * DIM, embedding + (size_t)j * DIM));
    printf("%d sentences, %.1f ms per sentence (seq %d)\n", n, ms / n, SEQ);
  }
  free(embedding);
  if (file) {
    free(texts[0]); /* the file's text: the first line starts it */
    free(texts);
  }
  return 0;
}
