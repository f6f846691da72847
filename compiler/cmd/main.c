/* main.c — the kiln command line. Reads as the list of stages:
 * load (onnx_import) -> lower (bind, infer, fold, simplify, dce, plan)
 * -> emit C | interpret | check. See `kiln --help`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/c_text.h"
#include "driver.h"
#include "../emit/tokenizer.h"
#include "info.h"
#include "../frontend/npy.h"
#include "../frontend/onnx.h"
#include "../ir/ops.h"
#include "../ir/print.h"
#include "progress.h"

static const char *usage =
    "usage: kiln <command> [options]\n"
    "\n"
    "commands:\n"
    "  compile MODEL [-o OUT.c]   compile a model (.onnx, .lua, .kir or .gguf) to C (OUT.c + OUT.h + kiln_rt.h);\n"
    "                             a GGUF file is compiled by kiln's description of its\n"
    "                             general.architecture (llama, qwen2, ...: docs/gguf.md)\n"
    "  opt IN.kir [-o OUT.kir]    run passes (--passes=...) on a model, write the IR as text\n"
    "  run MODEL --input NAME=FILE.npy|FILE.pb ...\n"
    "                             run the reference interpreter and print the outputs\n"
    "  check DIR                  compile, build, run and compare with DIR's reference data\n"
    "                             (ONNX backend-test layout: model.onnx, test_data_set_N/;\n"
    "                             DIR/model.kir stands in when there is no model.onnx)\n"
    "  bench MODEL                compile, build and time the generated C; ends with one line\n"
    "                             median_ms=.. min_ms=.. runs=.. workspace_bytes=.. rss_kb=..\n"
    "  info MODEL                 the model at a glance: I/O, params, FLOPs, nodes, workspace, code size;\n"
    "                             a GGUF file's architecture, hyperparameters, tensor types (-v:\n"
    "                             each tensor), tokenizer, BOS/EOS and chat template first\n"
    "  dot MODEL [-o FILE.dot]    the graph as Graphviz (--after=PASS: as it is after that pass)\n"
    "  export MODEL -o OUT.onnx   the model as ONNX (after bind,infer,fold,simplify,dce unless\n"
    "                             --passes=; kiln ops lowered to standard ones) for ONNX Runtime, Netron\n"
    "  ops                        list the supported ONNX ops\n"
    "  passes                     list the compiler passes\n"
    "  help [COMMAND]             this text, or one command's (also kiln COMMAND --help)\n"
    "  --help, --version (-V)\n";

static const char *usage_lua =
    "Lua model options (MODEL.lua, see docs/lua.md, or MODEL.gguf; every command that takes a MODEL):\n"
    "  --set KEY=VALUE            override a config{} parameter of the script\n"
    "  --weights FILE             bind param{}s by name from a .safetensors or GGUF file (told\n"
    "                             by its magic bytes; Q8_0/Q4_0/Q4_1 tensors stay quantized:\n"
    "                             docs/gguf.md); tensors the script does not use are skipped\n"
    "                             with a note (where the weights go in the C: --weights-mode);\n"
    "                             not with a .gguf MODEL, which holds its weights\n"
    "  --strict-weights           a tensor the script does not use is an error\n"
    "  --lua-steps=N              the script's instruction budget (default 1000000000)\n"
    "  --lua-mem=MB               the script's memory cap (default 512)\n"
    "  -v                         add the Lua traceback to script errors; (info on a .gguf) list\n"
    "                             every tensor: name, type, shape, bytes\n";

static const char *usage_compile =
    "compile and run options:\n"
    "  --shape NAME=DIMS          bind an input's shape (NAME=1x16) or a symbolic dim (NAME=16)\n"
    "  -o FILE                    output .c file (default: NAME.c in the current folder)\n"
    "  --weights-mode=blob|inline|auto  (also check, bench) weights in FILE.weights.bin +\n"
    "                             FILE_weights.S beside the C (blob), as C literals (inline), or\n"
    "                             a blob when they exceed 1 MiB (auto, the default); the old\n"
    "                             spelling --weights=blob|inline|auto still works this release,\n"
    "                             with a note on stderr\n"
    "  --name NAME                prefix of the generated API (default: model)\n"
    "  --passes=P1,P2,...         run only these passes (see `kiln passes`; fuse: every fuse_*)\n"
    "  --dump-after=PASS|all      print the IR after a pass (to stdout)\n"
    "  --dump-before=PASS|all     print the IR before a pass\n"
    "  --dump-all=DIR             write DIR/00-import.kir, 01-bind.kir, ... (loadable .kir + .bin)\n"
    "  --verify-each              verify the IR after every pass\n"
    "  --kv-cache=N               (compile) an ONNX decoder exported with its past (inputs\n"
    "                             past_key_values.L.key/.value, outputs present.*): a generative\n"
    "                             model with a KV cache of N positions, NAME_prefill/NAME_step\n"
    "                             (the kv_cache pass: --dump-after=kv_cache shows its graph)\n"
    "  --rows-axis=IN:AXIS[,IN:AXIS...]  (compile, bench) an encoder with a run-time token count:\n"
    "                             AXIS of each listed input is the token axis; NAME_run_rows(...,\n"
    "                             rows) computes only the first rows tokens (docs/rows.md);\n"
    "                             NAME_run_batch(..., rows[], batch) a batch of sentences, each\n"
    "                             at its own count (docs/batch.md)\n"
    "  --prefill=P                (with --kv-cache) tokens one prefill call takes (default min(N, 64))\n"
    "  --kv-dtype=f32|f16|bf16    (with --kv-cache) the caches' dtype: f16/bf16 halve their bytes\n"
    "  --fold-limit=BYTES         largest constant folding may create (default 4194304)\n"
    "  --isa=native|avx2|avx512|portable  (also check, bench) machine the kernels are written\n"
    "                             for: avx2, avx512: wider GEMM tiles, and each kernel's SIMD body\n"
    "                             of that width only, after its plain C (taken when the C compiler\n"
    "                             does not target the ISA); native (the default): avx512 or avx2\n"
    "                             as the CPU kiln runs on has, else portable; portable (alias\n"
    "                             generic): 8-column tiles and every vector width's body, 16-, 8-\n"
    "                             or 4-wide picked by the C compiler's target. Any builds anywhere.\n"
    "                             AMX (bf16, w8a8) is a run-time extra of avx512 when built for it\n"
    "                             Build with -O2 -march=native -ffp-contract=fast\n"
    "  --threads=N                (also check, bench) code for N threads (default 1: none): the\n"
    "                             large loops run on N threads (kiln's pool) when built with -pthread\n"
    "  --gemm=packed|openblas     (also check, bench) f32 matrix products by kiln's packed kernels\n"
    "                             (default) or by cblas_sgemm calls (link -lopenblas)\n"
    "  --precision=f32|bf16       (also check, bench) bf16: the products by constant weights store\n"
    "                             the weight as bf16 and round the activations to bf16, summing in\n"
    "                             f32: AMX tiles (TDPBF16PS) under --isa=avx512 when built for AMX\n"
    "                             (-march=native on Sapphire Rapids+) and the CPU grants it at run\n"
    "                             time; else AVX512-BF16 vdpbf16ps when built for it on a CPU\n"
    "                             without AMX (Zen 4+); else f32 FMAs on the bf16 weights;\n"
    "                             about 3 significant digits: check needs a looser --rtol/--atol\n"
    "  --quantize=int8            (also run, check, bench, info, opt) weight-only int8: constant f32\n"
    "                             weights of Linear/MatMul get a scale per output column, Gather\n"
    "                             tables one per row; activations stay f32. compile -v and info\n"
    "                             print each weight's error; check also each layer's output error\n"
    "                             against the f32 model on its data (looser --rtol/--atol needed)\n"
    "  --quantize=w8a8            (also run, check, bench, info, opt) int8 x int8 products: the\n"
    "                             weights as int8 does, and each Linear's input quantized at run\n"
    "                             time to u8 per row (asymmetric, zero point), summed exactly in\n"
    "                             int32 (AMX tiles, TDPBUSD, under --isa=avx512 or portable when\n"
    "                             built for AMX and granted at run time; else AVX512-VNNI / AVX-VNNI\n"
    "                             vpdpbusd when built for it, e.g. -march=native; else AVX2 or\n"
    "                             plain C, the same sums)\n"
    "  --kquant-act=f32|q8        (also run, check, bench) q8: the GEMVs (fewer than 4 rows) by\n"
    "                             Q4_K/Q5_K/Q6_K/Q8_K/Q5_0/Q5_1 weights quantize their input to\n"
    "                             int8, 32 values a scale, and sum the products in integers as\n"
    "                             llama.cpp does (AVX512-VNNI vpdpbusd, AVX2 vpmaddubsw, or plain\n"
    "                             C; GEMVs 1.4-2.2x faster, about 1e-2 relative error); f32 (the\n"
    "                             default): f32 activations\n"
    "  --winograd=on|off          (also run, check, bench) on (the default): 3x3 stride-1 convs\n"
    "                             with 16+ channels and 32+ tiles by Winograd's F(4x4, 3x3) or\n"
    "                             F(2x2, 3x3) (fewer multiplies, a few bits less accurate for\n"
    "                             F(4x4), the weight 4x or 16/9 its size); off: every conv on the\n"
    "                             direct GEMM\n"
    "  --out DIR                  (run) also write each output as DIR/output_K.pb\n"
    "  --out-format=pb|npy        (run) --out's files: TensorProto .pb (the default) or .npy\n"
    "  --json                     (info) machine-readable report\n"
    "  --memory-svg FILE          (info) draw the planned workspace as SVG\n"
    "  --unroll-layers            (also check, bench) write every layer out: no layer loops (the\n"
    "                             same calls as the loops make, for diffing and timing them)\n"
    "  -q, --quiet                (compile) no progress on stderr; without it, when stderr is a\n"
    "                             terminal, compile shows each pass as it runs, then each file\n"
    "                             written with its size in MB\n";

static const char *usage_check =
    "check options:\n"
    "  --rtol=X --atol=X          tolerances (default 1e-4 and 1e-5): |got-want| <= atol + rtol*|want|\n"
    "  --min-cosine=C             a float output must also have cosine >= C with the reference\n"
    "                             (quantized models: int8 rounding differs between engines)\n"
    "  --interp                   check the reference interpreter instead of generated C\n"
    "  --model FILE               compile FILE (.onnx, .kir, .lua, .gguf) instead of DIR/model.onnx|.kir|.lua\n"
    "  --cc=CC --cflags=FLAGS     compiler for the generated C (default: $CC or cc, -O2: the\n"
    "                             plain C bodies of avx2/avx512 kernels, -march=native for their SIMD)\n"
    "  --keep                     keep the build folder\n"
    "  -q                         print only failures and the verdict\n";

static const char *usage_bench =
    "bench options (also --shape, --input NAME=FILE.npy|FILE.pb, --cc, --cflags, --keep):\n"
    "  --runs=N                   timed runs after runs/10 (at least 5) warm-up runs (default 200)\n"
    "  --rows=N                   (with --rows-axis) time NAME_run_rows(..., N): the first N tokens\n"
    "  --profile                  also time each kernel call (a clock read after each): per IR node\n"
    "                             its ms a run, share, GFLOP/s and % of the FMA peak (measured by\n"
    "                             the program: one core's, times --threads), slowest first\n"
    "  --threads=N                as for compile; check and bench add -pthread when N > 1, and\n"
    "                             -lopenblas with --gemm=openblas (bench: OPENBLAS_NUM_THREADS=N)\n"
    "  --cflags defaults to -O2 -march=native -ffp-contract=fast (the recommended flags). Inputs without --input get\n"
    "  fixed-seed random data: floats in [-1,1), integers in [1,10), bools false.\n";

/* Bad command line: one line "kiln: ..." on stderr, exit status 1. */
KILN_NORETURN static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kiln: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

