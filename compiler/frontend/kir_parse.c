/* kir_parse.c — read the IR's text form (.kir, docs/kir.md) back into a
 * Graph: the other half of print.c. Hand-written recursive descent over the
 * characters; every error is "file:line:col: message" and nothing in the
 * text can make it read out of bounds (it is fuzzed). Values must be
 * defined before use, which the printer guarantees (nodes are in
 * topological order). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ops.h"
#include "../ir/print.h"

typedef struct Parser {
  Arena *a;
  Graph *g;
  Diag *d;
  const char *file;
  const char *s;   /* whole text */
  size_t len;      /* its length */
  size_t pos;
  int line, col;
  const unsigned char *bin;
  size_t binlen;
} Parser;

static bool perr(Parser *p, const char *fmt, ...) KILN_PRINTF(2, 3);
static bool perr(Parser *p, const char *fmt, ...) {
  if (p->d->failed)
    return false;
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* the Diag's file prefix is the .kir; add line and column */
  return diag_error(p->d, "%d:%d: %s", p->line, p->col, msg);
}

static char peek(Parser *p) { return p->s[p->pos]; }
static char peek2(Parser *p) { return p->s[p->pos] ? p->s[p->pos + 1] : 0; }

static void advance(Parser *p) {
  if (!p->s[p->pos])
    return;
  if (p->s[p->pos] == '\n') {
    p->line++;
    p->col = 1;
  } else {
    p->col++;
  }
  p->pos++;
}

/* spaces and newlines; with `comments`, also # ... to the end of line */
static void skip_ws(Parser *p, bool comments) {
  for (;;) {
    char c = peek(p);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
      advance(p);
    else if (c == '#' && comments)
      while (peek(p) && peek(p) != '\n')
        advance(p);
    else
      return;
  }
}

static bool accept(Parser *p, char c) {
  skip_ws(p, true);
  if (peek(p) != c)
    return false;
  advance(p);
  return true;
}

static bool expect(Parser *p, char c, const char *what) {
  if (accept(p, c))
    return true;
  char got = peek(p);
  return perr(p, "expected '%c' %s, found %s%c%s", c, what, got ? "'" : "", got ? got : ' ',
              got ? "'" : "end of file");
}

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* a bare word: identifiers, op names, dtype names, keywords */
static const char *word(Parser *p) {
  skip_ws(p, true);
  size_t start = p->pos;
  while (is_word_char(peek(p)))
    advance(p);
  if (p->pos == start)
    return NULL;
  return arena_printf(p->a, "%.*s", (int)(p->pos - start), p->s + start);
}

static bool keyword(Parser *p, const char *kw) {
  skip_ws(p, true);
  size_t n = strlen(kw);
  if (strncmp(p->s + p->pos, kw, n) != 0 || is_word_char(p->s[p->pos + n]))
    return false;
  for (size_t i = 0; i < n; i++)
    advance(p);
  return true;
}

static const char *quoted(Parser *p) {
  Buf b = {0};
  advance(p); /* the opening quote */
  for (;;) {
    char c = peek(p);
    if (!c || c == '\n') {
      buf_free(&b);
      perr(p, "unterminated string");
      return NULL;
    }
    advance(p);
    if (c == '"')
      break;
    if (c == '\\') {
      char e = peek(p);
      advance(p);
      if (e == 'n') {
        buf_put(&b, "\n", 1);
      } else if (e == 'x' && isxdigit((unsigned char)peek(p)) && isxdigit((unsigned char)peek2(p))) {
        char hex[3] = {peek(p), peek2(p), 0};
        advance(p);
        advance(p);
        char ch = (char)strtol(hex, NULL, 16);
        buf_put(&b, &ch, 1);
      } else if (e == '"' || e == '\\') {
        buf_put(&b, &e, 1);
      } else {
        buf_free(&b);
        perr(p, "unknown escape '\\%c' in string", e ? e : ' ');
        return NULL;
      }
      continue;
    }
    buf_put(&b, &c, 1);
  }
  const char *r = arena_strdup(p->a, b.s ? b.s : "");
  buf_free(&b);
  return r;
}

