#!/bin/bash
# The service benchmarks (tests/bench/bench_services.py): wrk against wirespeed's
# http service and nginx-light, connection rate and round trips stack to stack, stability.
#   tests/bench/run_services.sh [--quick] [--reps N] [--duration S] [--no-doc] [http] [connrate]
#   tests/bench/run_services.sh [--minutes M] [--overload N] [--phase-s S] stability
#                                     (by name only; ~M minutes + 3 phases of S (15) seconds)
# Same build, prerequisites, time limit and cleanup as run.sh.
WS_BENCH_PROGRAM=bench_services.py exec "$(dirname "$0")/run.sh" "$@"
