#!/usr/bin/env python3
"""rlx and llama.cpp decoding many sequences at once, on the same files, alternating.

Issue-style acceptance for batched decode compares `rlx bench --parallel` with llama.cpp's
`llama-batched-bench` (the same protocol: B sequences, each a prompt of NPP tokens and then NTG
decode steps; aggregate decode t/s summed over the sequences). The project's rule for a speed
claim is one run on one GPU, both engines on the same files, alternating (docs/PERFORMANCE.md,
"How to measure"): per round and per model this runs llama-batched-bench, then rlx, prints each
result as it comes (a run cut short by a time limit keeps what it measured), and ends with a
table of every B: both engines' decode t/s in each round, and rlx / llama.cpp of the means.

  tools/batched_compare.py -m 8b-f16.gguf -m 8b-q4km.gguf [--npl 1,8,32,64] [--npp 512] \\
      [--ntg 128] [--rounds 2] [--rlx build/rlx] [--llama .bench/lc/llama-batched-bench]

llama-batched-bench runs as `-npp NPP -ntg NTG -npl NPL -c CTX -ngl 99 --output-format jsonl`
(extra arguments: --llama-args), its libraries taken from its own folder; rlx as `bench --parallel
NPL -p NPP -n NTG -r 1 -o json` (extra: --rlx-args). Exit status: 0 when every command ran, 1
when one failed or timed out, 2 for bad arguments. Standard library only: it runs on the GPU
machine, which has python3 and no packages.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys


def run(cmd, env, timeout):
    """(stdout, error): error is None when cmd exited 0 within timeout."""
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "", f"timed out after {timeout} s"
    except OSError as e:
        return "", str(e)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return r.stdout, f"exit {r.returncode}: " + " | ".join(tail)
    return r.stdout, None


def parse_llama(out):
    """{B: (prompt t/s, decode t/s)} from llama-batched-bench's jsonl lines."""
    got = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "pl" in d and "speed_tg" in d:
            got[int(d["pl"])] = (float(d["speed_pp"]), float(d["speed_tg"]))
    return got


def parse_rlx(out):
    """{B: (prompt t/s, decode t/s)} from `rlx bench -o json` (tests of kind parallel)."""
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return {}
    got = {}
    for t in d.get("tests", []):
        if t.get("kind") == "parallel" and "n_parallel" in t:
            got[int(t["n_parallel"])] = (float(t["pp"]["avg_ts"]), float(t["tg"]["avg_ts"]))
    return got


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def fmt(x):
    return f"{x:,.1f}" if x == x else "-"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", action="append", required=True, help="a GGUF file (repeat for more)")
    ap.add_argument("--rlx", default=os.path.join(here, "..", "build", "rlx"))
    ap.add_argument("--llama", default=os.path.join(here, "..", "..", "shared", "bench", "llama.cpp",
                                                    "llama-batched-bench"))
    ap.add_argument("--npl", default="1,8,32,64", help="parallel sequences, comma-separated")
    ap.add_argument("--npp", type=int, default=512, help="prompt tokens per sequence")
    ap.add_argument("--ntg", type=int, default=128, help="decode steps per sequence")
    ap.add_argument("--ctx", type=int, default=45000, help="llama.cpp's -c (all sequences' tokens)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("--rlx-args", default="", help="extra arguments for rlx bench")
    ap.add_argument("--llama-args", default="", help="extra arguments for llama-batched-bench")
    a = ap.parse_args()
    try:
        npl = [int(x) for x in a.npl.split(",")]
    except ValueError:
        npl = []
    if not npl or min(npl) < 1 or a.npp < 1 or a.ntg < 1 or a.rounds < 1:
        print("batched_compare.py: --npl takes positive integers, comma-separated; --npp, --ntg and --rounds "
              "at least 1", file=sys.stderr)
        return 2
    for path in a.model:
        if not os.path.isfile(path):
            print(f"batched_compare.py: no such model file: {path}", file=sys.stderr)
            return 2
    lenv = dict(os.environ)
    ldir = os.path.dirname(os.path.abspath(a.llama))
    lenv["LD_LIBRARY_PATH"] = ldir + (":" + lenv["LD_LIBRARY_PATH"] if lenv.get("LD_LIBRARY_PATH") else "")
    # results[model][engine][B] = [(pp, tg) per round]
    results = {m: {"llama.cpp": {}, "rlx": {}} for m in a.model}
    failed = False
    for rnd in range(1, a.rounds + 1):
        for m in a.model:
            sides = [("llama.cpp", [a.llama, "-m", m, "-npp", str(a.npp), "-ntg", str(a.ntg), "-npl", a.npl,
                                    "-c", str(a.ctx), "-ngl", "99", "--output-format", "jsonl"]
                      + shlex.split(a.llama_args), lenv, parse_llama),
                     ("rlx", [a.rlx, "bench", "-m", m, "--parallel", a.npl, "-p", str(a.npp), "-n", str(a.ntg),
                              "-r", "1", "-o", "json"] + shlex.split(a.rlx_args), None, parse_rlx)]
            for name, cmd, env, parse in sides:
                out, err = run(cmd, env, a.timeout)
                got = parse(out) if err is None else {}
                missing = [b for b in npl if b not in got]
                if err is None and missing:
                    err = "no result for B = " + ", ".join(map(str, missing))
                if err is not None:
                    failed = True
                    print(f"round {rnd} {os.path.basename(m)} {name}: FAILED ({err})", flush=True)
                for b, v in got.items():
                    results[m][name].setdefault(b, []).append(v)
                if got:
                    print(f"round {rnd} {os.path.basename(m)} {name}: " +
                          "; ".join(f"B={b} pp {fmt(got[b][0])} tg {fmt(got[b][1])}" for b in npl if b in got),
                          flush=True)
    print(f"\naggregate decode t/s (prompts of {a.npp}, {a.ntg} steps; rounds in run order)")
    print("| model | B | llama.cpp tg | rlx tg | rlx / llama.cpp | llama.cpp pp | rlx pp |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m in a.model:
        for b in npl:
            lr, rr = results[m]["llama.cpp"].get(b, []), results[m]["rlx"].get(b, [])
            ltg, rtg = mean([v[1] for v in lr]), mean([v[1] for v in rr])
            ratio = f"{rtg / ltg:.2f}" if lr and rr and ltg > 0 else "-"
            print(f"| {os.path.basename(m)} | {b} | {' / '.join(fmt(v[1]) for v in lr) or '-'} | "
                  f"{' / '.join(fmt(v[1]) for v in rr) or '-'} | {ratio} | {fmt(mean([v[0] for v in lr]))} | "
                  f"{fmt(mean([v[0] for v in rr]))} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