static const char *string_lit(Parser *p) {
  skip_ws(p, true);
  if (peek(p) != '"') {
    perr(p, "expected a string");
    return NULL;
  }
  return quoted(p);
}

/* %name or %"any name" */
static const char *value_name(Parser *p) {
  skip_ws(p, true);
  if (peek(p) != '%') {
    perr(p, "expected a value name like %%x");
    return NULL;
  }
  advance(p);
  if (peek(p) == '"')
    return quoted(p);
  size_t start = p->pos;
  while (is_word_char(peek(p)))
    advance(p);
  if (p->pos == start) {
    perr(p, "expected a name after '%%'");
    return NULL;
  }
  return arena_printf(p->a, "%.*s", (int)(p->pos - start), p->s + start);
}

/* A number token (int or float, with inf/nan); *is_float says which. */
static const char *number(Parser *p, bool *is_float) {
  skip_ws(p, true);
  size_t start = p->pos;
  if (peek(p) == '-' || peek(p) == '+')
    advance(p);
  while (isalnum((unsigned char)peek(p)) || peek(p) == '.' ||
         ((peek(p) == '-' || peek(p) == '+') && (p->s[p->pos - 1] == 'e' || p->s[p->pos - 1] == 'E')))
    advance(p);
  if (p->pos == start) {
    perr(p, "expected a number");
    return NULL;
  }
  const char *t = arena_printf(p->a, "%.*s", (int)(p->pos - start), p->s + start);
  *is_float = strpbrk(t, ".eEin") != NULL; /* '.', exponent, inf, nan */
  return t;
}

static bool parse_int(Parser *p, int64_t *v) {
  bool fl;
  const char *t = number(p, &fl);
  if (!t)
    return false;
  char *end;
  errno = 0;
  long long x = strtoll(t, &end, 10);
  if (fl || *end || errno)
    return perr(p, "expected an integer, found '%s'", t);
  *v = x;
  return true;
}

static bool parse_double(Parser *p, double *v) {
  bool fl;
  const char *t = number(p, &fl);
  if (!t)
    return false;
  char *end;
  *v = strtod(t, &end);
  if (*end)
    return perr(p, "expected a number, found '%s'", t);
  return true;
}

/* ---- types and data -------------------------------------------------------- */

static bool parse_type(Parser *p, Type *t, const char **sym) {
  if (accept(p, '?')) { /* not inferred yet */
    memset(t, 0, sizeof *t);
    t->rank = -1;
    return true;
  }
  const char *dn = word(p);
  DType dt = dn ? dt_from_name(dn) : DT_UNDEF;
  if (!dt_supported(dt))
    return perr(p, "expected a type like f32[1,16] (dtypes f32 f64 i8..i64 u8..u64 bool), "
                "found '%s'", dn ? dn : "");
  memset(t, 0, sizeof *t);
  t->dt = dt;
  if (!expect(p, '[', "after the dtype"))
    return false;
  if (accept(p, '*')) {
    t->rank = -1;
    return expect(p, ']', "after '*'");
  }
  if (accept(p, ']'))
    return true;
  do {
    if (t->rank >= MAX_RANK)
      return perr(p, "rank above %d", MAX_RANK);
    skip_ws(p, true);
    if (isdigit((unsigned char)peek(p))) {
      int64_t v;
      if (!parse_int(p, &v))
        return false;
      t->dims[t->rank++] = v;
    } else if (accept(p, '?')) {
      t->dims[t->rank++] = -1;
    } else {
      const char *s = word(p);
      if (!s || !sym)
        return perr(p, "expected a dim size%s", sym ? " or a symbolic name" : "");
      sym[t->rank] = s;
      t->dims[t->rank++] = -1;
    }
  } while (accept(p, ','));
  if (!expect(p, ']', "to close the shape"))
    return false;
  /* ? and names are -1 here: the known dims' product, without overflowing */
  if (!type_dims_ok(t, true))
    return perr(p, "tensor too large; expected at most %lld elements", (long long)MAX_NUMEL);
  return true;
}

