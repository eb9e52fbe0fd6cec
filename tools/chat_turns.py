#!/usr/bin/env python3
"""A multi-turn chat against any OpenAI-compatible server, reporting per turn how many prompt
tokens the server computed and how many it took from its cache: the measure of whether a server
re-processes a conversation's history on every turn.

  tools/chat_turns.py --url http://127.0.0.1:8080 [--turns 10] [--max-tokens 24] [--key KEY] [--raw]

Each turn sends the whole history (system prompt, earlier user messages and the server's own
answers) plus a new user message, greedy: through /v1/chat/completions and the server's chat template, or
with --raw through /v1/completions, the history rendered here in ChatML (the same text for any
server, and no parsing of a random model's answers), or with --llama-native through llama-server's
own /completion (which returns a random model's invalid UTF-8 where its OpenAI endpoints fail). Cached tokens come from usage.prompt_tokens_details
.cached_tokens (OpenAI's field, which rlx serve fills) or, for llama-server, from its `timings`
(prompt_n: tokens processed; cache_n: tokens reused). Standard library only."""
import argparse
import json
import sys
import urllib.request

QUESTIONS = ["Tell me about the sea.", "What lives in it?", "And in the deepest part?", "Why is it dark there?",
             "How do animals see?", "What do they eat?", "Is it cold?", "How deep is it?",
             "Who has been there?", "What did they find?", "Thank you. One more thing: why is it salty?",
             "Summarise our talk."]


def post(url, path, body, key):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def chatml(msgs):
    """The history as ChatML text, ending with the assistant's header."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs) + "<|im_start|>assistant\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--key", default="none")
    ap.add_argument("--json", action="store_true", help="one JSON object per turn instead of the table")
    ap.add_argument("--raw", action="store_true", help="/v1/completions over ChatML rendered here")
    ap.add_argument("--llama-native", action="store_true", help="llama-server's /completion over the same ChatML")
    ap.add_argument("--fixed-answers", action="store_true",
                    help="the history holds a fixed answer per turn, not the server's: the same text for every server "
                         "(with --max-tokens 0 where a server fails on a random model's output)")
    a = ap.parse_args()
    if a.max_tokens < 0 or (a.max_tokens == 0 and not (a.llama_native and a.fixed_answers)):
        sys.exit("chat_turns: --max-tokens 0 needs --llama-native --fixed-answers (there is no answer to keep)")
    if a.turns < 1 or a.turns > len(QUESTIONS):
        sys.exit(f"chat_turns: --turns {a.turns}: expected 1 to {len(QUESTIONS)}")
    msgs = [{"role": "system", "content": "You are a helpful assistant who answers briefly."}]
    if not a.json:
        print(f"{'turn':>4} {'prompt':>7} {'cached':>7} {'computed':>9}")
    for t in range(a.turns):
        msgs.append({"role": "user", "content": QUESTIONS[t]})
        body = {"model": "any", "max_tokens": a.max_tokens, "temperature": 0, "cache_prompt": True}
        if a.llama_native:
            r = post(a.url, "/completion", {"prompt": chatml(msgs), "n_predict": a.max_tokens, "temperature": 0,
                                            "cache_prompt": True}, a.key)
            r = {"timings": r["timings"], "choices": [{"text": r["content"]}],
                 "usage": {"prompt_tokens": r["timings"]["prompt_n"] + r["timings"].get("cache_n", 0)}}
        elif a.raw:
            body["prompt"] = chatml(msgs)
            r = post(a.url, "/v1/completions", body, a.key)
        else:
            body["messages"] = msgs
            r = post(a.url, "/v1/chat/completions", body, a.key)
        u = r.get("usage", {})
        prompt = u.get("prompt_tokens", 0)
        tm = r.get("timings")
        if tm and "prompt_n" in tm:  # llama-server: what it processed, what it reused
            computed = tm["prompt_n"]
            cached = tm.get("cache_n", prompt - computed)
        else:
            cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            computed = prompt - cached
        row = {"turn": t + 1, "prompt_tokens": prompt, "cached_tokens": cached, "computed_tokens": computed}
        print(json.dumps(row) if a.json else f"{t + 1:>4} {prompt:>7} {cached:>7} {computed:>9}")
        choice = r["choices"][0]
        answer = choice["text"] if a.raw or a.llama_native else choice["message"]["content"]
        if a.fixed_answers:
            answer = f"Here is my answer number {t + 1}, as short as I can make it."
        msgs.append({"role": "assistant", "content": answer})


if __name__ == "__main__":
    main()
