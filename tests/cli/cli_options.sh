#!/bin/bash
# Option parsing of every rlx command (getopt_long over one option table per command, in
# tools/cli_util.c): unknown options, missing and bad values, --opt=value, abbreviations (refused),
# "--", positional arguments, and --help among other options. The expected first two lines of
# stderr and the exit codes were recorded from the hand-rolled parser that came before, so they
# hold the messages to what they were. Nothing here runs a model; the few successes tokenize.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run ARGS...: rlx ARGS with no input; $TMP/out, $TMP/err, $rc
run() {
  "$RLX" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  rc=$?
}

# expect CODE LINE1 LINE2 ARGS...: exit CODE, nothing on stdout, stderr's first two lines exactly
expect() {
  local code=$1 line1=$2 line2=$3
  shift 3
  check
  run "$@"
  local got1 got2
  got1=$(sed -n 1p "$TMP/err")
  got2=$(sed -n 2p "$TMP/err")
  if [ "$rc" -ne "$code" ]; then
    fail "rlx $*: exit $rc, expected $code ($got1)"
  elif [ -s "$TMP/out" ]; then
    fail "rlx $*: wrote to stdout: $(head -c 200 "$TMP/out")"
  elif [ "$got1" != "$line1" ] || [ "$got2" != "$line2" ]; then
    fail "rlx $*: stderr '$got1' / '$got2', expected '$line1' / '$line2'"
  fi
}

# help ARGS...: exit 0, the usage text on stdout, nothing on stderr
help() {
  check
  run "$@"
  if [ "$rc" -ne 0 ] || [ -s "$TMP/err" ] || ! head -n 1 "$TMP/out" | grep -q '^usage: rlx'; then
    fail "rlx $*: exit $rc, expected 0 with the usage ($(head -c 200 "$TMP/err"))"
  fi
}

# expect_out LINE ARGS...: exit 0 and stdout's first line exactly
expect_out() {
  local line=$1
  shift
  check
  run "$@"
  local got
  got=$(sed -n 1p "$TMP/out")
  if [ "$rc" -ne 0 ] || [ "$got" != "$line" ]; then
    fail "rlx $*: exit $rc, stdout '$got', expected 0 and '$line' ($(head -c 200 "$TMP/err"))"
  fi
}

help --help

expect 2 "rlx: unknown command 'bogus'" "" bogus