static bool parse_elem(Parser *p, DType dt, void *data, int64_t i) {
  if (dt == DT_BOOL) {
    if (keyword(p, "true") || keyword(p, "1"))
      ((uint8_t *)data)[i] = 1;
    else if (!(keyword(p, "false") || keyword(p, "0")))
      return perr(p, "expected true or false");
    return true;
  }
  if (dt_is_float(dt)) {
    double v;
    if (!parse_double(p, &v))
      return false;
    el_set_f(dt, data, i, v);
    return true;
  }
  bool fl;
  const char *t = number(p, &fl);
  if (!t)
    return false;
  char *end;
  errno = 0;
  if (dt_is_signed_int(dt)) {
    long long v = strtoll(t, &end, 10);
    int bits = dt_bits(dt);
    bool range = bits == 64 || (v >= -(1LL << (bits - 1)) && v < (1LL << (bits - 1)));
    if (fl || *end || errno || !range)
      return perr(p, "'%s' is not a %s value", t, dt_name(dt));
    el_set_i(dt, data, i, v);
  } else {
    unsigned long long v = strtoull(t, &end, 10);
    int bits = dt_bits(dt);
    bool range = t[0] != '-' && (bits == 64 || v < (1ULL << bits));
    if (fl || *end || errno || !range)
      return perr(p, "'%s' is not a %s value", t, dt_name(dt));
    el_set_u(dt, data, i, v);
  }
  return true;
}

static bool parse_data(Parser *p, const Type *t, void **out) {
  if (t->rank < 0)
    return perr(p, "a constant needs a known shape");
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0)
      return perr(p, "a constant needs a known shape; dim %d is not a number", i);
  size_t bytes = type_bytes(t);
  int64_t n = type_numel(t);
  char ts[160];
  /* the data must be in the files before it is given memory: a shape
   * that claims 16 GiB is an error about the file, not out of memory */
  if (keyword(p, "bin")) {
    int64_t off;
    if (!expect(p, '(', "after bin") || !parse_int(p, &off) || !expect(p, ')', "after the offset"))
      return false;
    if (!p->bin)
      return perr(p, "bin(%lld) refers to the sidecar .bin file, which is missing", (long long)off);
    if (off < 0 || (size_t)off > p->binlen || p->binlen - (size_t)off < bytes)
      return perr(p, "bin(%lld): the sidecar has %zu bytes; expected %zu at that offset for %s",
                  (long long)off, p->binlen, bytes, type_str(t, ts, sizeof ts));
    *out = arena_alloc(p->a, bytes + 1);
    memcpy(*out, p->bin + off, bytes);
    return true;
  }
  /* n values take at least 2n - 1 characters ("0,0,...") */
  if (n > 0 && (uint64_t)n - 1 > (p->len - p->pos) / 2)
    return perr(p, "a constant %s holds %lld values, more than the %zu bytes left in the file can spell",
                type_str(t, ts, sizeof ts), (long long)n, p->len - p->pos);
  void *data = arena_alloc(p->a, bytes + 1);
  *out = data;
  if (keyword(p, "elided"))
    return perr(p, "this constant's data was elided in the dump; write the IR to a file "
                "(--dump-all=DIR, kiln opt -o) to get a loadable .kir + .bin");
  if (!expect(p, '[', "to start the constant's values"))
    return false;
  int64_t i = 0;
  if (!accept(p, ']')) {
    do {
      if (i >= n)
        return perr(p, "more values than the %lld of its shape", (long long)n);
      if (!parse_elem(p, t->dt, data, i++))
        return false;
    } while (accept(p, ','));
    if (!expect(p, ']', "after the values"))
      return false;
  }
  if (i != n)
    return perr(p, "%lld values; expected %lld for its shape", (long long)i, (long long)n);
  return true;
}

/* ---- attributes ------------------------------------------------------------ */

