"""decode.py — times kiln's generate program and llama.cpp's llama-bench on the
same GGUF, interleaved, and prints issue 10's decode table (bench/decode.sh
builds both and calls this; stdlib only, any python3).

Measured for each engine and thread count (positions count from 0):
  prefill tok/s   a 64-token prompt in one call (kiln: NAME_prefill of one
                  64-token chunk; llama.cpp: llama-bench -p 64, one batch)
  decode tok/s    128 steps of one token after that prompt, at positions
                  64..191 (kiln: generate --tokens 129, whose first token
                  comes from the prefill's logits; llama.cpp: llama-bench
                  -n 128 -d 64)
  ms/token @P     the mean of the 9 steps at positions P-4..P+4 (P = 16,
                  480): kiln: a prompt of P-4 ids, generate --tokens 10;
                  llama.cpp: llama-bench -n 9 -d P-4
  peak RSS        /usr/bin/time's maximum resident set over the engine's runs
                  at that thread count (kiln's KV cache is built for 512
                  positions; llama.cpp's context is sized per run, 64..485)

kiln's side is examples/generate.c:
  generate --prompt-ids ID,ID,... --tokens N --ids
  prints on stderr one line
  timing: prefill_tokens=64 prefill_ms=.. prefill_tok_s=.. decode_tokens=128 decode_ms=.. decode_tok_s=..
  (decode_tokens counts step calls). It stops early at EOS; a run with fewer
  steps than asked is kept (its rate is still a rate) and noted.

Each round runs, for each thread count, kiln then llama.cpp (the order
reversed every other round); every figure is the median over the rounds.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

# The prompt: this text's 64 ids in SmolLM2's tokenizer (no BOS: its GGUF
# adds none; Hugging Face tokenizers on the GGUF's vocabulary and merges,
# as tests/generate/tokenizer_check.py builds it; `generate --tokenize`
# gives the same). Longer prompts (the position runs) repeat it.
PROMPT_TEXT = ("The history of the printing press begins in the fifteenth century, when Johannes "
               "Gutenberg, a goldsmith from Mainz, combined movable metal type, oil-based ink and a "
               "wooden screw press into a system that could produce books faster and more cheaply "
               "than any scribe. Within fifty years, presses were running in more than two")
PROMPT_IDS = [504, 1463, 282, 260, 7510, 1757, 5634, 281, 260, 35561, 2070, 28, 645, 28322, 45382,
              28, 253, 4231, 45956, 429, 6586, 106, 28, 5276, 39245, 4718, 1502, 28, 2664, 29, 2542,
              12923, 284, 253, 10091, 21665, 1757, 618, 253, 817, 338, 856, 2690, 2905, 5331, 284,
              540, 44838, 670, 750, 806, 6842, 30, 10043, 13869, 929, 28, 32422, 592, 4108, 281, 540,
              670, 827]
PREFILL, DECODE, POSITIONS, WINDOW = 64, 128, (16, 480), 4  # WINDOW: steps each side of P


def run_timed(cmd, log):
    """Runs cmd under /usr/bin/time; returns (stdout, stderr, peak RSS KiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd,
                           capture_output=True, text=True)
        log.write("$ %s\n%s%s\n" % (" ".join(cmd), p.stdout, p.stderr))
        if p.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (cmd[0], p.returncode, p.stderr.strip()[-400:]))
        kib = int(rss.read().strip().splitlines()[-1])
    return p.stdout, p.stderr, kib


def parse_timing(stderr):
    """generate's `timing: key=value ...` line as a dict of floats."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("timing:"):
            kv = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.eE+-]+)", line)}
            if "prefill_tok_s" in kv and "decode_ms" in kv and "decode_tokens" in kv:
                return kv
    raise RuntimeError("no `timing: prefill_tok_s=.. decode_ms=..` line in generate's stderr: %r"
                       % stderr[-400:])


def prompt(n):
    """n prompt ids: PROMPT_IDS, repeated as often as needed."""
    return ",".join(str(PROMPT_IDS[i % len(PROMPT_IDS)]) for i in range(n))


KILN_ARGS = []  # --kiln-arg: more generate options (decode.sh: --ignore-eos where it exists)


def kiln_generate(prog, n_prompt, n_steps, res, log):
    """One generate run: its timing line; counts short runs (EOS) in res."""
    _, err, kib = run_timed([prog, "--ids", "--prompt-ids", prompt(n_prompt),
                             "--tokens", str(n_steps + 1)] + KILN_ARGS, log)
    res["rss"] = max(res.get("rss", 0), kib)
    t = parse_timing(err)
    if t["decode_tokens"] < n_steps:
        res.setdefault("notes", set()).add("kiln stopped at EOS after %d of %d steps (prompt %d)"
                                           % (t["decode_tokens"], n_steps, n_prompt))
    return t


def kiln_round(prog, res, log):
    """One kiln measurement: prefill/decode rates, the steps at each position, RSS."""
    t = kiln_generate(prog, PREFILL, DECODE, res, log)
    res.setdefault("prefill", []).append(t["prefill_tok_s"])
    res.setdefault("decode", []).append(t["decode_tok_s"])
    for p in POSITIONS:
        t = kiln_generate(prog, p - WINDOW, 2 * WINDOW + 1, res, log)
        if t["decode_tokens"] > 0:
            res.setdefault("at%d" % p, []).append(t["decode_ms"] / t["decode_tokens"])


def llama_bench(lb, gguf, threads, args, log):
    """llama-bench's jsonl records for one invocation, and its peak RSS."""
    extra = os.environ.get("KILN_LLAMA_ARGS", "").split()  # e.g. --repack 0 (bench/decode.sh)
    out, _, kib = run_timed([lb, "-m", gguf, "-t", str(threads), "-o", "jsonl"] + args + extra, log)
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")], kib


