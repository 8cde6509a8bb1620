#!/bin/bash
# What packet capture costs (tests/bench/bench_capture.py): source -> sink over memif with
# the server's capture off, on, and (with --baseline BUILD_DIR) a build from before capture.
#   tests/bench/run_capture.sh [--reps N] [--ws-duration S] [--baseline DIR] [--no-doc]
# Same build, prerequisites, time limit and cleanup as run.sh.
WS_BENCH_PROGRAM=bench_capture.py exec "$(dirname "$0")/run.sh" "$@"