help run --help
help run -h
expect 2 "rlx run: unknown option '--bogus'" "run 'rlx run --help' for its options" run --bogus
expect 2 "rlx run: unknown option '--bogus=1'" "run 'rlx run --help' for its options" run --bogus=1
expect 2 "rlx run: unknown option '-x'" "run 'rlx run --help' for its options" run -x
expect 2 "rlx run: unknown option '-hx'" "run 'rlx run --help' for its options" run -hx
expect 2 "rlx run: unknown option '-x'" "run 'rlx run --help' for its options" run -h -x
expect 2 "rlx run: unknown option '--help=1'" "run 'rlx run --help' for its options" run --help=1
expect 2 "rlx run: unknown option '--special=1'" "run 'rlx run --help' for its options" run --special=1
expect 2 "rlx run: unknown option 'extra'" "run 'rlx run --help' for its options" run extra
expect 2 "rlx run: unknown option '--'" "run 'rlx run --help' for its options" run --
expect 2 "rlx run: unknown option '--'" "run 'rlx run --help' for its options" run -- -h
expect 2 "rlx run: unknown option ''" "run 'rlx run --help' for its options" run ''
expect 2 "rlx run: unknown option '-'" "run 'rlx run --help' for its options" run -
expect 2 "rlx run: option -m needs a value" "run 'rlx run --help' for its options" run -m
expect 2 "rlx run: option --model needs a value" "run 'rlx run --help' for its options" run --model
expect 2 "rlx run: option --prompt needs a value" "run 'rlx run --help' for its options" run -p
expect 2 "rlx run: option --prompt needs a value" "run 'rlx run --help' for its options" run --prompt
expect 2 "rlx run: option --file needs a value" "run 'rlx run --help' for its options" run -f
expect 2 "rlx run: option --file needs a value" "run 'rlx run --help' for its options" run --file
expect 2 "rlx run: option --n-predict needs a value" "run 'rlx run --help' for its options" run -n
expect 2 "rlx run: option --n-predict needs a value" "run 'rlx run --help' for its options" run --n-predict
expect 2 "rlx run: option --threads needs a value" "run 'rlx run --help' for its options" run -t
expect 2 "rlx run: option --threads needs a value" "run 'rlx run --help' for its options" run --threads
expect 2 "rlx run: option --ctx needs a value" "run 'rlx run --help' for its options" run --ctx
expect 2 "rlx run: option --tokens needs a value" "run 'rlx run --help' for its options" run --tokens
expect 2 "rlx run: option --backend needs a value" "run 'rlx run --help' for its options" run --backend
expect 2 "rlx run: option --device needs a value" "run 'rlx run --help' for its options" run --device
expect 2 "rlx run: option --decode-ahead needs a value" "run 'rlx run --help' for its options" run --decode-ahead
expect 2 "rlx run: option --temp needs a value" "run 'rlx run --help' for its options" run --temp
expect 2 "rlx run: option --top-k needs a value" "run 'rlx run --help' for its options" run --top-k
expect 2 "rlx run: option --top-p needs a value" "run 'rlx run --help' for its options" run --top-p
expect 2 "rlx run: option --min-p needs a value" "run 'rlx run --help' for its options" run --min-p
expect 2 "rlx run: option --repeat-penalty needs a value" "run 'rlx run --help' for its options" run --repeat-penalty
expect 2 "rlx run: option --repeat-last-n needs a value" "run 'rlx run --help' for its options" run --repeat-last-n
expect 2 "rlx run: option --seed needs a value" "run 'rlx run --help' for its options" run --seed
expect 2 "rlx run: --n-predict: 0 is out of range [1, 2147483647]" "run 'rlx run --help' for its options" run -n 0
expect 2 "rlx run: --n-predict: 'abc' is not a whole number" "run 'rlx run --help' for its options" run -n abc
expect 2 "rlx run: --n-predict: 0 is out of range [1, 2147483647]" "run 'rlx run --help' for its options" run --n-predict=0
expect 2 "rlx run: --threads: 2000 is out of range [0, 1024]" "run 'rlx run --help' for its options" run -t 2000
expect 2 "rlx run: --threads: 2000 is out of range [0, 1024]" "run 'rlx run --help' for its options" run --threads=2000
expect 2 "rlx run: --ctx: -1 is out of range [0, 2147483647]" "run 'rlx run --help' for its options" run --ctx=-1
expect 2 "rlx run: --decode-ahead: 0 is out of range [1, 64]" "run 'rlx run --help' for its options" run --decode-ahead=0
expect 2 "rlx run: --decode-ahead: 65 is out of range [1, 64]" "run 'rlx run --help' for its options" run --decode-ahead 65
expect 2 "rlx run: --temp: 'abc' is not a number" "run 'rlx run --help' for its options" run --temp=abc
expect 2 "rlx run: --temp: inf is not a finite number" "run 'rlx run --help' for its options" run --temp=inf
expect 2 "rlx run: --top-k: -1 is out of range [0, 2147483647]" "run 'rlx run --help' for its options" run --top-k=-1
expect 2 "rlx run: --top-p: 2 is out of range [0, 1]" "run 'rlx run --help' for its options" run --top-p=2
expect 2 "rlx run: --min-p: -0.1 is out of range [0, 1]" "run 'rlx run --help' for its options" run --min-p=-0.1
expect 2 "rlx run: --repeat-penalty: 'x' is not a number" "run 'rlx run --help' for its options" run --repeat-penalty=x
expect 2 "rlx run: --repeat-last-n: '1.5' is not a whole number" "run 'rlx run --help' for its options" run --repeat-last-n=1.5
expect 2 "rlx run: --seed: '-1' is not a whole number >= 0" "run 'rlx run --help' for its options" run --seed=-1
expect 2 "rlx run: --seed: 'abc' is not a whole number >= 0" "run 'rlx run --help' for its options" run --seed=abc
expect 2 "rlx run: --tokens: the id list is empty" "run 'rlx run --help' for its options" run --tokens=
expect 2 "rlx run: --tokens: '1,,2': item 2 is empty, expected an id" "run 'rlx run --help' for its options" run --tokens=1,,2
expect 2 "rlx run: --tokens: '1,-3': item 2 '-3' is not a token id (ids are >= 0)" "run 'rlx run --help' for its options" run --tokens=1,-3
expect 2 "rlx run: give -p or -f, not both" "run 'rlx run --help' for its options" run -p a -f b
expect 2 "rlx run: give a text prompt or --tokens, not both" "run 'rlx run --help' for its options" run -p a --tokens 1
expect 2 "rlx run: unknown option '--mod'" "run 'rlx run --help' for its options" run --mod x
expect 2 "rlx run: unknown option '--pro'" "run 'rlx run --help' for its options" run --pro x
expect 2 "rlx run: unknown option '--n'" "run 'rlx run --help' for its options" run --n 5
expect 2 "rlx run: unknown option '--no'" "run 'rlx run --help' for its options" run --no x
expect 2 "rlx run: unknown option '--ignore-eos=1'" "run 'rlx run --help' for its options" run --ignore-eos=1
expect 2 "rlx run: --temp: '' is not a number" "run 'rlx run --help' for its options" run --temp=
expect 2 "rlx run: option -m needs a value" "run 'rlx run --help' for its options" run -m x -m
expect 2 "rlx run: unknown option '--bogus'" "run 'rlx run --help' for its options" run --help --bogus
expect 2 "rlx run: unknown option '--bogus'" "run 'rlx run --help' for its options" run --bogus --help
help run -p -x --help
help run --temp 0.5 --top-k=3 --seed=7 --ignore-eos --special --no-bos -n 3 -t 1 --ctx=64 --decode-ahead=2 --help

