#!/usr/bin/env bash
# Runs a full scenario, or resumes it, on one pinned commit, so that a run longer than a
# working day (seed000 about 9 h, seed003 about 17 h) can be finished over several
# sittings and machines:
#
#   bench/long-run.sh SCENARIO [COMMIT]
#
# The results go to bench/results/SCENARIO of this checkout (results.json is rewritten
# after every run, so an interrupted run resumes; commit the folder once, when the run is
# complete: bench/results keeps final results only). The commit that
# measures is the one named in that results.json if there is one (a run resumes only on its
# own build, `fogline-bench run --resume`), else COMMIT, else HEAD. It is checked out in a
# worktree beside this repository (FOGLINE_BENCH_TREES, default ../fogline-bench-trees) and
# built there once, with the peers' drivers; `fogline-bench run` runs from that worktree so it
# records the commit. FOGLINE_BENCH_BIN names a fogline-bench binary already built from that
# commit instead, with its `fogline` beside it (their hashes are recorded with the resume
# time). Runs measured before 2026-11-27 were measured by `fogline bench` of that day's
# binary: resume those with FOGLINE_BENCH_LEGACY=1. Other arguments for `fogline-bench run`
# go in FOGLINE_BENCH_ARGS. Each start appends the machine and the runs measured so far to
# bench/results/SCENARIO/sittings.tsv, which `fogline-bench run report` lists. Stop it with
# Ctrl-C or SIGTERM: the peers it started are stopped and the summary is written.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
scenario=${1:?usage: bench/long-run.sh SCENARIO [COMMIT]}
out=$repo/bench/results/$scenario
commit=${2:-HEAD}
if [ -f "$out/results.json" ]; then
  recorded=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["meta"].get("build",{}).get("checkout",""))' "$out/results.json")
  case $recorded in
    "" | *-dirty) echo "long-run: $out/results.json was not measured from a clean commit; move it away to start afresh" >&2; exit 2 ;;
  esac
  commit=$recorded
fi
commit=$(git -C "$repo" rev-parse --verify "$commit^{commit}")
short=$(git -C "$repo" rev-parse --short=12 "$commit")
trees=${FOGLINE_BENCH_TREES:-$(dirname "$repo")/fogline-bench-trees}
tree=$trees/$short
if [ ! -d "$tree" ]; then
  mkdir -p "$trees"
  git -C "$repo" worktree add --detach "$tree" "$commit"
fi
bin=${FOGLINE_BENCH_BIN:-}
if [ -z "$bin" ]; then
  # The `full` build links C libraries (Hyperscan, librdkafka, libzmq): install what is missing.
  "$repo/scripts/apt-install.sh" pkg-config libhyperscan-dev librdkafka-dev libzmq3-dev
  if [ -n "${FOGLINE_BENCH_LEGACY:-}" ]; then
    (cd "$tree" && cargo build --release -p fogline --features full)
    bin=$tree/target/release/fogline
  else
    (cd "$tree" && cargo build --release -p fogline -p fogline-bench --features fogline-bench/full)
    bin=$tree/target/release/fogline-bench
  fi
fi
# The harness was a subcommand of `fogline` before 2026-11-27 (`fogline bench`).
verb=run
[ -n "${FOGLINE_BENCH_LEGACY:-}" ] && verb=bench
# Each sitting's machine, and how many runs were already measured when it began: a run carried
# across machines (kernel builds, CPUs) says which of its runs each one measured.
runs=0
[ -f "$out/results.json" ] && runs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$out/results.json")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
[ -f "$out/sittings.tsv" ] || { mkdir -p "$out"; printf 'started_utc\truns_before\tcommit\tkernel\tcpu\tcores\n' > "$out/sittings.tsv"; }
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$runs" "$short" "$(uname -r)" "$cpu" "$(nproc)" >> "$out/sittings.tsv"
cd "$tree"
# shellcheck disable=SC2086 # FOGLINE_BENCH_ARGS is a list of words
exec "$bin" "$verb" "$scenario" --resume --no-progress --out "$out" --peers-dir "$repo/bench/peers" ${FOGLINE_BENCH_ARGS:-}
