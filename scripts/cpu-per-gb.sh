#!/usr/bin/env bash
# CPU seconds per GB archived by `poller once`, this tree side by side with
# another commit's build in one benchmark run (alternating, same servers):
#   scripts/cpu-per-gb.sh [REV] [go test flags...]
# REV defaults to HEAD, so uncommitted changes are measured against the
# last commit. Prints the benchmark line with cpu-s/GB, baseline-cpu-s/GB
# and cpu-ratio (this / baseline); BENCHTIME sets the iterations (3x).
# BENCH_BASELINE_PROTOCOL=0.8 drains the baseline through the 0.8 protocol
# (builds from before the 0.9 client speak nothing else) and this tree
# through IGGY_TEST_PROTOCOL (0.9 by default). This tree's poller is built
# without Iceberg, as the Lambda's bootstrap is (BENCH_TAGS=none: the full
# build); the baseline is a plain `go build` of REV.
# Needs the test tools (make tools py-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
shift || true
make --no-print-directory tools py-tools >&2
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" "$rev" >/dev/null 2>&1
(cd "$work/src" && go build -o "$work/poller" ./cmd/poller)
echo "baseline: $(git rev-parse --short "$rev") ($work/poller)" >&2
PATH="$PWD/.bin:$PATH" BENCH_BASELINE_POLLER="$work/poller" \
  go test ./cmd/poller -run '^$' -bench PollerOnce -benchtime "${BENCHTIME:-3x}" "$@"