def llama_round(lb, gguf, threads, res, log):
    """One llama.cpp measurement: pp64, tg128 at depth 64, 9 steps at each position."""
    recs, kib1 = llama_bench(lb, gguf, threads, ["-p", str(PREFILL), "-n", "0", "-r", "1"], log)
    res.setdefault("prefill", []).append(recs[0]["avg_ts"])
    recs, kib2 = llama_bench(lb, gguf, threads, ["-p", "0", "-n", str(DECODE), "-d", str(PREFILL),
                                                 "-r", "1"], log)
    res.setdefault("decode", []).append(recs[0]["avg_ts"])
    depths = ",".join(str(p - WINDOW) for p in POSITIONS)
    recs, kib3 = llama_bench(lb, gguf, threads, ["-p", "0", "-n", str(2 * WINDOW + 1), "-d", depths,
                                                 "-r", "1"], log)
    for r in recs:
        res.setdefault("at%d" % (r["n_depth"] + WINDOW), []).append(r["avg_ns"] / 1e6 / r["n_gen"])
    res["rss"] = max(res.get("rss", 0), kib1, kib2, kib3)
    res["build"] = "commit %s, %s" % (recs[0].get("build_commit", "?"), recs[0].get("cpu_info", "?"))


def med(res, key):
    v = res.get(key)
    return statistics.median(v) if v else None


def fmt(x, nd=1):
    return "—" if x is None else "%.*f" % (nd, x)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def table(results, threads, bounds):
    cols = ["engine", "threads", "prefill tok/s", "decode tok/s", "ms/token @%d" % POSITIONS[0],
            "ms/token @%d" % POSITIONS[1], "@%d / @%d" % (POSITIONS[1], POSITIONS[0]),
            "peak RSS MiB", "kiln bound MiB"]
    rows = []
    for t in threads:
        fig = {}
        for eng in ("kiln", "llama.cpp"):
            r = results.get((eng, t))
            if r is None:
                continue
            f = {k: med(r, k) for k in ("prefill", "decode", "at%d" % POSITIONS[0], "at%d" % POSITIONS[1])}
            f["rss"] = r["rss"] / 1024 if r.get("rss") else None
            fig[eng] = f
            a, b = f["at%d" % POSITIONS[0]], f["at%d" % POSITIONS[1]]
            bound = bounds.get(t) if eng == "kiln" else None
            rows.append([eng, str(t), fmt(f["prefill"]), fmt(f["decode"]), fmt(a, 2), fmt(b, 2),
                         fmt(ratio(b, a), 2), fmt(f["rss"]), fmt(bound / 2**20 if bound else None)])
        if len(fig) == 2:
            k, l = fig["kiln"], fig["llama.cpp"]
            rows.append(["kiln/llama.cpp", str(t)] +
                        [fmt(ratio(k[x], l[x]), 2) for x in ("prefill", "decode", "at%d" % POSITIONS[0],
                                                            "at%d" % POSITIONS[1])] +
                        ["", fmt(ratio(k["rss"], l["rss"]), 2), ""])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--llama-bench", help="llama-bench binary (none: kiln only)")
    ap.add_argument("--kiln", action="append", default=[], metavar="THREADS=PROG",
                    help="kiln generate program built for THREADS threads (repeatable)")
    ap.add_argument("--bound", action="append", default=[], metavar="THREADS=BYTES",
                    help="kiln's RSS target for that build: weights + KV cache + workspace + 2 MiB")
    ap.add_argument("--kiln-arg", action="append", default=[], metavar="ARG",
                    help="one more option for every generate run (write --kiln-arg=--flag)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", help="also write the table (markdown) here")
    ap.add_argument("--log", default=os.devnull, help="every command and its output")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    KILN_ARGS.extend(a.kiln_arg)
    progs = {int(k): v for k, v in (s.split("=", 1) for s in a.kiln)}
    bounds = {int(k): int(v) for k, v in (s.split("=", 1) for s in a.bound)}
    results, notes = {}, []
    load0 = os.getloadavg()[0]
    with open(a.log, "a") as log:
        for rnd in range(a.rounds):
            for t in threads:
                order = ["kiln", "llama.cpp"] if rnd % 2 == 0 else ["llama.cpp", "kiln"]
                for eng in order:
                    if eng == "kiln" and t in progs:
                        print("decode: round %d: kiln %dT" % (rnd + 1, t), file=sys.stderr)
                        kiln_round(progs[t], results.setdefault((eng, t), {}), log)
                    elif eng == "llama.cpp" and a.llama_bench:
                        print("decode: round %d: llama.cpp %dT" % (rnd + 1, t), file=sys.stderr)
                        llama_round(a.llama_bench, a.gguf, t, results.setdefault((eng, t), {}), log)
    for (eng, t), r in sorted(results.items()):
        notes.extend(sorted(r.get("notes", ())))
    llama = next((r["build"] for (e, _), r in results.items() if e == "llama.cpp"), None)
    head = ("decode benchmark: %s, prompt %d tokens, decode %d, median of %d rounds; "
            "load average %.1f at the start, %.1f at the end (on %d CPUs)") % (
        os.path.basename(a.gguf), PREFILL, DECODE, a.rounds, load0, os.getloadavg()[0], os.cpu_count())
    text = "\n".join([head] + (["llama.cpp: " + llama] if llama else []) + ["", table(results, threads, bounds)]
                     + [""] + notes)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
