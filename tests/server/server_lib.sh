# Shared by the server tests: the openai client installed (npm ci) into the build tree, and
# rlx serve started on a free port and stopped with SIGTERM (which must exit 0: under the
# sanitized build that is also LeakSanitizer's verdict on everything the server allocated).

# need_node: node and npm, and the pinned openai package installed from package-lock.json into
# $JS. Without them: SKIP (exit 77) loudly, or fail under CI=true.
need_node() {
  local src
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/js
  JS=${RLX_BUILD_DIR:-/tmp}/server-js
  skip_or_fail() {
    echo "SKIP: $1 -- the server's client tests did not run" >&2
    [ "${CI:-}" = true ] && { echo "FAIL: under CI=true this is a failure" >&2; exit 1; }
    exit 77
  }
  command -v node >/dev/null || skip_or_fail "node not found (Debian: apt-get install nodejs npm)"
  command -v npm >/dev/null || skip_or_fail "npm not found"
  mkdir -p "$JS"
  cp "$src"/*.mjs "$JS"/
  # npm ci again only when the lock file changed; a lock held by another test waits
  (
    flock 9
    if ! cmp -s "$src/package-lock.json" "$JS/package-lock.json" || [ ! -d "$JS/node_modules/openai" ]; then
      cp "$src/package.json" "$src/package-lock.json" "$JS"/
      (cd "$JS" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) || { cat "$JS/npm.log" >&2; exit 3; }
    fi
  ) 9>"$JS/.lock" || skip_or_fail "npm ci failed (no access to the npm registry?)"
}

# start_server NAME ARGS...: rlx serve on a free port; sets URL_<NAME> and PID_<NAME>.
start_server() {
  local name=$1 out
  shift
  out=$(mktemp)
  "$RLX" serve --port 0 --backend cpu "$@" >"$out" 2>"$out.err" &
  local pid=$!
  for _ in $(seq 1 300); do
    grep -q "listening on" "$out" && break
    kill -0 $pid 2>/dev/null || { echo "FAIL: rlx serve $* exited:"; cat "$out.err"; exit 1; }
    sleep 0.1
  done
  local url
  url=$(sed -n 's/.*listening on //p' "$out")
  [ -n "$url" ] || { echo "FAIL: rlx serve $* printed no URL in 30 s"; cat "$out.err"; kill $pid; exit 1; }
  eval "URL_$name=$url PID_$name=$pid ERR_$name=$out.err"
  SERVERS="${SERVERS:-} $pid"
}

# stop_server NAME: SIGTERM; it must exit 0 within the drain bound (10 s) and a margin.
stop_server() {
  local name=$1 pid url err rc=0
  eval "pid=\$PID_$name url=\$URL_$name err=\$ERR_$name"
  kill -TERM "$pid"
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: rlx serve ($name) still running 15 s after SIGTERM"
    kill -KILL "$pid"
    return 1
  fi
  wait "$pid" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: rlx serve ($name) exited $rc after SIGTERM:"
    tail -30 "$err"
    return 1
  fi
  echo "rlx serve ($name) drained and exited 0 after SIGTERM"
}

kill_servers() {
  for p in ${SERVERS:-}; do kill -KILL "$p" 2>/dev/null || true; done
}
