/* progress.c — stderr progress for compiles watched at a terminal
 * (progress.h says when and why). The status line is written from column
 * 0 and ends in a carriage return, so the cursor stays at its start: the
 * next status erases it (ESC [ K) and rewrites it, and a line anyone else
 * prints meanwhile (a note, an error, -v's fusion log) overwrites it
 * instead of being appended to it. Finished lines end in \n. */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static bool on;          /* progress_start found a terminal */
static bool shown;       /* a status line is on the screen */
static double t_first;   /* when the first pass started (seconds) */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(bool wanted) { on = wanted && isatty(STDERR_FILENO); }

bool progress_on(void) { return on; }

void progress_status(const char *fmt, ...) {
  if (!on)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("\033[Kkiln: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\r', stderr);
  fflush(stderr);
  shown = true;
}

void progress_clear(void) {
  if (!on || !shown)
    return;
  fputs("\033[K", stderr);
  fflush(stderr);
  shown = false;
}

void progress_pass(int i, int n, const char *name) {
  if (!on)
    return;
  if (i == 1)
    t_first = now_s();
  progress_status("pass %d/%d %s", i, n, name);
}

void progress_passes_done(int n) {
  if (!on)
    return;
  progress_clear();
  fprintf(stderr, "kiln: %d passes in %.2f s\n", n, n ? now_s() - t_first : 0.0);
}

void progress_wrote(const char *path, size_t bytes) {
  if (!on)
    return;
  progress_clear();
  fprintf(stderr, "kiln: wrote %s (%.2f MB)\n", path, (double)bytes / 1e6);
}