static bool parse_list(Parser *p, Attr *a, AttrKind kind) {
  a->kind = kind;
  int cap = 0;
  void *items = NULL;
  if (!accept(p, ']')) {
    do {
      if (kind == ATTR_INTS) {
        items = arena_grow(p->a, items, &cap, a->n + 1, sizeof(int64_t));
        if (!parse_int(p, &((int64_t *)items)[a->n]))
          return false;
      } else if (kind == ATTR_FLOATS) {
        items = arena_grow(p->a, items, &cap, a->n + 1, sizeof(double));
        if (!parse_double(p, &((double *)items)[a->n]))
          return false;
      } else {
        items = arena_grow(p->a, items, &cap, a->n + 1, sizeof(char *));
        if (!(((const char **)items)[a->n] = string_lit(p)))
          return false;
      }
      a->n++;
    } while (accept(p, ','));
    if (!expect(p, ']', "to close the list"))
      return false;
  }
  if (!items)
    items = arena_alloc(p->a, 8);
  if (kind == ATTR_INTS)
    a->ints = items;
  else if (kind == ATTR_FLOATS)
    a->floats = items;
  else
    a->strings = items;
  return true;
}

static bool parse_attr(Parser *p, Node *n) {
  const char *name = word(p);
  if (!name)
    return perr(p, "expected an attribute name");
  if (attr_get(n, name))
    return perr(p, "attribute '%s' given twice", name);
  if (!expect(p, '=', "after the attribute name"))
    return false;
  Attr tmp = {0};
  skip_ws(p, true);
  char c = peek(p);
  if (c == '"') {
    tmp.kind = ATTR_STRING;
    if (!(tmp.s = quoted(p)))
      return false;
  } else if (c == '[') {
    advance(p);
    if (!parse_list(p, &tmp, ATTR_INTS))
      return false;
  } else if (keyword(p, "ints")) {
    if (!expect(p, '[', "to start the list") || !parse_list(p, &tmp, ATTR_INTS))
      return false;
  } else if (keyword(p, "floats")) {
    if (!expect(p, '[', "to start the list") || !parse_list(p, &tmp, ATTR_FLOATS))
      return false;
  } else if (keyword(p, "strings")) {
    if (!expect(p, '[', "to start the list") || !parse_list(p, &tmp, ATTR_STRINGS))
      return false;
  } else if (keyword(p, "tensor")) {
    tmp.kind = ATTR_TENSOR;
    tmp.t = arena_alloc(p->a, sizeof(Tensor));
    if (!parse_type(p, &tmp.t->type, NULL) || !parse_data(p, &tmp.t->type, &tmp.t->data))
      return false;
  } else {
    bool fl;
    size_t save = p->pos;
    int sl = p->line, sc = p->col;
    const char *t = number(p, &fl);
    if (!t)
      return false;
    p->pos = save, p->line = sl, p->col = sc;
    if (fl) {
      tmp.kind = ATTR_FLOAT;
      if (!parse_double(p, &tmp.f))
        return false;
    } else {
      tmp.kind = ATTR_INT;
      if (!parse_int(p, &tmp.i))
        return false;
    }
  }
  Attr *a = node_add_attr(p->g, n, name, tmp.kind);
  const char *keep = a->name;
  *a = tmp;
  a->name = keep;
  return true;
}

/* ---- lines ----------------------------------------------------------------- */

static int defined_value(Parser *p, const char *name) {
  int v = graph_find_value(p->g, name);
  if (v < 0 || (!p->g->vals[v].is_input && !p->g->vals[v].data && p->g->vals[v].producer < 0))
    return -1;
  return v;
}

static bool new_value(Parser *p, const char *name, int *vid) {
  if (graph_find_value(p->g, name) >= 0)
    return perr(p, "%%%s is defined twice", name);
  *vid = graph_add_value(p->g, name);
  return true;
}

static bool parse_const(Parser *p) {
  const char *name = value_name(p);
  int vid = -1;
  Type t;
  if (!name || !new_value(p, name, &vid) || !expect(p, ':', "after the constant's name") ||
      !parse_type(p, &t, NULL) || !expect(p, '=', "before the constant's data"))
    return false;
  Value *v = &p->g->vals[vid];
  v->type = t;
  return parse_data(p, &t, &v->data);
}

