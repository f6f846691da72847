/* base.h — the compiler's small shared toolkit: an arena allocator (one per
 * compilation; passes never free), a growable string buffer, and the
 * diagnostic record every stage reports bad input through.
 *
 * Errors come in three kinds (STYLE.md): bad input goes through Diag and ends
 * as one line "kiln: FILE: node 'NAME' (Op): what; expected what" and exit 1;
 * internal bugs hit KILN_ASSERT, which names file and line; generated C
 * checks itself with static asserts. */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KILN_VERSION "0.1.0"

#if defined(__GNUC__)
#define KILN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KILN_NORETURN __attribute__((noreturn))
#else
#define KILN_PRINTF(a, b)
#define KILN_NORETURN
#endif

KILN_NORETURN void kiln_bug(const char *file, int line, const char *expr);
#define KILN_ASSERT(c) ((c) ? (void)0 : kiln_bug(__FILE__, __LINE__, #c))
#define KILN_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- arena ---------------------------------------------------------------- */

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
  size_t used;       /* bytes used in head */
  size_t total;      /* bytes handed out, for --stats */
} Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);        /* zeroed, 16-byte aligned */
void *arena_dup(Arena *a, const void *p, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Grow an arena-owned array to hold at least `need` items (old storage is
 * abandoned to the arena). */
void *arena_grow(Arena *a, void *p, int *cap, int need, size_t item);

/* ---- string buffer (heap, owned by the caller) ---------------------------- */

typedef struct Buf {
  char *s;
  size_t len, cap;
} Buf;

void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) KILN_PRINTF(2, 3);
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
void buf_free(Buf *b);

/* ---- diagnostics ---------------------------------------------------------- */

typedef struct Diag {
  const char *file;   /* the input file the message is about */
  char msg[1024];     /* the first error; later ones are dropped */
  bool failed;
} Diag;

/* Record an error (first one wins) and return false, so callers can write
 * `return diag_error(d, ...)`. (diag_node, the same about one node, is in
 * ir.h: base knows nothing of the IR.) */
bool diag_error(Diag *d, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Print "kiln: FILE: msg" to stderr. */
void diag_print(const Diag *d);

/* ---- files ---------------------------------------------------------------- */

/* fopen(path, "rb") of a regular file only, for paths a model names (its
 * external data): a FIFO would block kiln (even at open), a device never
 * end. NULL with *why set (what it is, or strerror) otherwise. */
FILE *open_regular_file(const char *path, const char **why);
/* Where path really is (links followed) when that is outside the folder
 * dir (links followed too), else NULL: inside, or either cannot be
 * resolved (a missing file fails where it is opened). */
const char *path_outside(Arena *a, const char *dir, const char *path);
/* Read a whole file; NULL + diag on failure. */
unsigned char *read_file(const char *path, size_t *len, Diag *d);
/* Write atomically: to a temp file in the same folder, then rename, so a
 * failure never leaves a partial output behind. */
bool write_file_atomic(const char *path, const void *data, size_t len, Diag *d);
/* The same for a file written in parts, streamed one after another (a
 * part with data NULL is len zero bytes): nothing is copied. */
typedef struct FilePart {
  const void *data;
  size_t len;
} FilePart;
bool write_file_parts_atomic(const char *path, const FilePart *parts, size_t nparts, Diag *d);
/* mkdir -p of the folder that holds path (nothing when path has no '/'),
 * and of dir itself with make_dirs: an output flag's missing folders are
 * created, as compilers do. False + diag naming the folder on failure. */
bool make_parent_dirs(const char *path, Diag *d);
bool make_dirs(const char *dir, Diag *d);

/* The candidate closest to s by edit distance, when close enough to be a
 * likely typo (at most a third of s's length, at least 1), else NULL:
 * "did you mean" for options, commands and names. */
const char *closest_name(const char *s, const char *const *cands, int n);

#endif