/* The commands, and the option groups each one's help shows (l: Lua
 * models, c: compile and run, k: check, b: bench). */
static const struct {
  const char *name, *groups;
} commands[] = {
    {"compile", "lc"}, {"opt", "lc"}, {"run", "lc"}, {"check", "lck"}, {"bench", "lcb"},
    {"info", "lc"},    {"dot", "lc"}, {"export", "lc"}, {"ops", ""},   {"passes", ""},
    {"help", ""},
};

static int command_index(const char *name) {
  for (int i = 0; i < KILN_COUNT(commands); i++)
    if (!strcmp(commands[i].name, name))
      return i;
  return -1;
}

/* " (did you mean 'x'?)" for the command closest to name, or "". */
static const char *command_hint(const char *name) {
  static char hint[64];
  const char *names[KILN_COUNT(commands)];
  for (int i = 0; i < KILN_COUNT(commands); i++)
    names[i] = commands[i].name;
  const char *near = closest_name(name, names, KILN_COUNT(commands));
  snprintf(hint, sizeof hint, near ? " (did you mean '%s'?)" : "%s", near ? near : "");
  return hint;
}

/* " (did you mean '--shape'?)" for the option of the help texts closest
 * to arg (its "=value" cut), or "": the help texts are the option list. */
static const char *option_hint(const char *arg) {
  static char hint[96], words[256][32];
  const char *names[256];
  int n = 0;
  const char *texts[] = {usage, usage_lua, usage_compile, usage_check, usage_bench};
  for (int t = 0; t < KILN_COUNT(texts); t++)
    for (const char *p = texts[t]; (p = strchr(p, '-')) && n < 256; p++) {
      if (p[-1] != ' ' || !((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z') || p[1] == '-'))
        continue;
      size_t k = strspn(p, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
      if (k < 2 || k >= sizeof words[0])
        continue;
      snprintf(words[n], sizeof words[0], "%.*s", (int)k, p);
      names[n] = words[n];
      n++;
      p += k - 1;
    }
  char flag[64];
  snprintf(flag, sizeof flag, "%.*s", (int)strcspn(arg, "="), arg);
  const char *near = closest_name(flag, names, n);
  snprintf(hint, sizeof hint, near ? " (did you mean '%s'?)" : "%s", near ? near : "");
  return hint;
}

/* kiln help COMMAND: its lines of the command list, then its option groups. */
static int command_help(const char *name) {
  int ci = command_index(name);
  if (ci < 0)
    die("help %s: unknown command%s; see kiln --help", name, command_hint(name));
  printf("usage: kiln %s [options]\n\n", name);
  char key[32];
  snprintf(key, sizeof key, "\n  %s ", name);
  const char *p = strstr(usage, key);
  while (p && *p) { /* the command's line and its indented continuation lines */
    const char *eol = strchr(p + 1, '\n');
    if (!eol)
      break;
    printf("%.*s\n", (int)(eol - p - 1), p + 1);
    p = eol;
    if (strncmp(p + 1, "                             ", 29) != 0)
      break;
  }
  const char *groups = commands[ci].groups;
  const char *texts[] = {usage_lua, usage_compile, usage_check, usage_bench};
  for (int i = 0; groups[i]; i++)
    printf("\n%s", texts[strchr("lckb", groups[i]) - "lckb"]);
  return 0;
}

typedef struct Cli {
  const char *cmd, *model, *out, *name, *outdir, *after, *memory_svg;
  const char *out_ext;      /* --out-format: ".pb" or ".npy" */
  bool json;
  bool name_given;
  const char *inputs[64];
  int ninputs;
  ShapeBinding shapes[64];
  char shape_names[64][128]; /* the --shape NAMEs the bindings point to (nothing to free) */
  int nshapes;
  PipelineOptions pipe;
  CheckOptions check;
  BenchOptions bench;
  const char *sets[64];     /* --set KEY=VALUE (Lua models) */
  LuaOptions lua;
  int64_t kv_cache;         /* --kv-cache=N: an ONNX decoder with a past, cache of N positions (0: none) */
  const char *kv_dtype;     /* --kv-dtype=f32|f16|bf16 (with --kv-cache), or NULL */
  int64_t prefill;          /* --prefill=P (0: min(N, 64)) */
} Cli;

/* --isa=native (the default): the widest kernel layout the CPU kiln runs
 * on has — avx512 with AVX-512F, avx2 with AVX2 and FMA, else portable. */
static EmitIsa host_isa(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return ISA_AVX2;
#endif
  return ISA_GENERIC;
}

static bool is_c_ident(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9'))
    return false;
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      return false;
  return true;
}

static bool is_c_keyword(const char *s) {
  static const char *const words[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
      "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
      "volatile", "while", "_Bool", "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic",
      "_Generic", "_Noreturn", "_Static_assert", "_Thread_local", "bool", "true", "false"};
  for (int i = 0; i < KILN_COUNT(words); i++)
    if (!strcmp(s, words[i]))
      return true;
  return false;
}

/* "1x16x64" or "1,16,64": each dim at least 1 ("" is a scalar). */
static bool parse_dims(const char *s, ShapeBinding *b) {
  b->rank = 0;
  if (!*s)
    return true; /* a scalar */
  for (const char *p = s;;) {
    char *end;
    errno = 0;
    if (*p < '0' || *p > '9') /* strtoll would take " 2", "+2" and, after a separator, nothing */
      return false;
    long long v = strtoll(p, &end, 10);
    if (errno || b->rank >= MAX_RANK || v < 1)
      return false;
    b->dims[b->rank++] = v;
    if (!*end)
      return true;
    if (*end != 'x' && *end != ',')
      return false;
    p = end + 1;
  }
}

/* "--flag=value" or "--flag value": returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *flag) {
  size_t n = strlen(flag);
  if (strncmp(argv[*i], flag, n) != 0)
    return NULL;
  if (argv[*i][n] == '=')
    return argv[*i] + n + 1;
  if (argv[*i][n] != 0)
    return NULL;
  if (*i + 1 >= argc)
    die("%s needs a value", flag);
  return argv[++*i];
}

/* --kv-cache=N, --prefill=P: 1 .. 2^20 positions. */
static int64_t positions(const char *v, const char *msg) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end || errno || n < 1 || n > (1 << 20))
    die(msg, v);
  return n;
}

/* --weights-mode=blob|inline|auto into *w; false for any other value. */
static bool weights_mode(const char *v, EmitWeights *w) {
  if (strcmp(v, "blob") && strcmp(v, "inline") && strcmp(v, "auto"))
    return false;
  *w = !strcmp(v, "blob") ? WEIGHTS_BLOB : !strcmp(v, "inline") ? WEIGHTS_INLINE : WEIGHTS_AUTO;
  return true;
}

static void parse_args(int argc, char **argv, Cli *c) {
  c->name = "model";
  c->pipe.pass.fold_limit = 4u << 20;
  c->check.rtol = 1e-4;
  c->check.atol = 1e-5;
  c->check.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
  c->check.cflags = strcmp(argv[1], "bench") ? "-O2" : "-O2 -march=native -ffp-contract=fast";
  c->check.isa = host_isa();
  c->bench.runs = 200;
  c->check.threads = 1;
  c->cmd = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *v;
    if ((v = opt_value(argc, argv, &i, "--shape"))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || c->nshapes >= 64)
        die("--shape %s: expected NAME=DIMS, e.g. --shape src=1x16", v);
      if (eq - v >= (int)sizeof c->shape_names[0])
        die("--shape %s: the name is too long; expected at most 127 characters", v);
      snprintf(c->shape_names[c->nshapes], sizeof c->shape_names[0], "%.*s", (int)(eq - v), v);
      ShapeBinding *b = &c->shapes[c->nshapes];
      b->name = c->shape_names[c->nshapes++];
      if (!parse_dims(eq + 1, b))
        die("--shape %s: expected dims like 1x16x64 (each at least 1)", v);
      for (int k = 0; k < c->nshapes - 1; k++) /* the same binding twice is fine, two different ones not */
        if (!strcmp(c->shapes[k].name, b->name) &&
            (c->shapes[k].rank != b->rank || memcmp(c->shapes[k].dims, b->dims, sizeof b->dims[0] * (size_t)b->rank)))
          die("--shape %s: the name is already bound to other dims; expected one --shape per name", v);
    } else if ((v = opt_value(argc, argv, &i, "-o")) || (v = opt_value(argc, argv, &i, "--output"))) {
      c->out = v;
    } else if ((v = opt_value(argc, argv, &i, "--name"))) {
      c->name = v;
      c->name_given = true;
      if (!is_c_ident(v) || is_c_keyword(v))
        die("--name %s: expected a C identifier that is not a C keyword", v);
    } else if ((v = opt_value(argc, argv, &i, "--input"))) {
      if (c->ninputs >= 64)
        die("%s: too many --input flags", v);
      c->inputs[c->ninputs++] = v;
    } else if ((v = opt_value(argc, argv, &i, "--out-format"))) {
      if (strcmp(v, "pb") && strcmp(v, "npy"))
        die("--out-format=%s: expected pb or npy", v);
      c->out_ext = !strcmp(v, "npy") ? ".npy" : ".pb";
    } else if ((v = opt_value(argc, argv, &i, "--out"))) {
      c->outdir = v;
    } else if ((v = opt_value(argc, argv, &i, "--set"))) {
      if (c->lua.nsets >= 64 || !strchr(v, '=') || v[0] == '=')
        die("--set %s: expected KEY=VALUE (at most 64), e.g. --set seq=128", v);
      c->sets[c->lua.nsets++] = v;
    } else if ((v = opt_value(argc, argv, &i, "--model"))) {
      c->check.model = v;
    } else if ((v = opt_value(argc, argv, &i, "--weights-mode"))) {
      if (!weights_mode(v, &c->check.weights))
        die("--weights-mode=%s: expected blob, inline or auto (a Lua model's weights file is --weights FILE)", v);
    } else if ((v = opt_value(argc, argv, &i, "--weights"))) {
      /* --weights=blob|inline|auto, the storage mode before --weights-mode:
       * kept for one release with a note; a file named blob: --weights ./blob */
      if (weights_mode(v, &c->check.weights))
        fprintf(stderr, "kiln: --weights%c%s is deprecated: use --weights-mode=%s\n", v == argv[i] ? ' ' : '=', v, v);
      else
        c->lua.weights = v;
    } else if ((v = opt_value(argc, argv, &i, "--lua-steps"))) {
      if ((c->lua.max_steps = atoll(v)) < 1)
        die("--lua-steps %s: expected a positive count", v);
    } else if ((v = opt_value(argc, argv, &i, "--lua-mem"))) {
      if (atoll(v) < 1 || atoll(v) > (1LL << 20))
        die("--lua-mem %s: expected megabytes, 1 to 1048576", v);
      c->lua.max_mem = atoll(v) << 20;
    } else if ((v = opt_value(argc, argv, &i, "--passes"))) {
      c->pipe.passes = v;
    } else if ((v = opt_value(argc, argv, &i, "--dump-after"))) {
      c->pipe.dump_after = v;
    } else if ((v = opt_value(argc, argv, &i, "--after"))) {
      c->after = v;
    } else if ((v = opt_value(argc, argv, &i, "--memory-svg"))) {
      c->memory_svg = v;
    } else if (!strcmp(argv[i], "--json")) {
      c->json = true;
    } else if ((v = opt_value(argc, argv, &i, "--dump-all"))) {
      c->pipe.dump_dir = v;
    } else if ((v = opt_value(argc, argv, &i, "--dump-before"))) {
      c->pipe.dump_before = v;
    } else if ((v = opt_value(argc, argv, &i, "--fold-limit"))) {
      char *end;
      errno = 0;
      unsigned long long lim = strtoull(v, &end, 10);
      if (end == v || *end || *v == '-' || errno)
        die("--fold-limit=%s: expected a byte count (0 or more)", v);
      c->pipe.pass.fold_limit = (size_t)lim;
    } else if ((v = opt_value(argc, argv, &i, "--rtol"))) {
      c->check.rtol = atof(v);
    } else if ((v = opt_value(argc, argv, &i, "--atol"))) {
      c->check.atol = atof(v);
    } else if ((v = opt_value(argc, argv, &i, "--min-cosine"))) {
      char *end;
      c->check.min_cosine = strtod(v, &end);
      if (end == v || *end || !(c->check.min_cosine >= -1 && c->check.min_cosine <= 1))
        die("--min-cosine=%s: expected a number from -1 to 1", v);
    } else if ((v = opt_value(argc, argv, &i, "--cc"))) {
      c->check.cc = v;
    } else if ((v = opt_value(argc, argv, &i, "--isa"))) {
      if (strcmp(v, "portable") && strcmp(v, "generic") && strcmp(v, "avx2") && strcmp(v, "avx512") &&
          strcmp(v, "native"))
        die("--isa=%s: unknown ISA; expected native, avx2, avx512 or portable (alias generic)", v);
      c->check.isa = !strcmp(v, "native") ? host_isa()
                   : !strcmp(v, "avx2")   ? ISA_AVX2
                   : !strcmp(v, "avx512") ? ISA_AVX512
                                          : ISA_GENERIC;
    } else if ((v = opt_value(argc, argv, &i, "--precision"))) {
      if (strcmp(v, "f32") && strcmp(v, "bf16"))
        die("--precision=%s: unknown precision; expected f32 or bf16", v);
      c->check.precision = !strcmp(v, "bf16") ? PRECISION_BF16 : PRECISION_F32;
      c->pipe.pass.bf16 = c->check.precision == PRECISION_BF16;
    } else if ((v = opt_value(argc, argv, &i, "--cflags"))) {
      c->check.cflags = v;
    } else if ((v = opt_value(argc, argv, &i, "--runs"))) {
      if ((c->bench.runs = atoi(v)) < 1)
        die("--runs %s: expected a positive count", v);
    } else if ((v = opt_value(argc, argv, &i, "--threads"))) {
      char *end;
      long t = strtol(v, &end, 10);
      if (end == v || *end || t < 1 || t > 1024)
        die("--threads %s: expected a thread count from 1 to 1024", v);
      c->check.threads = (int)t;
    } else if ((v = opt_value(argc, argv, &i, "--gemm"))) {
      if (strcmp(v, "packed") && strcmp(v, "openblas"))
        die("--gemm=%s: unknown GEMM; expected packed or openblas", v);
      c->check.gemm = !strcmp(v, "openblas") ? GEMM_OPENBLAS : GEMM_PACKED;
    } else if ((v = opt_value(argc, argv, &i, "--quantize"))) {
      if (strcmp(v, "int8") && strcmp(v, "w8a8") && strcmp(v, "none"))
        die("--quantize=%s: unknown scheme; expected int8, w8a8 (or none)", v);
      c->pipe.pass.quantize = !strcmp(v, "int8") ? QUANT_INT8 : !strcmp(v, "w8a8") ? QUANT_W8A8 : QUANT_NONE;
    } else if ((v = opt_value(argc, argv, &i, "--kquant-act"))) {
      if (strcmp(v, "f32") && strcmp(v, "q8"))
        die("--kquant-act=%s: expected f32 or q8", v);
      c->pipe.pass.kquant_act_q8 = !strcmp(v, "q8");
    } else if ((v = opt_value(argc, argv, &i, "--winograd"))) {
      if (strcmp(v, "on") && strcmp(v, "off"))
        die("--winograd=%s: expected on or off", v);
      c->pipe.pass.no_winograd = !strcmp(v, "off");
    } else if ((v = opt_value(argc, argv, &i, "--kv-cache"))) {
      c->kv_cache = positions(v, "--kv-cache=%s: expected the cache's capacity in positions, 1 to 1048576");
    } else if ((v = opt_value(argc, argv, &i, "--kv-dtype"))) {
      if (strcmp(v, "f32") && strcmp(v, "f16") && strcmp(v, "bf16"))
        die("--kv-dtype=%s: expected f32, f16 or bf16", v);
      c->kv_dtype = v;
    } else if ((v = opt_value(argc, argv, &i, "--rows"))) {
      char *end;
      long r = strtol(v, &end, 10);
      if (end == v || *end || r < 1 || r > 1048576)
        die("--rows=%s: expected a token count from 1 to 1048576", v);
      c->bench.rows = r;
    } else if ((v = opt_value(argc, argv, &i, "--rows-axis"))) {
      c->pipe.pass.rows_axis = v;
    } else if ((v = opt_value(argc, argv, &i, "--prefill"))) {
      c->prefill = positions(v, "--prefill=%s: expected the prompt chunk's length in tokens, 1 to 1048576");
    } else if (!strcmp(argv[i], "--verify-each")) {
      c->pipe.verify_each = true;
    } else if (!strcmp(argv[i], "--interp")) {
      c->check.interp = true;
    } else if (!strcmp(argv[i], "--keep")) {
      c->check.keep = true;
    } else if (!strcmp(argv[i], "--profile")) {
      c->bench.profile = true;
    } else if (!strcmp(argv[i], "--unroll-layers")) {
      c->check.unroll_layers = true;
    } else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      c->check.quiet = true;
      c->lua.quiet = true;
    } else if (!strcmp(argv[i], "--strict-weights")) {
      c->lua.strict_weights = true;
    } else if (!strcmp(argv[i], "-v")) {
      c->pipe.pass.verbose = true;
      c->lua.traceback = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      die("unknown option '%s'%s; see kiln %s --help", argv[i], option_hint(argv[i]), c->cmd);
    } else if (!c->model) {
      c->model = argv[i];
    } else {
      die("unexpected argument '%s'; see kiln --help", argv[i]);
    }
  }
  c->pipe.pass.kv_cache = c->kv_cache; /* the kv_cache pass (main checks the combination) */
  c->pipe.pass.kv_prefill = c->prefill;
  c->pipe.pass.kv_dtype = c->kv_dtype ? dt_from_name(c->kv_dtype) : DT_F32;
  c->pipe.pass.shapes = c->shapes;
  c->pipe.pass.nshapes = c->nshapes;
  c->lua.sets = c->sets;
  c->pipe.lua = &c->lua;
