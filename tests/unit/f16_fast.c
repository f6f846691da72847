/* f16_fast.c — kiln_f16_to_f32_fast (runtime/kiln_rt.h: the block
 * kernels' scale conversion, F16C's vcvtph2ps or a branch-free bit trick)
 * and kiln_f16_to_f32_branchless (an f16 KV cache's loads: the bit trick
 * always) give kiln_f16_to_f32's value for all 65536 f16 bit patterns: the same
 * bits, or a NaN of the same sign for a NaN. Built plain and with -mf16c
 * (tests/tests.cmake). Prints one line; exits 1 on a disagreement. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln_rt.h"

int main(void) {
  int fails = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = kiln_f16_to_f32_fast((uint16_t)h), b = kiln_f16_to_f32((uint16_t)h);
    float c = kiln_f16_to_f32_branchless((uint16_t)h);
    bool same = isnan(b) ? isnan(a) && !signbit(a) == !signbit(b) : memcmp(&a, &b, 4) == 0;
    bool same_c = isnan(b) ? isnan(c) && !signbit(c) == !signbit(b) : memcmp(&c, &b, 4) == 0;
    if (!same && fails++ < 10)
      printf("FAIL f16 0x%04x: fast %a, expected %a\n", h, (double)a, (double)b);
    if (!same_c && fails++ < 10)
      printf("FAIL f16 0x%04x: branchless %a, expected %a\n", h, (double)c, (double)b);
  }
#if defined(__F16C__)
  const char *how = "F16C";
#else
  const char *how = "bit trick";
#endif
  if (!fails)
    printf("ok   kiln_f16_to_f32_fast (%s) and _branchless = kiln_f16_to_f32 on all 65536 f16 values\n", how);
  return fails ? 1 : 0;
}