help chat --help
expect 2 "rlx chat: unknown option '--bogus'" "run 'rlx chat --help' for its options" chat --bogus
expect 2 "rlx chat: --tokens has no meaning in a chat" "run 'rlx chat --help' for its options" chat --tokens 1
expect 2 "rlx chat: --tokens has no meaning in a chat" "run 'rlx chat --help' for its options" chat --tokens=1,2
expect 2 "rlx chat: option --tokens needs a value" "run 'rlx chat --help' for its options" chat --tokens
expect 2 "rlx chat: --tokens: 'x': item 1 'x' is not a token id (ids are >= 0)" "run 'rlx chat --help' for its options" chat --tokens x
expect 2 "rlx chat: option --system needs a value" "run 'rlx chat --help' for its options" chat --system
expect 2 "rlx chat: option --chat-template needs a value" "run 'rlx chat --help' for its options" chat --chat-template
expect 2 "rlx chat: option --n-predict needs a value" "run 'rlx chat --help' for its options" chat -n
expect 2 "rlx chat: --n-predict: 0 is out of range [1, 2147483647]" "run 'rlx chat --help' for its options" chat -n 0
expect 2 "rlx chat: --n-predict: 'x' is not a whole number" "run 'rlx chat --help' for its options" chat --n-predict=x
help chat --system=hi --chat-template=x -n 3 --help
expect 2 "rlx chat: option --threads needs a value" "run 'rlx chat --help' for its options" chat -t
expect 2 "rlx chat: unknown option '-p'" "run 'rlx chat --help' for its options" chat -p x
expect 2 "rlx chat: unknown option 'extra'" "run 'rlx chat --help' for its options" chat extra
expect 2 "rlx chat: unknown option '--'" "run 'rlx chat --help' for its options" chat --
expect 2 "rlx chat: unknown option '--sys'" "run 'rlx chat --help' for its options" chat --sys x

help generate --help
expect 2 "rlx generate: missing -m PATH (a GGUF file or HF model directory)" "run 'rlx generate --help' for its options" generate
expect 2 "rlx generate: unknown option '--bogus'" "run 'rlx generate --help' for its options" generate --bogus
expect 2 "rlx generate: option -n needs a value" "run 'rlx generate --help' for its options" generate -n
expect 2 "rlx generate: option --n-predict needs a value" "run 'rlx generate --help' for its options" generate --n-predict
expect 2 "rlx generate: -n: 0 is out of range [1, 2147483647]" "run 'rlx generate --help' for its options" generate -n 0
expect 2 "rlx generate: --n-predict: 0 is out of range [1, 2147483647]" "run 'rlx generate --help' for its options" generate --n-predict=0
expect 2 "rlx generate: missing --tokens IDS (comma-separated token ids) or --tokens-file FILE" "run 'rlx generate --help' for its options" generate -m x
expect 2 "rlx generate: missing -n N (how many tokens to generate)" "run 'rlx generate --help' for its options" generate -m x --tokens 1
expect 2 "rlx generate: missing -n N (how many tokens to generate)" "run 'rlx generate --help' for its options" generate --tokens=1,2 -m x
expect 2 "rlx generate: unknown option '--no-cache=1'" "run 'rlx generate --help' for its options" generate -m x --tokens 1 -n 1 --no-cache=1
help generate --no-cache --no-buckets --no-prefill-cache --ids --help
expect 2 "rlx generate: unknown option '--ids=1'" "run 'rlx generate --help' for its options" generate --ids=1
expect 2 "rlx generate: unknown option 'extra'" "run 'rlx generate --help' for its options" generate extra
expect 2 "rlx generate: unknown option '--'" "run 'rlx generate --help' for its options" generate --
expect 2 "rlx generate: option --threads needs a value" "run 'rlx generate --help' for its options" generate -t
expect 2 "rlx generate: --threads: 'abc' is not a whole number" "run 'rlx generate --help' for its options" generate --threads=abc
expect 2 "rlx generate: --temp: 2e6 is out of range [0, 1e+06]" "run 'rlx generate --help' for its options" generate --temp=2e6
expect 2 "rlx generate: unknown option '--no-c'" "run 'rlx generate --help' for its options" generate --no-c
expect 2 "rlx generate: option --decode-ahead needs a value" "run 'rlx generate --help' for its options" generate --decode-ahead