/* "# from: text" at the end of a node line: the node's origin (any "# word: " is read) */
static const char *origin_comment(Parser *p) {
  while (peek(p) == ' ' || peek(p) == '\t')
    advance(p);
  if (peek(p) != '#')
    return NULL;
  size_t start = p->pos;
  while (peek(p) && peek(p) != '\n')
    advance(p);
  const char *line = arena_printf(p->a, "%.*s", (int)(p->pos - start), p->s + start);
  const char *colon = strstr(line, ": ");
  if (!colon || strncmp(line, "# ", 2) != 0)
    return NULL;
  char *o = arena_strdup(p->a, colon + 2);
  for (size_t k = strlen(o); k > 0 && (o[k - 1] == ' ' || o[k - 1] == '\r'); k--)
    o[k - 1] = 0;
  return *o ? o : NULL;
}

static bool parse_node(Parser *p) {
  int outs[64], ins[64], nout = 0, nin = 0;
  const char *outnames[64];
  do {
    if (nout >= 64)
      return perr(p, "too many outputs");
    if (!(outnames[nout++] = value_name(p)))
      return false;
  } while (accept(p, ','));
  if (!expect(p, '=', "after the node's outputs"))
    return false;
  int line = p->line, col = p->col;
  const char *opname = word(p);
  int op = opname ? op_lookup(opname) : -1;
  if (op < 0) {
    p->line = line, p->col = col + 1;
    return perr(p, "unknown op '%s'; expected one of the ops `kiln ops` lists", opname ? opname : "");
  }
  int beyond = op_version_beyond(op, p->g->opset);
  if (beyond) {
    p->line = line, p->col = col + 1;
    return perr(p, "%s at opset %d is its version %d, which kiln does not implement yet; expected "
                "version %d or older", opname, p->g->opset, beyond, op_table[op].upto);
  }
  skip_ws(p, false);
  if (peek(p) == '%' || peek(p) == '_') {
    do {
      if (nin >= 64)
        return perr(p, "too many inputs");
      skip_ws(p, true);
      if (peek(p) == '_' && !is_word_char(peek2(p))) {
        advance(p);
        ins[nin++] = -1;
        continue;
      }
      int l = p->line, c = p->col;
      const char *nm = value_name(p);
      if (!nm)
        return false;
      int v = defined_value(p, nm);
      if (v < 0) {
        p->line = l, p->col = c;
        return perr(p, "use of undefined value %%%s", nm);
      }
      ins[nin++] = v;
    } while (accept(p, ','));
  }
  const OpInfo *oi = &op_table[op];
  if (nin < oi->min_in || (oi->max_in >= 0 && nin > oi->max_in) || nout < oi->min_out ||
      (oi->max_out >= 0 && nout > oi->max_out))
    return perr(p, "%s takes %d..%d inputs and %d..%d outputs; found %d and %d", oi->name,
                oi->min_in, oi->max_in, oi->min_out, oi->max_out, nin, nout);
  for (int i = 0; i < oi->min_in; i++)
    if (ins[i] < 0)
      return perr(p, "%s: input %d is '_'; expected a value (only optional inputs may be "
                  "omitted)", oi->name, i);
  for (int j = 0; j < nout; j++)
    if (!new_value(p, outnames[j], &outs[j]))
      return false;
  int ni = graph_add_node(p->g, op, NULL, ins, nin, outs, nout);
  if (accept(p, '{')) {
    do {
      if (!parse_attr(p, &p->g->nodes[ni]))
        return false;
    } while (accept(p, ','));
    if (!expect(p, '}', "to close the attributes"))
      return false;
    AttrKind want;
    const Attr *bad = attr_mistyped(&p->g->nodes[ni], &want);
    if (bad)
      return perr(p, "%s: attribute '%s' is %s; expected %s", oi->name, bad->name, attr_kind_name(bad->kind),
                  attr_kind_name(want));
  }
  if (!expect(p, ':', "before the output types"))
    return false;
  for (int j = 0; j < nout; j++) {
    if (j && !expect(p, ',', "between output types"))
      return false;
    Value *v = &p->g->vals[outs[j]];
    if (!parse_type(p, &v->type, NULL))
      return false;
    /* only blanks before 'alias': skip_ws would swallow the origin comment */
    while (peek(p) == ' ' || peek(p) == '\t')
      advance(p);
    if (!strncmp(p->s + p->pos, "alias", 5) && !is_word_char(p->s[p->pos + 5]) && keyword(p, "alias")) {
      if (nin == 0 || ins[0] < 0)
        return perr(p, "'alias' needs a first input to alias");
      v->alias_of = ins[0];
    }
    while (peek(p) == ' ' || peek(p) == '\t')
      advance(p);
    if (peek(p) == '@') { /* "@ws OFFSET": placed by the plan pass */
      advance(p);
      int64_t off;
      if (!keyword(p, "ws") || !parse_int(p, &off) || off < 0)
        return perr(p, "expected '@ws OFFSET' after the type");
      v->ws_offset = off;
    }
  }
  const char *origin = origin_comment(p);
  Node *n = &p->g->nodes[ni];
  if (origin) {
    n->origin = origin;
    const char *plus = strstr(origin, " + ");
    n->name = plus ? arena_printf(p->a, "%.*s", (int)(plus - origin), origin) : origin;
  }
  return true;
}

