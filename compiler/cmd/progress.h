/* progress.h — what a long compile is doing, for a person at a terminal.
 *
 * A 100 MB model spends seconds reading, folding and writing; without a
 * word on stderr the user cannot tell a slow compile from a hung one. When
 * stderr is a terminal (kiln compile, without -q / --quiet), the stages
 * report themselves: a status line rewritten in place while the model is
 * read and the passes run, then finished lines for the pass count and for
 * each file written, with its size in MB. When stderr is not a terminal —
 * a build system, a pipe, a log — nothing is printed, so builds and tests
 * see the same output as before.
 *
 * The driver's stages call these; they do nothing until progress_start
 * turned them on. A stage clears its status line before it returns, so an
 * error message never lands at the end of a half-written line. */
#ifndef KILN_PROGRESS_H
#define KILN_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

/* On when `wanted` (kiln compile, no -q) and stderr is a terminal. */
void progress_start(bool wanted);
bool progress_on(void);
/* The status line, rewritten in place: "kiln: reading model.onnx". */
void progress_status(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Erase the status line (nothing when none is shown). */
void progress_clear(void);
/* Pass i (from 1) of n, before it runs: "kiln: pass 7/31 fuse_attention". */
void progress_pass(int i, int n, const char *name);
/* The passes are done: "kiln: 31 passes in 0.42 s" replaces the status. */
void progress_passes_done(int n);
/* A file written: "kiln: wrote out/net.weights.bin (90.26 MB)". */
void progress_wrote(const char *path, size_t bytes);

#endif