help logits --help
expect 2 "rlx logits: missing -m PATH (a GGUF file or HF model directory)" "run 'rlx logits --help' for its options" logits
expect 2 "rlx logits: unknown option '--bogus'" "run 'rlx logits --help' for its options" logits --bogus
expect 2 "rlx logits: option -o needs a value" "run 'rlx logits --help' for its options" logits -o
expect 2 "rlx logits: option --output needs a value" "run 'rlx logits --help' for its options" logits --output
expect 2 "rlx logits: missing -o OUT.f32 (where to write the logits)" "run 'rlx logits --help' for its options" logits -m x --tokens 1
expect 2 "rlx logits: unknown option '--all=1'" "run 'rlx logits --help' for its options" logits --all=1
help logits --all --help
expect 2 "rlx logits: --threads: 5000 is out of range [0, 1024]" "run 'rlx logits --help' for its options" logits -t 5000
expect 2 "rlx logits: unknown option '--out'" "run 'rlx logits --help' for its options" logits --out x
expect 2 "rlx logits: unknown option 'extra'" "run 'rlx logits --help' for its options" logits extra
expect 2 "rlx logits: unknown option '--'" "run 'rlx logits --help' for its options" logits --
expect 2 "rlx logits: unknown option '--temp'" "run 'rlx logits --help' for its options" logits --temp 1

help tokenize --help
expect 2 "rlx tokenize: missing -m PATH (the model or tokenizer)" "run 'rlx tokenize --help' for its options" tokenize
expect 2 "rlx tokenize: unknown option or extra argument '--bogus'" "run 'rlx tokenize --help' for its options" tokenize --bogus
expect 2 "rlx tokenize: option -m needs a value" "run 'rlx tokenize --help' for its options" tokenize -m
expect 2 "rlx tokenize: option --model needs a value" "run 'rlx tokenize --help' for its options" tokenize --model
expect 2 "rlx tokenize: option -p needs a value" "run 'rlx tokenize --help' for its options" tokenize -p
expect 2 "rlx tokenize: option --prompt needs a value" "run 'rlx tokenize --help' for its options" tokenize --prompt
expect 2 "rlx tokenize: option -f needs a value" "run 'rlx tokenize --help' for its options" tokenize -f
expect 2 "rlx tokenize: option --file needs a value" "run 'rlx tokenize --help' for its options" tokenize --file
expect 2 "rlx tokenize: give the text with exactly one of -p TEXT or -f FILE" "run 'rlx tokenize --help' for its options" tokenize -m x
expect 2 "rlx tokenize: give the text with exactly one of -p TEXT or -f FILE" "run 'rlx tokenize --help' for its options" tokenize -m x -p a -f b
expect 2 "rlx tokenize: unknown option or extra argument 'extra'" "run 'rlx tokenize --help' for its options" tokenize -m x extra
expect 2 "rlx tokenize: unknown option or extra argument '--'" "run 'rlx tokenize --help' for its options" tokenize --
expect 2 "rlx tokenize: unknown option or extra argument '-'" "run 'rlx tokenize --help' for its options" tokenize -
expect 2 "rlx tokenize: unknown option or extra argument '--ids=1'" "run 'rlx tokenize --help' for its options" tokenize --ids=1
help tokenize --no-bos --special --ids --help
expect 2 "rlx tokenize: unknown option or extra argument '-t'" "run 'rlx tokenize --help' for its options" tokenize -t 1
expect 2 "rlx tokenize: unknown option or extra argument '--mod'" "run 'rlx tokenize --help' for its options" tokenize --mod x
expect_out "[1, 281, 306, 414]" tokenize --model="$MODEL" --prompt=hello --ids
expect_out "[1, 281, 306, 414]" tokenize -m "$MODEL" --ids -p hello
expect_out "     1 -> '<s>'" tokenize -m "$MODEL" -f -
expect 1 "rlx tokenize: cannot open '/nonexistent': No such file or directory" "" tokenize -m "$MODEL" --file=/nonexistent

help detokenize --help
expect 2 "rlx detokenize: missing -m PATH (the model or tokenizer)" "run 'rlx detokenize --help' for its options" detokenize
expect 2 "rlx detokenize: unknown option or extra argument '--bogus'" "run 'rlx detokenize --help' for its options" detokenize --bogus
expect 2 "rlx detokenize: option -m needs a value" "run 'rlx detokenize --help' for its options" detokenize -m
expect 2 "rlx detokenize: missing the token ids, e.g. 1,403,407" "run 'rlx detokenize --help' for its options" detokenize -m x
expect 2 "rlx detokenize: unknown option or extra argument '3'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" 1,2 3
expect 2 "rlx detokenize: unknown option or extra argument '-'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" -
expect 2 "rlx detokenize: unknown option or extra argument '--'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" --
expect 2 "rlx detokenize: unknown option or extra argument '-p'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" -p x 1
expect 2 "rlx detokenize: unknown option or extra argument '--ids'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" --ids 1
expect 2 "rlx detokenize: unknown option or extra argument '--no-bos'" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" --no-bos 1
expect 2 "rlx detokenize: IDS: '1,,2': item 2 is empty, expected an id" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" 1,,2
expect 2 "rlx detokenize: IDS: 'abc': item 1 'abc' is not a token id (ids are >= 0)" "run 'rlx detokenize --help' for its options" detokenize -m "$MODEL" abc
expect_out "do lo" detokenize --model="$MODEL" 400,401
expect_out "<s> do" detokenize -m "$MODEL" --special 1,400
expect_out "do" detokenize -m "$MODEL" 400 --special
expect 2 "rlx detokenize: unknown option or extra argument '--special=1'" "run 'rlx detokenize --help' for its options" detokenize --special=1

