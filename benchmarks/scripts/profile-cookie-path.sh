#!/bin/bash
# Profiles the cookie path's server share: a short throughput run of the capacity harness, built with frame
# pointers and line tables, with perf sampling the two server processes during the closed-loop limits rounds
# only (identify and pgbench alternate there; the servers are idle while pgbench runs), folded and drawn as a
# flame graph.
#
# Needs perf (Debian's linux-perf) and inferno (`cargo install inferno`) on PATH.
# Run from the repository root:  benchmarks/scripts/profile-cookie-path.sh OUT.svg [TITLE [FOLDED]]
# FOLDED, when given, keeps the folded stacks (a few MB) for other views of the same samples.
set -euo pipefail

out=${1:?usage: $0 OUT.svg [TITLE]}
title=${2:-"Cookie-path identify: the server processes during the closed-loop rounds"}
folded_out=${3:-}
for tool in perf inferno-collapse-perf inferno-flamegraph; do
    command -v "$tool" > /dev/null || { echo "$0: $tool is not on PATH" >&2; exit 1; }
done

target=${CARGO_TARGET_DIR:-target/profiling}
CARGO_TARGET_DIR=$target CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
    RUSTFLAGS="-C force-frame-pointers=yes" \
    cargo build --release --quiet --manifest-path benchmarks/Cargo.toml --bin janitor-capacity

scratch=$(mktemp -d)
run=""
perf_pid=""
cleanup() {
    [ -n "$perf_pid" ] && kill -INT "$perf_pid" 2> /dev/null || true
    [ -n "$run" ] && kill "$run" 2> /dev/null || true
    wait 2> /dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

JANITOR_BENCHMARK_RATES=500 JANITOR_BENCHMARK_RATE_SECONDS=30 JANITOR_BENCHMARK_OUT="$scratch/report" \
    "$target/release/janitor-capacity" throughput > "$scratch/run.log" 2>&1 &
run=$!
# The limits rounds follow the burst; the servers are this run's only `serve` processes.
until grep -q "burst of" "$scratch/run.log"; do
    kill -0 "$run" 2> /dev/null || { cat "$scratch/run.log" >&2; exit 1; }
    sleep 0.1
done
servers=$(pgrep -P "$run" -f "janitor-capacity serve" | paste -sd, -)
perf record -F 499 -g -p "$servers" -o "$scratch/perf.data" > "$scratch/perf.log" 2>&1 &
perf_pid=$!
until grep -q "limits round 3" "$scratch/run.log"; do
    kill -0 "$run" 2> /dev/null || { cat "$scratch/run.log" >&2; exit 1; }
    sleep 0.1
done
kill -INT "$perf_pid"
wait "$perf_pid" || true
perf_pid=""
wait "$run"
run=""
grep "limits round" "$scratch/run.log"
perf script -i "$scratch/perf.data" 2> /dev/null | inferno-collapse-perf > "$scratch/folded"
inferno-flamegraph --title "$title" --width 1600 < "$scratch/folded" > "$out"
if [ -n "$folded_out" ]; then cp "$scratch/folded" "$folded_out"; fi
echo "wrote $out"