/* ---- states ----------------------------------------------------------------- */

/* The output a state names as its next value, and where it was named. */
typedef struct StateLink {
  const char *name;
  int line, col;
} StateLink;

/* "state(next=%NAME, init=DATA)" after an input's type (the keyword read). */
static bool parse_state(Parser *p, int vid, StateLink *link) {
  Value *v = &p->g->vals[vid];
  if (!expect(p, '(', "after 'state'") || !keyword(p, "next") || !expect(p, '=', "after 'next'"))
    return perr(p, "expected state(next=%%NAME, init=DATA)");
  skip_ws(p, true);
  link->line = p->line, link->col = p->col;
  if (keyword(p, "in_place")) /* a KV cache: a CacheWrite must change it (verify) */
    link->name = NULL;
  else if (!(link->name = value_name(p)))
    return perr(p, "expected state(next=%%NAME, init=DATA)");
  if (!expect(p, ',', "after the state's next value") ||
      !keyword(p, "init") || !expect(p, '=', "after 'init'"))
    return perr(p, "expected state(next=%%NAME, init=DATA)");
  for (int i = 0; i < v->type.rank; i++)
    if (v->type.dims[i] < 0)
      return perr(p, "state %%%s has a symbolic dim; expected a fixed shape", v->name);
  v->is_state = true;
  return parse_data(p, &v->type, &v->state_init) && expect(p, ')', "to close state(...)");
}

/* Each state's next value is one of the graph's outputs, named in the
 * output list; the state records its index there. */
static bool link_states(Parser *p, const StateLink *link, const char **outnames, int nout) {
  for (int i = 0; i < p->g->ninputs; i++) {
    Value *v = &p->g->vals[p->g->inputs[i]];
    if (!v->is_state)
      continue;
    v->state_next = -1;
    if (!link[i].name) /* in place */
      continue;
    int listed = 0;
    for (int k = 0; k < nout; k++)
      if (!strcmp(outnames[k], link[i].name) && listed++ == 0)
        v->state_next = k;
    p->line = link[i].line, p->col = link[i].col;
    if (listed != 1)
      return perr(p, "state %%%s: its next value %%%s is %s the graph's outputs; expected it "
                  "there once", v->name, link[i].name, listed ? "listed twice among" : "not among");
    for (int j = 0; j < i; j++)
      if (p->g->vals[p->g->inputs[j]].is_state && link[j].name && !strcmp(link[j].name, link[i].name))
        return perr(p, "state %%%s: its next value %%%s is the next value of state %%%s too; "
                    "expected one of its own", v->name, link[i].name, p->g->vals[p->g->inputs[j]].name);
  }
  return true;
}

/* ---- a generative model's entry points ---------------------------------------- */