expect 2 "rlx inspect: missing PATH" "" inspect
help inspect --help
help inspect -h
expect 2 "rlx inspect: unknown option '--bogus'" "" inspect --bogus
expect 2 "rlx inspect: unknown option '-'" "" inspect -
expect 2 "rlx inspect: unknown option '--'" "" inspect --
expect 2 "rlx inspect: more than one PATH ('a' and 'b')" "" inspect a b
expect 2 "rlx inspect: unknown option '--json=1'" "" inspect --json=1
expect 2 "rlx inspect: unknown option '--js'" "" inspect --js "$MODEL"
expect 1 "rlx inspect: /nonexistent: No such file or directory" "" inspect /nonexistent
expect 2 "rlx inspect: unknown option '-x'" "" inspect -x --help
help inspect --help -x
expect 2 "rlx inspect: unknown option '--bogus'" "" inspect "$MODEL" --json --bogus

help devices --help
help devices -h
expect 2 "rlx devices: unknown option '--bogus'" "" devices --bogus
expect 2 "rlx devices: unknown option 'extra'" "" devices extra
expect 2 "rlx devices: unknown option '--'" "" devices --
expect 2 "rlx devices: unknown option '--help=1'" "" devices --help=1

help quantize --help
expect 2 "rlx quantize: missing IN.gguf (expected IN.gguf OUT.gguf TYPE)" "run 'rlx quantize --help' for its options" quantize
expect 2 "rlx quantize: missing OUT.gguf (expected IN.gguf OUT.gguf TYPE)" "run 'rlx quantize --help' for its options" quantize a
expect 2 "rlx quantize: missing TYPE (expected IN.gguf OUT.gguf TYPE)" "run 'rlx quantize --help' for its options" quantize a b
expect 2 "rlx quantize: unknown TYPE 'Q9' (valid: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, F16, BF16, F32)" "run 'rlx quantize --help' for its options" quantize a b Q9
expect 2 "rlx quantize: unexpected argument 'd' (expected IN.gguf OUT.gguf TYPE)" "run 'rlx quantize --help' for its options" quantize a b c d
expect 2 "rlx quantize: unknown option '--bogus'" "run 'rlx quantize --help' for its options" quantize --bogus
expect 2 "rlx quantize: option --threads needs a value" "run 'rlx quantize --help' for its options" quantize -t
expect 2 "rlx quantize: option --threads needs a value" "run 'rlx quantize --help' for its options" quantize --threads
expect 2 "rlx quantize: --threads: 'x' is not a whole number" "run 'rlx quantize --help' for its options" quantize -t x
expect 2 "rlx quantize: --threads: 2000 is out of range [0, 1024]" "run 'rlx quantize --help' for its options" quantize --threads=2000
expect 2 "rlx quantize: unknown option '--'" "run 'rlx quantize --help' for its options" quantize --
help quantize - b Q8_0 --help
expect 2 "rlx quantize: unknown option '--thr'" "run 'rlx quantize --help' for its options" quantize a b Q8_0 --thr 2
expect 2 "rlx quantize: unknown option '-m'" "run 'rlx quantize --help' for its options" quantize -m x

