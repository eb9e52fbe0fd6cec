#!/usr/bin/env python3
"""Load client for OpenAI-compatible servers (rlx serve, llama-server, vLLM): C concurrent streams,
each with its own prompt of exactly P tokens (distinct prompts, so no prefix cache flatters a server),
each generating exactly G tokens (ignore_eos), streamed. Reports aggregate generated tokens/s, time
to first token and inter-token latency percentiles (per request: the time after its first text event over the
tokens that came after it, so a server that sends several tokens in one event is neither flattered
nor penalised). Python 3 standard library only: it runs where
node does not (a GPU machine).

Prompts are token ids sent to /v1/completions, built from random words through the server's own
/tokenize (llama-server's shape, which rlx serve shares), so both servers see the same length.

    python3 tools/serve_bench.py --url http://127.0.0.1:8080 --streams 1,8,32,64 \\
        --prompt-tokens 512 --gen-tokens 128
"""
import argparse
import json
import random
import sys
import threading
import time
import urllib.request
from http.client import HTTPConnection
from urllib.parse import urlparse

WORDS = ("time river stone light garden window morning silver forest music quiet number paper "
         "yellow market winter bridge candle ocean letter mountain summer engine orange little "
         "history friend circle animal question travel simple distant cloud kitchen").split()


def post_json(url, path, body, key):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def make_prompt(url, key, n_tokens, seed):
    """Exactly n_tokens ids: random words tokenized by the server, cut to length."""
    rng = random.Random(seed)
    ids = []
    while len(ids) < n_tokens:
        text = " ".join(rng.choice(WORDS) for _ in range(max(16, n_tokens)))
        ids += post_json(url, "/tokenize", {"content": f"Story {seed}: {text}"}, key)["tokens"]
    return ids[:n_tokens]


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one_stream(u, key, model, prompt, gen, out):
    """One streamed completion; appends a record to out: start, first and last text times, the
    tokens of the first text event and in all, and the gaps between text events."""
    body = {"model": model, "prompt": prompt, "max_tokens": gen, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    conn = HTTPConnection(u.hostname, u.port or 80, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    t_first = t_last = None
    n_first = n_seen = 0
    usage, gaps = None, []
    for raw in r:
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("usage"):
            usage = ev["usage"]
        if any(c.get("text") for c in ev.get("choices", [])):
            now = time.perf_counter()
            # a server that batches several tokens into one event says how many (vLLM's
            # continuous_usage_stats); without it, an event is one token (llama-server's)
            n_seen = ev["usage"]["completion_tokens"] if ev.get("usage") else n_seen + 1
            if t_first is None:
                t_first, n_first = now, n_seen
            else:
                gaps.append(now - t_last)
            t_last = now
    t_end = time.perf_counter()
    conn.close()
    n = usage["completion_tokens"] if usage else n_seen
    out.append({"t0": t0, "t_first": t_first or t_end, "t_last": t_last or t_end, "n_first": n_first,
                "n_last": n_seen, "n": n, "gaps": gaps})


def run_level(args, prompts, streams):
    u = urlparse(args.url)
    results, errors = [], []

    def worker(k):
        try:
            for _ in range(args.requests_per_stream):
                one_stream(u, args.api_key, args.model, prompts[k], args.gen_tokens, results)
        except Exception as e:  # reported below; the run goes on
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(streams)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    gen = sum(r["n"] for r in results)
    ttft = [r["t_first"] - r["t0"] for r in results]
    # per request, the decode interval after the first text: the tokens that came after the first
    # event over the time they took (a burst of tokens in one event counts as its tokens)
    itl = [(r["t_last"] - r["t_first"]) / (r["n_last"] - r["n_first"]) for r in results if r["n_last"] > r["n_first"]]
    gaps = [g for r in results for g in r["gaps"]]
    return {"streams": streams, "requests": len(results), "errors": len(errors), "first_error": errors[:1],
            "wall_s": wall, "gen_tokens": gen, "gen_tok_s": gen / wall if wall > 0 else 0.0,
            "ttft_p50_ms": 1e3 * percentile(ttft, 50), "ttft_p99_ms": 1e3 * percentile(ttft, 99),
            "itl_p50_ms": 1e3 * percentile(itl, 50), "itl_p99_ms": 1e3 * percentile(itl, 99),
            "decode_tok_s_per_stream": 1.0 / percentile(itl, 50) if itl else 0.0,
            "chunk_gap_p99_ms": 1e3 * percentile(gaps, 99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--streams", default="1,8,32,64", help="concurrent streams, a comma-separated list of levels")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--requests-per-stream", type=int, default=1)
    ap.add_argument("--model", default="any")
    ap.add_argument("--api-key", default="none")
    ap.add_argument("--seed", type=int, default=0, help="varies the prompts between runs")
    ap.add_argument("--warmup", type=int, default=1,
                    help="unmeasured runs of each level first, with other prompts (default 1): the first "
                         "requests of a shape may compile programs, on either server")
    ap.add_argument("--json", action="store_true", help="one JSON object a level instead of the table")
    args = ap.parse_args()
    levels = [int(x) for x in args.streams.split(",")]
    prompts = [make_prompt(args.url, args.api_key, args.prompt_tokens, args.seed * 100000 + k)
               for k in range(max(levels))]
    # distinct from the measured ones, so that the warm-up leaves nothing in a prefix cache for them
    warm = [make_prompt(args.url, args.api_key, args.prompt_tokens, args.seed * 100000 + 50000 + k)
            for k in range(max(levels))] if args.warmup else []
    if not args.json:
        print(f"{args.url}: prompts of {args.prompt_tokens} tokens, {args.gen_tokens} generated (ignore_eos)")
        print(f"{'streams':>7} {'reqs':>5} {'err':>4} {'gen tok/s':>10} {'ttft p50':>9} {'ttft p99':>9} "
              f"{'itl p50':>8} {'itl p99':>8} {'tok/s/stream':>12}")
    failed = False
    for c in levels:
        for _ in range(args.warmup):
            run_level(args, warm, c)
        r = run_level(args, prompts, c)
        failed |= r["errors"] > 0
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{c:>7} {r['requests']:>5} {r['errors']:>4} {r['gen_tok_s']:>10.1f} {r['ttft_p50_ms']:>7.1f}ms "
                  f"{r['ttft_p99_ms']:>7.1f}ms {r['itl_p50_ms']:>6.2f}ms {r['itl_p99_ms']:>6.2f}ms "
                  f"{r['decode_tok_s_per_stream']:>12.1f}"
                  + (f"  first error: {r['first_error'][0]}" if r["errors"] else ""))
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