/* An input of the graph called by name, i64 of n elements (n < 0: any). */
static bool entry_input(Parser *p, int *vid, int64_t n) {
  const char *nm = value_name(p);
  if (!nm)
    return false;
  int v = graph_find_value(p->g, nm);
  if (v < 0 || !p->g->vals[v].is_input || p->g->vals[v].type.dt != DT_I64 || p->g->vals[v].type.rank != 1 ||
      (n >= 0 && p->g->vals[v].type.dims[0] != n))
    return perr(p, "%%%s: expected a graph input i64[%s]", nm, n >= 0 ? "1" : "T");
  *vid = v;
  return true;
}

/* "decoder ctx=N NAME(%tokens, %start, %count -> %logits) ...
 * [encode(%in, ...)]" (the keyword read): ir.h's Decoder, prefill and
 * step, then an encode entry with graph inputs of its own. */
/* "encode(%src, ...)" after its '(': graph inputs that are not states. */
static bool parse_encode(Parser *p, DecoderEntry *en) {
  *en = (DecoderEntry){.name = "encode", .tokens_vid = -1, .start_vid = -1, .count_vid = -1, .logits_out = -1};
  en->inputs = arena_alloc(p->a, sizeof(int) * (size_t)(p->g->ninputs + 1));
  do {
    const char *nm = value_name(p);
    if (!nm)
      return false;
    int v = graph_find_value(p->g, nm);
    if (v < 0 || !p->g->vals[v].is_input || p->g->vals[v].is_state)
      return perr(p, "%%%s: expected a graph input that is not a state", nm);
    for (int j = 0; j < en->ninputs; j++)
      if (en->inputs[j] == v)
        return perr(p, "%%%s twice; expected each input once", nm);
    if (en->ninputs == p->g->ninputs)
      return perr(p, "more encode inputs than the graph has");
    en->inputs[en->ninputs++] = v;
    while (peek(p) == ' ' || peek(p) == '\t')
      advance(p);
  } while (peek(p) == ',' && (advance(p), true));
  return expect(p, ')', "to close the entry");
}

static bool parse_decoder(Parser *p, const char **outnames, int nout) {
  Decoder *dec = arena_alloc(p->a, sizeof *dec);
  if (p->g->decoder)
    return perr(p, "a second decoder line; expected one");
  if (!keyword(p, "ctx") || !expect(p, '=', "after 'ctx'") || !parse_int(p, &dec->ctx) || dec->ctx < 1)
    return perr(p, "expected decoder ctx=N with N >= 1");
  for (;;) { /* entries to the end of the line */
    while (peek(p) == ' ' || peek(p) == '\t')
      advance(p);
    if (!is_word_char(peek(p)))
      break;
    if (dec->nentries == DECODER_MAX_ENTRIES)
      return perr(p, "a fourth entry; expected prefill, step and encode");
    DecoderEntry *en = &dec->entries[dec->nentries++];
    if (!(en->name = word(p)) || !expect(p, '(', "after the entry's name"))
      return false;
    if (!strcmp(en->name, "encode")) {
      if (dec->nentries != 3)
        return perr(p, "encode as entry %d; expected it after prefill and step", dec->nentries);
      if (!parse_encode(p, en))
        return false;
      continue;
    }
    if (!entry_input(p, &en->tokens_vid, -1) ||
        !expect(p, ',', "after the tokens") || !entry_input(p, &en->start_vid, 1) ||
        !expect(p, ',', "after the start") || !entry_input(p, &en->count_vid, 1) ||
        !expect(p, '-', "('->' before the logits)") || !expect(p, '>', "('->' before the logits)"))
      return false;
    en->tokens = p->g->vals[en->tokens_vid].type.dims[0];
    const char *out = value_name(p);
    if (!out)
      return false;
    en->logits_out = -1;
    for (int k = 0; k < nout; k++)
      if (!strcmp(outnames[k], out))
        en->logits_out = k;
    if (en->logits_out < 0)
      return perr(p, "%%%s: expected one of the graph's outputs", out);
    if (!expect(p, ')', "to close the entry"))
      return false;
  }
  if (dec->nentries < 2)
    return perr(p, "expected the decoder's entries: prefill(...) step(...)");
  p->g->decoder = dec;
  return true;
}

