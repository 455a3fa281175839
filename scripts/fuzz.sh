#!/usr/bin/env bash
# Builds the trace-reader fuzz targets with clang + libFuzzer in build-fuzz and runs each for a
# bounded time. Usage: scripts/fuzz.sh [SECONDS per target, default 60]
# Findings (crash-*, timeout-*, leak-*) land in build-fuzz/findings/<target>/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="$root/build-fuzz"
CXX=clang++ CC=clang cmake -S "$root" -B "$build" -DCLUSTERSIM_FUZZ=ON -DCLUSTERSIM_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
make -C "$build" -j"$(nproc)" trace_reader_fuzz chakra_reader_fuzz
shared="$root/../shared/chakra-traces"
for target in trace_reader_fuzz chakra_reader_fuzz; do
  corpus="$build/corpus/$target"
  findings="$build/findings/$target"
  mkdir -p "$corpus" "$findings"
  # Seeds: real Chakra files and a small trace of ours, when at hand.
  if [[ $target == chakra_reader_fuzz && -d $shared ]]; then
    find "$shared" -name '*.et' -size -4k -exec cp -n {} "$corpus/" \; 2>/dev/null || true
  fi
  for seed in "$root"/tests/trace/regressions/*; do [[ -f $seed ]] && cp -n "$seed" "$corpus/"; done
  echo "== $target for ${seconds}s"
  "$build/$target" "$corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 2>&1 | tail -n 12
done
