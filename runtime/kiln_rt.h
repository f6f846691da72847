/* kiln_rt.h — the whole runtime of kiln's generated code: a few portable
 * macros. Generated files include it; it has no .c and no dependencies
 * beyond the C standard library's headers. */
#ifndef KILN_RT_H
#define KILN_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define KILN_ALIGNED(n) __attribute__((aligned(n)))
#else
#define KILN_ALIGNED(n)
#endif

/* Compile-time check usable in C99 (no _Static_assert needed). */
#define KILN_STATIC_ASSERT(cond, name) typedef char kiln_assert_##name[(cond) ? 1 : -1]

#endif
