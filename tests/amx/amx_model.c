/* amx_model.c — kiln_rt.h's C model of TDPBUSD and TDPBF16PS (built with
 * KILN_AMX_EMULATE) against the instructions themselves, bit for bit, on
 * full 16 x 64-byte tiles: random operands, then for bf16 the corners
 * (denormal inputs and sums, products that overflow, cancel or underflow,
 * infinities against finite values). Exit 77 (skipped) where the CPU or
 * the kernel does not give this process AMX; where the compiler cannot
 * target it, the model is only run. */
#define KILN_AMX_EMULATE 1
#include "kiln_rt.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11)
#define HAVE_HW 1
#include <cpuid.h>
#include <immintrin.h>

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} cfg_t;

#define AMX_TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16")))

static int hw_ready(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 22 & 1) || !(d >> 24 & 1) || !(d >> 25 & 1))
    return 0;
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
  return r == 0;
}

/* c = c + a . b on the hardware; op 0: TDPBUSD, 1: TDPBF16PS */
AMX_TARGET static void hw_dp(int op, uint8_t c[16][64], uint8_t a[16][64], uint8_t b[16][64]) {
  static const cfg_t cfg = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
  _tile_loadconfig(&cfg);
  _tile_loadd(0, c, 64);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  if (op)
    _tile_dpbf16ps(0, 1, 2);
  else
    _tile_dpbusd(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
}
#endif

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* A bf16 of kind `mode`: 0 random normal values around 1, 1 the corners. */
static uint16_t bf16_of(int mode) {
  if (mode == 0)
    return kiln_f32_to_bf16(((float)(int)(next() % 20001) - 10000.0f) / 3000.0f);
  static const uint16_t corner[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x0081, 0x7f7f, 0xff7f, 0x7f80,
                                    0xff80, 0x3f80, 0xbf80, 0x1f80, 0x2000, 0x6000, 0x0100, 0x00ff, 0x4000};
  uint32_t r = next();
  if (r % 3 == 0)
    return corner[r / 3 % (sizeof corner / sizeof corner[0])];
  /* exponents across the range, so sums and products land near FLT_MIN and FLT_MAX */
  return (uint16_t)((r & 0x8000u) | ((next() % 255u) << 7) | (next() & 0x7fu));
}

static void fill(uint8_t t[16][64], int op, int mode) {
  for (int m = 0; m < 16; m++)
    for (int j = 0; j < 64; j += 2) {
      uint16_t v = op ? bf16_of(mode) : (uint16_t)next();
      memcpy(&t[m][j], &v, 2);
    }
}

int main(void) {
  int hw = 0;
#ifdef HAVE_HW
  hw = hw_ready();
#endif
  long cases = 0, diff = 0;
  for (int op = 0; op < 2; op++)
    for (int mode = 0; mode < (op ? 2 : 1); mode++)
      for (int it = 0; it < 200; it++) {
        uint8_t a[16][64], b[16][64], c[16][64], cm[16][64], ch[16][64];
        fill(a, op, mode);
        fill(b, op, mode);
        if (op) { /* C: f32, some of them denormal or large */
          for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++) {
              float f = (float)((int)(next() % 2001) - 1000) / 100.0f;
              if (mode && next() % 4 == 0)
                f = kiln_float_of_bits((next() & 0x807fffffu) | (next() % 4 == 0 ? 0x7f000000u : 0u));
              memcpy(&c[m][4 * n], &f, 4);
            }
        } else {
          fill(c, 0, 0);
        }
        memcpy(cm, c, sizeof c);
        memcpy(ch, c, sizeof c);
        KILN_TILE_REGS;
        KILN_TILE_CONFIG();
        KILN_TILE_LOAD(0, cm, 64);
        KILN_TILE_LOAD(1, a, 64);
        KILN_TILE_LOAD(2, b, 64);
        if (op)
          KILN_TILE_DP_BF16(0, 1, 2);
        else
          KILN_TILE_DP_INT8(0, 1, 2);
        KILN_TILE_STORE(0, cm, 64);
        KILN_TILE_RELEASE();
        cases++;
#ifdef HAVE_HW
        if (hw) {
          hw_dp(op, ch, a, b);
          for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++)
              if (memcmp(&cm[m][4 * n], &ch[m][4 * n], 4)) {
                uint32_t x, y;
                memcpy(&x, &cm[m][4 * n], 4);
                memcpy(&y, &ch[m][4 * n], 4);
                if (diff++ < 8)
                  fprintf(stderr, "%s mode %d case %d [%d][%d]: model %08x, hardware %08x\n",
                          op ? "TDPBF16PS" : "TDPBUSD", mode, it, m, n, x, y);
              }
        }
#endif
      }
  if (!hw) {
    printf("amx_model: %ld tile products by the model; no AMX here to compare with: skipped\n", cases);
    return 77;
  }
  printf("amx_model: %ld tile products (%ld dot products), model vs hardware: %ld differ\n", cases, cases * 256,
         diff);
  return diff != 0;
}