help synth --help
expect 2 "rlx synth: missing --like NAME" "run 'rlx synth --help' for its options" synth
expect 2 "rlx synth: unknown option '--bogus'" "run 'rlx synth --help' for its options" synth --bogus
expect 2 "rlx synth: option --like needs a value" "run 'rlx synth --help' for its options" synth --like
expect 2 "rlx synth: unknown --like 'x' (known: qwen3-0.6b, qwen3-4b, qwen3-8b, llama3.2-1b, llama3.2-3b, llama3.1-8b, qwen3.5-0.8b, qwen3.5-9b, qwen3.5-35b-a3b)" "run 'rlx synth --help' for its options" synth --like x
expect 2 "rlx synth: missing -o FILE.gguf" "run 'rlx synth --help' for its options" synth --like=qwen3-0.6b
expect 2 "rlx synth: option --output needs a value" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o
expect 2 "rlx synth: option --output needs a value" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b --output
expect 2 "rlx synth: unknown --type 'Q9' (see rlx quantize --help)" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o x --type Q9
expect 2 "rlx synth: unknown --type 'Q9' (see rlx quantize --help)" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o x --type=Q9
expect 2 "rlx synth: option --seed needs a value" "run 'rlx synth --help' for its options" synth --seed
expect 2 "rlx synth: --seed: '-1' is not a whole number >= 0" "run 'rlx synth --help' for its options" synth --seed=-1
expect 2 "rlx synth: option --threads needs a value" "run 'rlx synth --help' for its options" synth -t
expect 2 "rlx synth: --threads: 5000 is out of range [0, 1024]" "run 'rlx synth --help' for its options" synth --threads 5000
expect 2 "rlx synth: option --vocab needs a value" "run 'rlx synth --help' for its options" synth --vocab
expect 2 "rlx synth: option --chat-template needs a value" "run 'rlx synth --help' for its options" synth --chat-template
expect 2 "rlx synth: option --layers needs a value" "run 'rlx synth --help' for its options" synth --layers
expect 2 "rlx synth: --layers: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --layers 0
expect 2 "rlx synth: --layers: 'x' is not a whole number" "run 'rlx synth --help' for its options" synth --layers=x
expect 2 "rlx synth: --hidden: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --hidden=0
expect 2 "rlx synth: --ffn: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --ffn=0
expect 2 "rlx synth: --heads: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --heads=0
expect 2 "rlx synth: --kv-heads: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --kv-heads=0
expect 2 "rlx synth: --head-dim: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --head-dim=0
expect 2 "rlx synth: --vocab-size: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --vocab-size=0
expect 2 "rlx synth: --ctx: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth --ctx=0
expect 2 "rlx synth: --heads 3 is not a multiple of --kv-heads 2" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o x --heads 3 --kv-heads 2
expect 2 "rlx synth: --head-dim 3 is odd (RoPE rotates pairs)" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o x --head-dim 3
expect 2 "rlx synth: --vocab-size 3 is below 4" "run 'rlx synth --help' for its options" synth --like qwen3-0.6b -o x --vocab-size 3
expect 2 "rlx synth: unknown option '--vocab-s'" "run 'rlx synth --help' for its options" synth --vocab-s 3
help synth --vocab x --help
expect 2 "rlx synth: unknown option 'extra'" "run 'rlx synth --help' for its options" synth extra
expect 2 "rlx synth: unknown option '--'" "run 'rlx synth --help' for its options" synth --

help bench --help
expect 2 "rlx bench: missing -m PATH (a GGUF file or HF model directory) (see rlx bench --help)" "" bench
expect 2 "rlx bench: unknown option '--bogus' (see rlx bench --help)" "" bench --bogus
expect 2 "rlx bench: option -m needs a value (see rlx bench --help)" "" bench -m
expect 2 "rlx bench: option -p needs a value (see rlx bench --help)" "" bench -p
expect 2 "rlx bench: option --n-prompt needs a value (see rlx bench --help)" "" bench --n-prompt
expect 2 "rlx bench: option -n needs a value (see rlx bench --help)" "" bench -n
expect 2 "rlx bench: option --n-gen needs a value (see rlx bench --help)" "" bench --n-gen
expect 2 "rlx bench: option -r needs a value (see rlx bench --help)" "" bench -r
expect 2 "rlx bench: option --repetitions needs a value (see rlx bench --help)" "" bench --repetitions
expect 2 "rlx bench: option -o needs a value (see rlx bench --help)" "" bench -o
expect 2 "rlx bench: option --output needs a value (see rlx bench --help)" "" bench --output
expect 2 "rlx bench: -p: 'x' is not a whole number (see rlx bench --help)" "" bench -p x
expect 2 "rlx bench: --n-prompt: '1,,2': item 2 is empty, expected a whole number (see rlx bench --help)" "" bench --n-prompt=1,,2
expect 2 "rlx bench: --n-gen: 'x' is not a whole number (see rlx bench --help)" "" bench --n-gen=1,x
expect 2 "rlx bench: -p: 99999999 is out of range [0, 1048576] (see rlx bench --help)" "" bench -p 99999999
expect 2 "rlx bench: -r: 0 is out of range [1, 1000] (see rlx bench --help)" "" bench -r 0
expect 2 "rlx bench: --repetitions: 1001 is out of range [1, 1000] (see rlx bench --help)" "" bench --repetitions=1001
expect 2 "rlx bench: -o: 'xml' is not a format (expected md or json) (see rlx bench --help)" "" bench -o xml
expect 2 "rlx bench: --output: 'xml' is not a format (expected md or json) (see rlx bench --help)" "" bench --output=xml
expect 2 "rlx bench: unknown option '--tokens' (see rlx bench --help)" "" bench --tokens 1
expect 2 "rlx bench: unknown option '--tokens=1' (see rlx bench --help)" "" bench --tokens=1
expect 2 "rlx bench: --backend: 'foo' is not a backend (expected cpu or vulkan) (see rlx bench --help)" "" bench -m x --backend foo
expect 2 "rlx bench: nothing to run: every -p and -n is 0 (see rlx bench --help)" "" bench -m x -p 0 -n 0
expect 2 "rlx bench: 65 tests: at most 64 (see rlx bench --help)" "" bench -m x -p 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33 -n 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32
expect 2 "rlx bench: -p: '123456789012345678901234567890123': item 1 is too long, expected a whole number (see rlx bench --help)" "" bench -p 123456789012345678901234567890123
expect 2 "rlx bench: unknown option '--bw-remeasure=1' (see rlx bench --help)" "" bench --bw-remeasure=1
expect 2 "rlx bench: option --decode-ahead needs a value (see rlx bench --help)" "" bench --decode-ahead
expect 2 "rlx bench: --decode-ahead: 0 is out of range [1, 64] (see rlx bench --help)" "" bench --decode-ahead=0
expect 2 "rlx bench: option --threads needs a value (see rlx bench --help)" "" bench -t
expect 2 "rlx bench: --ctx: 'x' is not a whole number (see rlx bench --help)" "" bench --ctx=x
expect 2 "rlx bench: unknown option 'extra' (see rlx bench --help)" "" bench extra
expect 2 "rlx bench: unknown option '--' (see rlx bench --help)" "" bench --
expect 2 "rlx bench: unknown option '--rep' (see rlx bench --help)" "" bench --rep 3
help bench -m x --help -o md --bw-remeasure