static bool parse_graph(Parser *p, const char ***outnames, int *nout) {
  if (!keyword(p, "graph"))
    return perr(p, "expected 'graph' at the start of the IR");
  if (!expect(p, '@', "before the graph's name"))
    return false;
  const char *gname = peek(p) == '"' ? quoted(p) : word(p);
  if (!gname)
    return perr(p, "expected the graph's name");
  p->g->name = gname;
  if (keyword(p, "opset")) {
    int64_t v;
    if (!parse_int(p, &v))
      return false;
    if (v < 1 || v > onnx_opset_newest())
      return perr(p, "opset %lld; expected 1 to %d", (long long)v, onnx_opset_newest());
    p->g->opset = (int)v;
  }
  if (!expect(p, '(', "before the graph's inputs"))
    return false;
  StateLink *links = NULL; /* per input */
  int caplinks = 0;
  if (!accept(p, ')')) {
    do {
      const char *nm = value_name(p);
      int vid = -1;
      if (!nm || !new_value(p, nm, &vid) || !expect(p, ':', "after the input's name"))
        return false;
      Value *v = &p->g->vals[vid];
      if (!parse_type(p, &v->type, v->sym))
        return false;
      for (int i = 0; i < v->type.rank; i++)
        if (v->type.dims[i] < 0 && !v->sym[i])
          v->sym[i] = arena_printf(p->a, "%s[%d]", nm, i);
      graph_add_input(p->g, vid);
      links = arena_grow(p->a, links, &caplinks, p->g->ninputs, sizeof(StateLink));
      if (keyword(p, "state") && !parse_state(p, vid, &links[p->g->ninputs - 1]))
        return false;
    } while (accept(p, ','));
    if (!expect(p, ')', "after the graph's inputs"))
      return false;
  }
  if (!expect(p, '-', "('->' before the outputs)") || !expect(p, '>', "('->' before the outputs)") ||
      !expect(p, '(', "before the graph's outputs"))
    return false;
  int cap = 0;
  if (!accept(p, ')')) {
    do {
      *outnames = arena_grow(p->a, *outnames, &cap, *nout + 1, sizeof(char *));
      if (!((*outnames)[(*nout)++] = value_name(p)))
        return false;
    } while (accept(p, ','));
    if (!expect(p, ')', "after the graph's outputs"))
      return false;
  }
  if (!link_states(p, links, *outnames, *nout))
    return false;
  if (!expect(p, '{', "to open the graph's body"))
    return false;
  for (;;) {
    skip_ws(p, true);
    if (accept(p, '}'))
      break;
    if (!peek(p))
      return perr(p, "unexpected end of file; expected '}' to close the graph");
    if (keyword(p, "decoder") ? !parse_decoder(p, *outnames, *nout)
        : keyword(p, "const") ? !parse_const(p) : !parse_node(p))
      return false;
  }
  skip_ws(p, true);
  if (peek(p))
    return perr(p, "unexpected text after the graph");
  return true;
}

Graph *kir_parse(Arena *a, const char *file, const char *text, const unsigned char *bin,
                 size_t binlen, Diag *d) {
  Parser p = {.a = a, .d = d, .file = file, .s = text, .len = strlen(text), .line = 1, .col = 1, .bin = bin,
              .binlen = binlen};
  d->file = file;
  p.g = graph_new(a, file);
  p.g->opset = 17;
  const char **outnames = NULL;
  int nout = 0;
  if (!parse_graph(&p, &outnames, &nout))
    return NULL;
  for (int i = 0; i < nout; i++) {
    int v = defined_value(&p, outnames[i]);
    if (v < 0) {
      diag_error(d, "graph output %%%s is never defined", outnames[i]);
      return NULL;
    }
    graph_add_output(p.g, v);
  }
  for (int i = 0; i < p.g->nnodes; i++)
    p.g->nodes[i].opset = p.g->opset;
  return p.g;
}
