/* pool_rule.h — the pool rule on a split kernel's text (pool_rule.c). */
#ifndef KILN_POOL_RULE_H
#define KILN_POOL_RULE_H

#include <stdbool.h>
#include <stddef.h>

/* body: a kernel's statements (between its braces) after its loops are
 * split. True when every statement outside the split loops and
 * KILN_LEAD_ONLY blocks declares or assigns locals only; otherwise false,
 * with the first offending statement quoted in why. */
bool pool_rule_ok(const char *body, char *why, size_t why_size);

#endif