expect 2 "rlx logits: --ctx: 'abc' is not a whole number" "run 'rlx logits --help' for its options" logits --ctx=abc
expect 2 "rlx logits: --tokens: '1,x': item 2 'x' is not a token id (ids are >= 0)" "run 'rlx logits --help' for its options" logits --tokens=1,x
expect 1 "rlx logits: model '/nonexistent': No such file or directory" "" logits -m /nonexistent --tokens=1 --output="$TMP/x.f32"
expect 2 "rlx logits: option --output needs a value" "run 'rlx logits --help' for its options" logits --all --output

expect 2 "rlx chat: --temp: -1 is out of range [0, 1e+06]" "run 'rlx chat --help' for its options" chat --temp=-1
expect 2 "rlx chat: --seed: 'x' is not a whole number >= 0" "run 'rlx chat --help' for its options" chat --seed=x
expect 2 "rlx chat: --decode-ahead: 0 is out of range [1, 64]" "run 'rlx chat --help' for its options" chat --decode-ahead=0
expect 2 "rlx chat: --ctx: '' is not a whole number" "run 'rlx chat --help' for its options" chat --ctx=

expect 2 "rlx detokenize: missing the token ids, e.g. 1,403,407" "run 'rlx detokenize --help' for its options" detokenize --model=
expect 2 "rlx detokenize: option --model needs a value" "run 'rlx detokenize --help' for its options" detokenize --model

expect_out "     1 -> '<s>'" tokenize --model="$MODEL" --prompt=
expect 1 "rlx tokenize: cannot open '': No such file or directory" "" tokenize -m "$MODEL" --file=

expect 2 "rlx quantize: --threads: 'x' is not a whole number" "run 'rlx quantize --help' for its options" quantize --threads=x
expect 2 "rlx quantize: unknown option '--help=1'" "run 'rlx quantize --help' for its options" quantize a b Q8_0 --help=1

expect 2 "rlx synth: missing --like NAME" "run 'rlx synth --help' for its options" synth --type=
expect 2 "rlx synth: --kv-heads: 'x' is not a whole number" "run 'rlx synth --help' for its options" synth --kv-heads=x

expect 2 "rlx bench: --decode-ahead: 65 is out of range [1, 64] (see rlx bench --help)" "" bench --decode-ahead=65
expect 2 "rlx bench: --threads: 'x' is not a whole number (see rlx bench --help)" "" bench --threads=x
expect 2 "rlx bench: option --device needs a value (see rlx bench --help)" "" bench --device
expect 2 "rlx bench: option --backend needs a value (see rlx bench --help)" "" bench --backend

expect 2 "rlx tokenize: unknown option or extra argument '-xh'" "run 'rlx tokenize --help' for its options" tokenize -xh

# Spellings getopt_long adds: a short option's value attached to it, and short flags run together.
# Each must mean what the separate spelling means.
expect_out "[1, 281, 306, 414]" tokenize -m"$MODEL" --ids -phello
expect_out "[1, 281, 306, 414]" tokenize -m "$MODEL" --ids --prompt hello
expect 2 "rlx run: option --n-predict needs a value" "run 'rlx run --help' for its options" run -hn
expect 2 "rlx generate: -n: '=3' is not a whole number" "run 'rlx generate --help' for its options" generate -n=3
help inspect -hx

# Added with the hardening of run and chat (not from the old parser): a missing -m is the model's
# error, not its tokenizer's, and a missing prompt file says why it cannot be opened (the C
# library's text for ENOENT). --seed keeps the seed line off stderr.
expect 1 "rlx run: model '/nonexistent': No such file or directory" "" run -m /nonexistent --seed 1
expect 1 "rlx chat: model '/nonexistent': No such file or directory" "" chat -m /nonexistent --seed 1
expect 1 "rlx run: cannot open '/nonexistent.txt': No such file or directory" "" run -f /nonexistent.txt --seed 1
# rlx --version: the version of CMakeLists.txt's project(), a commit (or "unknown" outside git),
# and the build type and Vulkan switch of this build's CMakeCache.txt.
want_version=$(sed -n 's/^project(rlx VERSION \([0-9.]*\).*/\1/p' "$RLX_SOURCE_DIR/CMakeLists.txt")
cache=${RLX_BUILD_DIR:-}/CMakeCache.txt
check
run --version
if [ "$rc" -ne 0 ] || ! grep -qE "^rlx $want_version \(commit ([0-9a-f]{4,}|unknown)\)$" "$TMP/out"; then
  fail "rlx --version: exit $rc, expected 'rlx $want_version (commit ...)': $(cat "$TMP/out" "$TMP/err")"