#ifndef NDEBUG
  c->pipe.verify_each = true;
#endif
}

/* prog (no '/') is an executable in a folder of $PATH */
static bool on_path(const char *prog) {
  const char *p = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
  for (;;) {
    size_t n = strcspn(p, ":");
    char full[1024];
    snprintf(full, sizeof full, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", prog);
    if (access(full, X_OK) == 0)
      return true;
    if (!p[n])
      return false;
    p += n + 1;
  }
}

/* The C compiler check and bench run (--cc, else $CC, else cc; its first
 * word is the program) must exist: else the shell's "not found" and
 * kiln's "did not build" would be two lines for one mistake. */
static void check_cc(const char *cc) {
  char prog[512];
  snprintf(prog, sizeof prog, "%.*s", (int)strcspn(cc, " \t"), cc);
  if (!*prog || (strchr(prog, '/') ? access(prog, X_OK) != 0 : !on_path(prog)))
    die("--cc=%s: no such program (from --cc, $CC or the default cc); expected a C compiler on PATH, "
        "such as cc, gcc or clang", cc);
}

/* Report d, free the compilation's arena, and give exit status 1. */
static int fail(Diag *d, Arena *a) {
  diag_print(d);
  arena_free(a);
  return 1;
}

/* The file name after path's last '/'. */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* True when path names the same file as the model (an existing one). */
static bool same_file(const char *path, const char *model) {
  struct stat a, b;
  return stat(path, &a) == 0 && stat(model, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* "dir/encoder.onnx" -> "encoder": the file name without folder and
 * extension ("model" when nothing is left). */
static const char *model_stem(Arena *a, const char *model) {
  const char *slash = strrchr(model, '/');
  const char *base = slash ? slash + 1 : model;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  return n ? arena_printf(a, "%.*s", (int)n, base) : "model";
}

/* The files compile writes must be new files or kiln's own, never the
 * model itself or a folder: a typo in -o must not destroy the input. */
static void check_outputs(Arena *a, const char *out, const char *model) {
  struct stat st;
  if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
    die("-o %s: is a folder; expected a file name ending in .c", out);
  size_t dir = strrchr(out, '/') ? (size_t)(strrchr(out, '/') - out + 1) : 0;
  const char *stem = arena_printf(a, "%.*s", (int)(strlen(out) - 2), out);
  const char *paths[] = {out, arena_printf(a, "%s.h", stem), arena_printf(a, "%.*skiln_rt.h", (int)dir, out),
                         arena_printf(a, "%s.weights.bin", stem), arena_printf(a, "%s_weights.S", stem)};
  for (int i = 0; i < KILN_COUNT(paths); i++)
    if (same_file(paths[i], model))
      die("-o: writing %s would overwrite the input model; expected another output name", paths[i]);
}

static int cmd_compile(Cli *c) {
  Arena *a = arena_new();
  Diag d = {0};
  /* without -o: the input's stem in the current folder (encoder.onnx ->
   * ./encoder.c), as C compilers name their outputs */
  const char *out = c->out ? c->out : arena_printf(a, "%s.c", model_stem(a, c->model));
  size_t n = strlen(out);
  if (n < 3 || strcmp(out + n - 2, ".c") != 0)
    die("-o %s: expected a file name ending in .c", out);
  /* --dump-after/--dump-before print IR to stdout: without -o that is the
   * whole job, no C files */
  bool dump_only = !c->out && (c->pipe.dump_after || c->pipe.dump_before);
  check_outputs(a, out, c->model);
  const char *hname = arena_printf(a, "%.*s.h", (int)(n - 2 - (size_t)(base_name(out) - out)), base_name(out));
  if (c_text_header_flaw(hname)) /* C has no escapes in a #include name */
    die("%s", arena_printf(a, "-o %s: the header's name %s holds %s, which the .c's #include line cannot "
                              "spell; expected another name", c_text(a, CT_STRING, out), c_text(a, CT_STRING, hname),
                              c_text_header_flaw(hname)));
  const Gguf *gguf = NULL; /* a bound GGUF: its tokenizer goes into the C */
  c->lua.bound_gguf = &gguf;
  Graph *g = driver_load_opts(a, c->model, &c->lua, &d);
  QuantReport qr = {0};
  if (c->pipe.pass.quantize && c->pipe.pass.verbose) /* -v: the quantization errors */
    c->pipe.pass.quant_report = &qr;
  if (!g || !driver_lower(g, &c->pipe, &d))
    return fail(&d, a);
  if (c->pipe.pass.quant_report) {
    Buf b = {0};
    quant_report_print(&b, &qr);
    fputs(b.s, stderr);
    buf_free(&b);
  }
  if (dump_only) {
    arena_free(a);
    return 0;
  }
  if (!g->planned)
    die("--passes=%s: C needs a planned graph; expected a pass list that ends with the plan pass "
        "(see kiln passes)", c->pipe.passes ? c->pipe.passes : "");
  /* out/encoder.c gets out/encoder.h beside it; the API prefix is --name,
   * or else the file's stem when that is a C identifier */
  const char *slash = strrchr(out, '/');
  const char *base = slash ? slash + 1 : out;
  const char *stem = arena_printf(a, "%.*s", (int)strlen(base) - 2, base);
  EmitOptions eo = {.prefix = c->name, .source = c->model,
                    .header = arena_printf(a, "%s.h", stem), .isa = c->check.isa,
                    .threads = c->check.threads, .gemm = c->check.gemm, .precision = c->check.precision,
                    .weights = c->check.weights, .unroll_layers = c->check.unroll_layers,
                    .tokenizer = gguf && tokenizer_present(gguf) ? gguf : NULL, .quiet = c->check.quiet};
  if (!c->name_given && is_c_ident(stem))
    eo.prefix = stem;
  d.file = c->model;
  if (!make_parent_dirs(out, &d) || !driver_write_c(g, &eo, out, &d))
    return fail(&d, a);
  arena_free(a);
  return 0;
}

/* kiln opt IN --passes=... [-o OUT.kir]: passes from text IR to text IR */
static int cmd_opt(Cli *c) {
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = driver_load_opts(a, c->model, &c->lua, &d);
  if (!g || !driver_lower(g, &c->pipe, &d))
    return fail(&d, a);
  if (c->out) {
    size_t n = strlen(c->out);
    if (n < 5 || strcmp(c->out + n - 4, ".kir") != 0)
      die("-o %s: expected a file name ending in .kir", c->out);
    Diag wd = {0};
    if (!make_parent_dirs(c->out, &wd) || !driver_write_kir(g, c->out, &wd))
      return fail(&wd, a);
  } else {
    Buf b = {0};
    ir_print(&b, g, NULL);
    fputs(b.s, stdout);
    buf_free(&b);
  }
  arena_free(a);
  return 0;
}

/* kiln dot MODEL [--after=PASS] [-o FILE.dot] */
static int cmd_dot(Cli *c) {
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = driver_load_opts(a, c->model, &c->lua, &d);
  if (!g)
    return fail(&d, a);
  if (c->after) {
    if (!pass_find(c->after))
      die("--after=%s: unknown pass; see kiln passes", c->after);
    Buf list = {0};
    for (int i = 0; i < pass_count; i++) {
      buf_printf(&list, "%s%s", i ? "," : "", pass_list[i].name);
      if (!strcmp(pass_list[i].name, c->after))
        break;
    }
    c->pipe.passes = arena_strdup(a, list.s);
    buf_free(&list);
    if (!driver_lower(g, &c->pipe, &d))
      return fail(&d, a);
  }
  Buf b = {0};
  dot_print(&b, g);
  Diag wd = {0};
  if (c->out ? !make_parent_dirs(c->out, &wd) || !write_file_atomic(c->out, b.s, b.len, &wd)
             : fputs(b.s, stdout) < 0)
    return fail(&wd, a);
  buf_free(&b);
  arena_free(a);
  return 0;
}

/* kiln export MODEL -o OUT.onnx: by default the passes that keep the
 * model's own ops (no fusion, so the file reads like the source; --passes=
 * to change), then kiln ops lowered to standard ONNX ops, always last. */
static int cmd_export(Cli *c) {
  if (!c->out)
    die("export: %s: no output file; expected -o OUT.onnx (a file name ending in .onnx)", c->model);
  size_t n = strlen(c->out);
  if (n < 6 || strcmp(c->out + n - 5, ".onnx") != 0)
    die("export: -o %s: expected a file name ending in .onnx", c->out);
  if (!c->pipe.passes)
    c->pipe.passes = "bind,infer,fold,simplify,dce";
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = driver_load_opts(a, c->model, &c->lua, &d);
  if (!g || !driver_lower(g, &c->pipe, &d) || !decompose_kiln_ops(g, &d) || !make_parent_dirs(c->out, &d) ||
      !onnx_export(g, c->out, &d))
    return fail(&d, a);
  arena_free(a);
  return 0;
}

/* info on a model with symbolic dims not bound by --shape: each is taken
 * as 1, said in one note, so a first look needs no flags. */
static void bind_symbols_to_one(Cli *c, const Graph *g) {
  Buf names = {0};
  for (int k = 0; k < g->ninputs; k++) {
    const Value *v = &g->vals[g->inputs[k]];
    bool whole = false;
    for (int s = 0; s < c->nshapes; s++)
      whole = whole || !strcmp(c->shapes[s].name, v->name);
    for (int i = 0; i < v->type.rank && !whole; i++) {
      bool bound = v->type.dims[i] >= 0 || !v->sym[i];
      for (int s = 0; s < c->nshapes && !bound; s++)
        bound = !strcmp(c->shapes[s].name, v->sym[i]);
      if (bound || c->nshapes >= 64 || strlen(v->sym[i]) >= sizeof c->shape_names[0])
        continue;
      snprintf(c->shape_names[c->nshapes], sizeof c->shape_names[0], "%s", v->sym[i]);
      c->shapes[c->nshapes] = (ShapeBinding){.name = c->shape_names[c->nshapes], .rank = 1, .dims = {1}};
      c->nshapes++;
      buf_printf(&names, "%s'%s'", names.len ? ", " : "", v->sym[i]);
    }
  }
  c->pipe.pass.nshapes = c->nshapes;
  if (names.len)
    fprintf(stderr, "kiln: note: symbolic dims %s are taken as 1 here; set them with --shape NAME=N\n", names.s);
  buf_free(&names);
}

/* kiln info MODEL [--json] [--memory-svg FILE] */
static int cmd_info(Cli *c) {
  Arena *a = arena_new();
  Diag d = {0};
  InfoOptions io = {.json = c->json, .memory_svg = c->memory_svg, .verbose = c->pipe.pass.verbose};
  if (dsl_is_gguf(c->model)) { /* the file first; then, when kiln can compile it, the model */
    d.file = c->model;
    bool described;
    Buf part = {0};
    if (!info_gguf(&part, a, c->model, &io, &described, &d))
      return fail(&d, a);
    if (!described) { /* kiln cannot compile it: the file's part is the report */
      fputs(part.s, stdout);
      buf_free(&part);
      arena_free(a);
      return 0;
    }
    io.gguf_part = arena_strdup(a, part.s); /* printed with the report: nothing on stdout on an error */
    buf_free(&part);
  }
  Graph *before = driver_load_opts(a, c->model, &c->lua, &d);
  if (before)
    bind_symbols_to_one(c, before);
  Graph *g = before ? driver_load_opts(a, c->model, &c->lua, &d) : NULL;
  QuantReport qr = {0};
  c->pipe.pass.quant_report = c->pipe.pass.quantize ? &qr : NULL;
  if (!g || !driver_lower(g, &c->pipe, &d))
    return fail(&d, a);
  io.quant = c->pipe.pass.quant_report;
  if (c->memory_svg) { /* the file first: an error prints no report */
    Buf b = {0};
    info_memory_svg(&b, g);
    Diag wd = {0};
    bool ok = write_file_atomic(c->memory_svg, b.s, b.len, &wd);
    buf_free(&b);
    if (!ok)
      return fail(&wd, a);
  }
  if (!info_report(before, g, &io, &d)) {
    if (c->memory_svg)
      remove(c->memory_svg);
    return fail(&d, a);
  }
  arena_free(a);
  return 0;
}

static void print_tensor(const char *name, const Tensor *t) {
  char ts[160];
  int64_t n = type_numel(&t->type);
  printf("%s: %s = [", name, type_str(&t->type, ts, sizeof ts));
  for (int64_t i = 0; i < n; i++) {
    if (i == 64 && n > 72) {
      printf(", ... (%lld more)", (long long)(n - 64));
      break;
    }
    DType dt = t->type.dt;
    if (dt_is_float(dt))
      printf(dt == DT_F32 ? "%s%.9g" : "%s%.17g", i ? ", " : "", el_get_f(dt, t->data, i));
    else if (dt_is_signed_int(dt))
      printf("%s%lld", i ? ", " : "", (long long)el_get_i(dt, t->data, i));
    else
      printf("%s%llu", i ? ", " : "", (unsigned long long)el_get_u(dt, t->data, i));
  }
  printf("]\n");
}

/* --out DIR's file for output k */
static const char *out_path(Arena *a, const Cli *c, int k) {
  return arena_printf(a, "%s/output_%d%s", c->outdir, k, c->out_ext ? c->out_ext : ".pb");
}

static int cmd_run(Cli *c) {
  struct stat st;
  if (c->outdir && (stat(c->outdir, &st) != 0 || !S_ISDIR(st.st_mode)))
    die("--out %s: no such folder; expected an existing folder for output_K files", c->outdir);
  if (c->out_ext && !c->outdir)
    die("--out-format=%s needs --out DIR; expected both", c->out_ext + 1);
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = driver_load_opts(a, c->model, &c->lua, &d);
  if (!g)
    return fail(&d, a);
  Tensor *in = arena_alloc(a, sizeof(Tensor) * (size_t)(g->ninputs + 1));
  bool *given = arena_alloc(a, (size_t)g->ninputs + 1);
  for (int k = 0; k < c->ninputs; k++) {
    Diag td = {0};
    if (!tensor_file_read_input(a, g, c->inputs[k], in, given, &td))
      return fail(&td, a);
  }
  for (int i = 0; i < g->ninputs; i++)
    if (!given[i] && !interp_state_start(g, i, &in[i])) /* a state starts from its init */
      die("input '%s' has no value; pass --input NAME=FILE.npy (or .pb)", g->vals[g->inputs[i]].name);
  /* values that fix shapes are compiled in, as kiln check does; the other
   * inputs' shapes bind their symbolic dims */
  int nin = g->ninputs;
  driver_freeze_shape_inputs(g, in, &nin);
  for (int i = 0; i < g->ninputs && c->pipe.pass.nshapes < 64; i++) {
    ShapeBinding *b = &c->shapes[c->pipe.pass.nshapes++];
    b->name = g->vals[g->inputs[i]].name;
    b->rank = in[i].type.rank;
    memcpy(b->dims, in[i].type.dims, sizeof b->dims);
  }
  c->pipe.stop_before_plan = true;
  Tensor *out = NULL;
  if (!driver_lower(g, &c->pipe, &d))
    return fail(&d, a);
  out = arena_alloc(a, sizeof(Tensor) * (size_t)(g->noutputs + 1));
  if (!interp_run(g, in, out, &d))
    return fail(&d, a);
  for (int k = 0; c->outdir && k < g->noutputs; k++) { /* the files first: an error prints nothing */
    Diag wd = {0};
    if (!tensor_file_write(out_path(a, c, k), &out[k], g->vals[g->outputs[k]].name, &wd)) {
      while (k-- > 0) /* all or none: no output_0 of a run whose output_1 failed */
        remove(out_path(a, c, k));
      return fail(&wd, a);
    }
  }
  for (int k = 0; k < g->noutputs; k++)
    print_tensor(g->vals[g->outputs[k]].name, &out[k]);
  arena_free(a);
  return 0;
}

static int cmd_ops(void) {
  int onnx = 0;
  for (int i = 0; i < OP_COUNT_; i++)
    onnx += op_table[i].since > 0;
  printf("kiln supports these %d ONNX ops (default domain, opsets 1 to %d), from the version\n"
         "that brought them up to the newest version whose semantics kiln implements:\n", onnx,
         onnx_opset_newest());
  for (int i = 0; i < OP_COUNT_; i++)
    if (op_table[i].since > 0)
      printf("  %-24s versions %d to %d\n", op_table[i].name, op_table[i].since, op_table[i].upto);
  if (onnx < OP_COUNT_)
    printf("and these kiln ops, made by fusion (not read from ONNX files):\n");
  for (int i = 0; i < OP_COUNT_; i++)
    if (op_table[i].since == 0)
      printf("  %s\n", op_table[i].name);
  return 0;
}

/* kiln passes: pass_list's names and descriptions, in a column as wide as
 * the longest name. */
static int cmd_passes(void) {
  int w = 0;
  for (int i = 0; i < pass_count; i++)
    w = (int)strlen(pass_list[i].name) > w ? (int)strlen(pass_list[i].name) : w;
  for (int i = 0; i < pass_count; i++)
    printf("  %-*s %s\n", w, pass_list[i].name, pass_list[i].what);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      (!strcmp(argv[1], "help") && argc == 2)) {
    FILE *f = argc < 2 ? stderr : stdout;
    fprintf(f, "%s\n%s\n%s\n%s\n%s", usage, usage_lua, usage_compile, usage_check, usage_bench);
    return argc < 2 ? 1 : 0;
  }
  if (!strcmp(argv[1], "help"))
    return command_help(argv[2]);
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return command_help(argv[1]);
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("kiln %s\n", KILN_VERSION);
    return 0;
  }
  if (command_index(argv[1]) < 0)
    die("unknown command '%s'%s; see kiln --help", argv[1], command_hint(argv[1]));
  Cli c = {0};
  parse_args(argc, argv, &c);
  /* kiln compile says what it does, on a terminal (progress.h) */
  progress_start(!c.check.quiet && !strcmp(c.cmd, "compile"));
  if (!strcmp(c.cmd, "ops"))
    return cmd_ops();
  if (!strcmp(c.cmd, "passes"))
    return cmd_passes();
  if (!c.model)
    die("%s: no input given; see kiln --help", c.cmd);
  /* check DIR finds its model inside DIR (maybe a .lua): judge --model, or nothing */
  const char *model = !strcmp(c.cmd, "check") ? c.check.model : c.model;
  size_t ml = model ? strlen(model) : 0;
  bool gguf_model = model && dsl_is_gguf(model); /* kiln's description of its architecture */
  bool lua_model = !model || (ml > 4 && !strcmp(model + ml - 4, ".lua")) || gguf_model;
  if (!lua_model && (c.lua.weights || c.lua.nsets))
    die("%s: --weights FILE and --set are for .lua models and GGUF files; expected a .lua model (ONNX and .kir "
        "models carry their own weights and shapes: see --shape)", c.lua.weights ? "--weights" : "--set");
  if (gguf_model && c.lua.weights)
    die("--weights %s: the model %s is a GGUF file, which holds its weights; expected no --weights (or a .lua "
        "description: kiln %s DESCRIPTION.lua --weights %s)", c.lua.weights, model, c.cmd, model);
  if (c.kv_cache || c.prefill || c.kv_dtype) { /* --kv-cache: compile an ONNX model with a past */
    const char *flag = c.kv_cache ? "--kv-cache" : c.prefill ? "--prefill" : "--kv-dtype";
    if (strcmp(c.cmd, "compile"))
      die("%s is for `kiln compile` of an ONNX decoder with past_key_values; expected kiln compile MODEL.onnx "
          "--kv-cache=N", flag);
    if (lua_model || (ml > 4 && !strcmp(model + ml - 4, ".kir")))
      die("%s is for ONNX models with past_key_values inputs; a .lua model makes its cache with decoder{} "
          "(ctx, prefill), and .kir models are not decoders", flag);
    char n[64];
    snprintf(n, sizeof n, "%lld", (long long)(c.kv_cache ? c.kv_cache : c.prefill));
    if (!c.kv_cache && c.prefill)
      die("--prefill=%s needs --kv-cache=N (the cache's capacity); expected both", n);
    if (!c.kv_cache)
      die("--kv-dtype=%s needs --kv-cache=N (the cache's capacity); expected both", c.kv_dtype);
    if (c.prefill > c.kv_cache)
      die("--prefill is larger than --kv-cache=%s; expected a prompt chunk no longer than the cache", n);
  }
  if (!strcmp(c.cmd, "check") || !strcmp(c.cmd, "bench"))
    check_cc(c.check.cc);
  if (!strcmp(c.cmd, "check")) {
    c.check.pipe = c.pipe;
    return check_dir(c.model, &c.check);
  }
  if (!strcmp(c.cmd, "bench")) {
    BenchOptions *b = &c.bench;
    b->keep = c.check.keep, b->isa = c.check.isa, b->cc = c.check.cc, b->cflags = c.check.cflags;
    b->threads = c.check.threads, b->gemm = c.check.gemm, b->weights = c.check.weights;
    b->precision = c.check.precision, b->unroll_layers = c.check.unroll_layers;
    b->inputs = c.inputs, b->ninputs = c.ninputs, b->pipe = c.pipe;
    return bench_model(c.model, b);
  }
  if (!strcmp(c.cmd, "opt"))
    return cmd_opt(&c);
  if (!strcmp(c.cmd, "dot"))
    return cmd_dot(&c);
  if (!strcmp(c.cmd, "info"))
    return cmd_info(&c);
  if (!strcmp(c.cmd, "export"))
    return cmd_export(&c);
  return !strcmp(c.cmd, "run") ? cmd_run(&c) : cmd_compile(&c);
}
