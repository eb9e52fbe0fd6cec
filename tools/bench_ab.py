#!/usr/bin/env python3
"""Two rlx builds (or one build under two environments) on the same model files, alternating.

The project's rule for a speed claim is one run on one GPU, both sides on the same files,
alternating (docs/PERFORMANCE.md, "How to measure"): this runs, per round and per model, side A's
`rlx bench ARGS -o json` and then side B's, prints each result as it comes (so a run cut short by a
time limit keeps what it measured), and ends with a table of the rounds, the means and B / A for
every test. Before the rounds it checks that both sides give the same greedy ids on each model
from one long prompt (`rlx generate --ids`), since a faster build that decodes other tokens has
measured something else.

  tools/bench_ab.py --a OLD/rlx --b NEW/rlx -m 8b-f16.gguf [-m 8b-q4km.gguf] \\
      [--bench '-p 0 -n 128 -d 0,512,4096 -r 2'] [--rounds 2]
  tools/bench_ab.py --a rlx --b rlx --env-b RLX_VK_ATTN_KB=4 -m 8b-f16.gguf --bench '--parallel 64 -p 512 -n 128 -r 2'

Exit status: 0 when every command ran (ids that differ are reported, and fail only with
--require-same-ids), 1 when a command failed or timed out, 2 for bad arguments.
Standard library only: it runs on the GPU machine, which has python3 and no packages.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys


def parse_env(items, side):
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"bench_ab.py: --env-{side} '{item}': expected KEY=VALUE", file=sys.stderr)
            sys.exit(2)
        env[key] = value
    return env


def run(cmd, env, timeout):
    """(stdout, error): error is None when cmd exited 0 within timeout."""
    try:
        p = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return "", f"{cmd[0]}: not found"
    except subprocess.TimeoutExpired:
        return "", f"timed out after {timeout} s"
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        return p.stdout, f"exit {p.returncode}: {tail}"
    return p.stdout, None


def figures(doc):
    """{test: t/s} of one `rlx bench -o json` document: tg and pp tests by name, a parallel test's
    aggregate decode and prompt rates as 'NAME B=n tg' and 'NAME B=n pp'."""
    out = {}
    for t in doc.get("tests", []):
        if t.get("kind") == "parallel":
            name = f"{t['name']} B={t['n_parallel']}"
            out[name + " tg"] = t["tg"]["avg_ts"]
            out[name + " pp"] = t["pp"]["avg_ts"]
        else:
            out[t["name"]] = t["avg_ts"]
    return out


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def check_ids(args, sides, model):
    prompt = ",".join(str(100 + i) for i in range(args.ids))
    got = []
    for name, exe, env in sides:
        cmd = [exe, "generate", "-m", model, "--tokens", prompt, "-n", str(args.ids_gen), "--ids"] + args.extra
        out, err = run(cmd, env, args.timeout)
        if err:
            print(f"ids {name} {model}: FAILED: {err}", flush=True)
            return None
        got.append(out.split())
        print(f"ids {name} {model}: {' '.join(got[-1])}", flush=True)
    same = got[0] == got[1]
    print(f"ids {model}: {'the same' if same else 'DIFFERENT'}", flush=True)
    return same


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="side A's rlx (the baseline)")
    ap.add_argument("--b", required=True, help="side B's rlx")
    ap.add_argument("--env-a", action="append", default=[], metavar="KEY=VALUE", help="environment of side A only")
    ap.add_argument("--env-b", action="append", default=[], metavar="KEY=VALUE", help="environment of side B only")
    ap.add_argument("-m", "--model", action="append", required=True, help="a model file (repeatable)")
    ap.add_argument("--bench", default="-p 0 -n 128 -d 0,512,4096 -r 2", help="rlx bench arguments (default: %(default)s)")
    ap.add_argument("--extra", default="", help="arguments for every rlx command of both sides, e.g. '--backend cpu'")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of A then B (default 2)")
    ap.add_argument("--ids", type=int, default=1200, help="prompt length of the greedy ids check, 0 for none (default 1200)")
    ap.add_argument("--ids-gen", type=int, default=12, help="ids generated in that check (default 12)")
    ap.add_argument("--require-same-ids", action="store_true", help="exit 1 when the sides' ids differ")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per command (default 300)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = ap.parse_args()
    if args.rounds < 1 or args.timeout < 1 or args.ids < 0 or args.ids_gen < 1:
        ap.error("--rounds, --timeout and --ids-gen must be positive, --ids at least 0")
    args.extra = shlex.split(args.extra)
    bench = shlex.split(args.bench)
    own = ("-o", "--output", "-m", "--model")
    if any(a == o or a.startswith(o + "=") or (len(o) == 2 and a.startswith(o)) for a in bench for o in own):
        ap.error("--bench: -o/--output and -m/--model are this tool's (it reads JSON; models come from -m)")
    sides = [("A", args.a, parse_env(args.env_a, "a")), ("B", args.b, parse_env(args.env_b, "b"))]

    failed, ids_differ = False, False
    if args.ids:
        for model in args.model:
            same = check_ids(args, sides, model)
            failed |= same is None
            ids_differ |= same is False
    # results[model][test][side] = [t/s per round]
    results = {m: {} for m in args.model}
    for r in range(1, args.rounds + 1):
        for model in args.model:
            for name, exe, env in sides:
                out, err = run([exe, "bench", "-m", model, *bench, *args.extra, "-o", "json"], env, args.timeout)
                try:
                    got = figures(json.loads(out)) if not err else {}
                except (ValueError, KeyError) as e:
                    err = f"unreadable JSON: {e}"
                if err:
                    print(f"round {r} {name} {model}: FAILED: {err}", flush=True)
                    failed = True
                    continue
                for test, ts in got.items():
                    results[model].setdefault(test, {"A": [], "B": []})[name].append(ts)
                print(f"round {r} {name} {model}: " + "  ".join(f"{t} {v:.2f}" for t, v in got.items()), flush=True)

    rows = []
    print("\n| model | test | A t/s (rounds) | B t/s (rounds) | A mean | B mean | B / A |")
    print("|---|---|---|---|---:|---:|---:|")
    for model, tests in results.items():
        for test, by in tests.items():
            a, b = by["A"], by["B"]
            ma = sum(a) / len(a) if a else None
            mb = sum(b) / len(b) if b else None
            ratio = mb / ma if ma and mb is not None else None
            rows.append({"model": model, "test": test, "a": a, "b": b, "a_mean": ma, "b_mean": mb, "ratio": ratio})
            print(f"| {os.path.basename(model)} | {test} | {', '.join(f'{v:.2f}' for v in a)} | "
                  f"{', '.join(f'{v:.2f}' for v in b)} | {fmt(ma)} | {fmt(mb)} | {fmt(ratio, 3)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.a, "b": args.b, "env_a": sides[0][2], "env_b": sides[1][2], "bench": bench,
                       "ids_differ": ids_differ, "failed": failed, "rows": rows}, f, indent=2)
    if ids_differ:
        print("bench_ab.py: the sides' greedy ids differ (see above)", file=sys.stderr)
    return 1 if failed or (ids_differ and args.require_same_ids) else 0


if __name__ == "__main__":
    sys.exit(main())
