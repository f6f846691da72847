/* matmul_kernel.c — the template matrix product (matmul_kernel.h), kept
 * apart from MatMul and Gemm's semantics (compiler/ops/matmul.c): it is
 * given dims, strides and pointer expressions, never a Node. */
#include "matmul_kernel.h"

bool matmul_uses_cblas(const Emit *e, DType dt, int64_t k, int64_t a_rs, int64_t a_cs) {
  return e->gemm == GEMM_OPENBLAS && dt == DT_F32 && k > 0 && (a_cs == 1 || a_rs == 1);
}

static void emit_cblas(Emit *e, const MatmulSpec *s) {
  bool tra = s->a_cs != 1;
  emit_line(e, "cblas_sgemm(CblasRowMajor, %s, %s, %lld, %lld, %lld, 1.0f, %s, %lld, %s, %lld, 0.0f, %s, %lld);",
            tra ? "CblasTrans" : "CblasNoTrans", s->trb ? "CblasTrans" : "CblasNoTrans", (long long)s->m,
            (long long)s->n, (long long)s->k, s->a, (long long)(tra ? s->a_cs : s->a_rs), s->b,
            (long long)(s->trb ? s->k : s->n), s->y, (long long)s->n);
}

/* Block sizes (measured on AVX2 at -O2): MR = 8 rows of Y share each row
 * of B; NB columns are summed in the local block acc (at most 8 KiB); KC
 * rows of Bᵀ are transposed at a time into a tile of at most 32 KiB. */
void matmul_emit_kernel(Emit *e, const MatmulSpec *s) {
  DType dt = s->dt;
  int64_t m = s->m, n = s->n, k = s->k, a_rs = s->a_rs, a_cs = s->a_cs;
  if (matmul_uses_cblas(e, dt, k, a_rs, a_cs)) {
    emit_cblas(e, s);
    return;
  }
  int64_t nbmax = s->trb ? 64 : 128, kcmax = 32768 / (64 * (int64_t)dt_size(dt));
  int64_t mr = m < 8 ? m : 8, nb = n < nbmax ? n : nbmax, kc = k < kcmax ? k : kcmax;
  Arena *ar = e->g->arena;
  const char *ak = a_cs == 1 ? "k" : arena_printf(ar, "k * %lld", (long long)a_cs);
  const char *ak1 = a_cs == 1 ? "k + 1" : arena_printf(ar, "(k + 1) * %lld", (long long)a_cs);
  if (s->trb && k > 0)
    emit_tmpl(e, "matmul_nt", "T", dt_ctype(dt), "M", emit_int(e, m), "N", emit_int(e, n), "K",
              emit_int(e, k), "MR", emit_int(e, mr), "NB", emit_int(e, nb), "KC", emit_int(e, kc),
              "A", s->a, "B", s->b, "Y", s->y, "A_RS", emit_int(e, a_rs), "A_K", ak, "A_K1", ak1, NULL);
  else
    emit_tmpl(e, "matmul", "T", dt_ctype(dt), "M", emit_int(e, m), "N", emit_int(e, n), "K",
              emit_int(e, k), "K2", emit_int(e, k - k % 2), "MR", emit_int(e, mr), "NB",
              emit_int(e, nb), "A", s->a, "B", s->b, "Y", s->y, "A_RS", emit_int(e, a_rs), "A_K", ak,
              "A_K1", ak1, NULL);
}