elif [ -f "$cache" ]; then
  bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
  vk=$(sed -n 's/^RLX_VULKAN:BOOL=//p' "$cache" | tr '[:upper:]' '[:lower:]')
  [ "$vk" = on ] || vk=off
  check
  grep -qx "build: $bt, Vulkan $vk" "$TMP/out" || fail "rlx --version: expected 'build: $bt, Vulkan $vk': $(cat "$TMP/out")"
fi

# -c is --ctx (llama.cpp's spelling) wherever --ctx is; errors name it --ctx, except in synth, whose
# --ctx is a config override of its own. The last one proves -c sets the context: the runner's
# error names the 8 tokens given.
expect 2 "rlx run: --ctx: 'x' is not a whole number" "run 'rlx run --help' for its options" run -c x
expect 2 "rlx chat: --ctx: -1 is out of range [0, 2147483647]" "run 'rlx chat --help' for its options" chat -c -1
expect 2 "rlx generate: option --ctx needs a value" "run 'rlx generate --help' for its options" generate -c
expect 2 "rlx logits: --ctx: '=3' is not a whole number" "run 'rlx logits --help' for its options" logits -c=3
expect 2 "rlx bench: --ctx: 'x' is not a whole number (see rlx bench --help)" "" bench -c x
expect 2 "rlx synth: -c: 0 is out of range [1, 2147483647]" "run 'rlx synth --help' for its options" synth -c 0
expect 1 "rlx generate: prompt of 3 tokens + n_new 10 = 13 tokens exceed the context of 8 tokens" "" generate -m "$MODEL" -c 8 --tokens 1,2,3 -n 10
for cmd in run chat generate logits bench synth; do
  check
  "$RLX" $cmd --help | grep -q -- '-c, --ctx N' || fail "rlx $cmd --help does not list -c, --ctx N"
done

# An unknown --backend and a --tokens id outside the model's vocabulary are bad arguments: exit 2 by
# the rule of every other bad argument (the old parser left both to the library, exit 1).
expect 2 "rlx run: --backend: 'foo' is not a backend (expected cpu or vulkan)" "run 'rlx run --help' for its options" run --backend foo
expect 2 "rlx chat: --backend: 'foo' is not a backend (expected cpu or vulkan)" "run 'rlx chat --help' for its options" chat --backend=foo
expect 2 "rlx generate: --backend: '' is not a backend (expected cpu or vulkan)" "run 'rlx generate --help' for its options" generate --backend= -m x --tokens 1 -n 1
expect 2 "rlx logits: --backend: 'gpu' is not a backend (expected cpu or vulkan)" "run 'rlx logits --help' for its options" logits --backend gpu
expect 2 "rlx bench: --backend: 'foo' is not a backend (expected cpu or vulkan) (see rlx bench --help)" "" bench --backend foo
# --kv-type: f16 or f32, checked as it is parsed, on every command that opens a model; f16 on the
# CPU is the library's refusal (exit 1), f32 runs there as the default does
for cmd in run chat generate logits bench; do
  check
  "$RLX" $cmd --help | grep -q -- '--kv-type TYPE' || fail "rlx $cmd --help does not list --kv-type TYPE"
done
expect 2 "rlx run: --kv-type: 'q8' is not a K/V type (expected f16 or f32)" "run 'rlx run --help' for its options" run --kv-type q8
expect 2 "rlx generate: --kv-type: 'F16' is not a K/V type (expected f16 or f32)" "run 'rlx generate --help' for its options" generate --kv-type F16 -m x --tokens 1 -n 1
expect 1 "rlx generate: cpu session: K/V of F16; the CPU reference keeps F32" "" generate -m "$MODEL" --backend cpu --kv-type f16 --tokens 1,2 -n 1
expect 2 "rlx run: --tokens: item 2, id 512, is outside the vocabulary [0, 512) of '$MODEL'" "run 'rlx run --help' for its options" run -m "$MODEL" --tokens 1,512 -n 1 --seed 1
expect 2 "rlx generate: --tokens: item 1, id 99999, is outside the vocabulary [0, 512) of '$MODEL'" "run 'rlx generate --help' for its options" generate -m "$MODEL" --tokens 99999 -n 1
expect 2 "rlx logits: --tokens: item 3, id 512, is outside the vocabulary [0, 512) of '$MODEL'" "run 'rlx logits --help' for its options" logits -m "$MODEL" --tokens 1,2,512 -o "$TMP/x.f32"

summary
