/* base.c — arena, string buffer, diagnostics and file I/O (see base.h). */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void kiln_bug(const char *file, int line, const char *expr) {
  fprintf(stderr, "kiln: internal error at %s:%d: assertion '%s' failed\n", file, line, expr);
  abort();
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "kiln: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

/* ---- arena ---------------------------------------------------------------- */

struct ArenaBlock {
  ArenaBlock *next;
  size_t size;
  _Alignas(16) unsigned char data[];
};

Arena *arena_new(void) {
  Arena *a = xmalloc(sizeof *a);
  memset(a, 0, sizeof *a);
  return a;
}

void arena_free(Arena *a) {
  if (!a)
    return;
  for (ArenaBlock *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t size) {
  if (size > SIZE_MAX / 4) { /* a negative count cast to size_t, never a real request */
    fprintf(stderr, "kiln: out of memory (%zu bytes)\n", size);
    exit(1);
  }
  size = (size + 15) & ~(size_t)15;
  if (!a->head || a->used + size > a->head->size) {
    size_t bs = size > (1u << 20) ? size : (1u << 20);
    ArenaBlock *b = xmalloc(sizeof *b + bs);
    b->size = bs;
    if (a->head && size > (1u << 20)) {
      /* big one-off: keep the current head for small allocations */
      b->next = a->head->next;
      a->head->next = b;
      memset(b->data, 0, size);
      a->total += size;
      return b->data;
    }
    b->next = a->head;
    a->head = b;
    a->used = 0;
  }
  void *p = a->head->data + a->used;
  a->used += size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

void *arena_dup(Arena *a, const void *p, size_t size) {
  void *q = arena_alloc(a, size);
  if (size)
    memcpy(q, p, size);
  return q;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_dup(a, s, strlen(s) + 1);
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

void *arena_grow(Arena *a, void *p, int *cap, int need, size_t item) {
  if (need <= *cap)
    return p;
  int nc = *cap ? *cap : 8;
  while (nc < need)
    nc *= 2;
  void *q = arena_alloc(a, (size_t)nc * item);
  if (p)
    memcpy(q, p, (size_t)*cap * item);
  *cap = nc;
  return q;
}

/* ---- string buffer -------------------------------------------------------- */

void buf_put(Buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (b->len + n + 1 > nc)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      fprintf(stderr, "kiln: out of memory\n");
      exit(1);
    }
    b->s = ns;
    b->cap = nc;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char small[512];
  if (n < (int)sizeof small) {
    vsnprintf(small, sizeof small, fmt, ap);
    buf_put(b, small, (size_t)n);
    return;
  }
  char *big = xmalloc((size_t)n + 1);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  buf_put(b, big, (size_t)n);
  free(big);
}

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void buf_free(Buf *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* ---- diagnostics ---------------------------------------------------------- */

bool diag_error(Diag *d, const char *fmt, ...) {
  if (d->failed)
    return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  d->failed = true;
  return false;
}

void diag_print(const Diag *d) {
  /* one line, always: newlines in a message would break the contract */
  char line[sizeof d->msg];
  snprintf(line, sizeof line, "%s", d->failed ? d->msg : "unknown error");
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
  if (d->file)
    fprintf(stderr, "kiln: %s: %s\n", d->file, line);
  else
    fprintf(stderr, "kiln: %s\n", line);
}

/* ---- files ---------------------------------------------------------------- */

const char *path_outside(Arena *a, const char *dir, const char *path) {
  char *rd = realpath(dir, NULL), *rp = realpath(path, NULL);
  const char *out = NULL;
  if (rd && rp) {
    size_t n = strlen(rd);
    bool inside = !strncmp(rp, rd, n) && (rp[n] == '/' || (n == 1 && rd[0] == '/'));
    if (!inside)
      out = arena_strdup(a, rp);
  }
  free(rd);
  free(rp);
  return out;
}

FILE *open_regular_file(const char *path, const char **why) {
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    *why = strerror(errno);
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    *why = S_ISDIR(st.st_mode) ? "a folder, not a file" : "not a regular file (a FIFO, socket or device)";
    return NULL;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    *why = strerror(errno);
    close(fd);
  }
  return f;
}

unsigned char *read_file(const char *path, size_t *len, Diag *d) {
  FILE *f = fopen(path, "rb"); /* what the user names may be a pipe (/dev/stdin) */
  if (!f) {
    diag_error(d, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  Buf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    buf_put(&b, chunk, n);
  bool err = ferror(f);
  fclose(f);
  if (err) {
    buf_free(&b);
    diag_error(d, "cannot read '%s'", path);
    return NULL;
  }
  if (!b.s)
    buf_put(&b, "", 0);
  *len = b.len;
  return (unsigned char *)b.s;
}

bool write_file_atomic(const char *path, const void *data, size_t len, Diag *d) {
  FilePart part = {data, len};
  return write_file_parts_atomic(path, &part, 1, d);
}

bool write_file_parts_atomic(const char *path, const FilePart *parts, size_t nparts, Diag *d) {
  static const unsigned char zeros[256];
  size_t pl = strlen(path);
  char *tmp = xmalloc(pl + 32);
  snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    diag_error(d, "cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < nparts && ok; i++) {
    if (parts[i].data) {
      ok = fwrite(parts[i].data, 1, parts[i].len, f) == parts[i].len;
      continue;
    }
    for (size_t left = parts[i].len; left && ok; ) { /* data NULL: zero bytes */
      size_t k = left < sizeof zeros ? left : sizeof zeros;
      ok = fwrite(zeros, 1, k, f) == k;
      left -= k;
    }
  }
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) != 0)
    ok = false;
  if (!ok) {
    remove(tmp);
    diag_error(d, "cannot write '%s'", path);
  }
  free(tmp);
  return ok;
}

bool make_dirs(const char *dir, Diag *d) {
  size_t n = strlen(dir);
  char *p = xmalloc(n + 1);
  memcpy(p, dir, n + 1);
  bool ok = true;
  for (size_t i = 1; i <= n && ok; i++) {
    if (p[i] != '/' && p[i] != 0)
      continue;
    char c = p[i];
    p[i] = 0;
    struct stat st;
    if (stat(p, &st) != 0 && mkdir(p, 0777) != 0 && errno != EEXIST)
      ok = diag_error(d, "cannot create the folder '%s': %s", p, strerror(errno));
    else if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode))
      ok = diag_error(d, "cannot create the folder '%s': a file of that name is in the way", p);
    p[i] = c;
  }
  free(p);
  return ok;
}

bool make_parent_dirs(const char *path, Diag *d) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path)
    return true;
  size_t n = (size_t)(slash - path);
  char *dir = xmalloc(n + 1);
  memcpy(dir, path, n);
  dir[n] = 0;
  bool ok = make_dirs(dir, d);
  free(dir);
  return ok;
}

/* Levenshtein distance of a and b, each at most 63 bytes (longer: far). */
static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63)
    return 1 << 20;
  int row[64];
  for (size_t j = 0; j <= lb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb];
}

const char *closest_name(const char *s, const char *const *cands, int n) {
  int limit = (int)strlen(s) / 3, best = 1 << 20;
  limit = limit < 1 ? 1 : limit;
  const char *pick = NULL;
  for (int i = 0; i < n; i++) {
    int dist = edit_distance(s, cands[i]);
    if (dist < best && dist <= limit && strcmp(s, cands[i]) != 0)
      best = dist, pick = cands[i];
  }
  return pick;
}
