#!/bin/bash
# rlx serve under load, disconnects and broken connections (js/load.test.mjs), a full queue
# (js/busy.test.mjs), and SIGTERM with streams in flight (js/drain.test.mjs), on the embedded story
# model. Bounded: a few seconds on 2 cores.
set -uo pipefail
RLX=${1:?usage: server_load.sh RLX}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/server_lib.sh"
trap kill_servers EXIT
need_node
status=0

start_server LOAD --ctx 256 --parallel 16 --queue 64 --deterministic --http-timeout 2
node "$JS/load.test.mjs" --url "$URL_LOAD" --pid "$PID_LOAD" --model stories260K --http-timeout 2 || status=1
stop_server LOAD || status=1

start_server BUSY --ctx 256 --parallel 1 --queue 1
node "$JS/busy.test.mjs" --url "$URL_BUSY" --model stories260K || status=1
stop_server BUSY || status=1

start_server DRAIN --ctx 256 --parallel 8
node "$JS/drain.test.mjs" --url "$URL_DRAIN" --pid "$PID_DRAIN" --model stories260K || status=1
stop_server DRAIN || status=1
exit $status
