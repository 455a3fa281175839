#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz/*_fuzz.cc) for a bounded time; a crash, leak, timeout or
# out-of-memory fails the run (exit 1) and leaves the input in BUILD/findings/<target>/.
# Usage: scripts/fuzz.sh [SECONDS per target, default 60] [BUILD]
# BUILD: a build folder that already holds the targets (scripts/sanitize.sh passes build-asan);
# without it they are built here with clang + libFuzzer + ASan in build-fuzz.
# FUZZ_SEED: libFuzzer's random seed (default 1, so a bounded run explores the same inputs each
# time it gets as far; 0 draws a new one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${2:-}"
targets=()
for source in "$root"/tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$source" .cc)"); done
if [[ -z $build ]]; then
  build="$root/build-fuzz"
  cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCLUSTERSIM_FUZZ=ON \
    -DCLUSTERSIM_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
fi

# Seeds: the committed regressions (inputs that once failed or cover a path), and for the
# readers real Chakra files from shared/ where they are at hand.
seeds_of() {
  case $1 in
    trace_reader_fuzz | chakra_reader_fuzz)
      echo "$root/tests/trace/regressions"
      [[ $1 == chakra_reader_fuzz ]] && echo "$root/../shared/chakra-traces" ;;
    config_fuzz) echo "$root/workloads" "$root/tests/config/regressions" ;;
    hardware_fuzz) echo "$root/topologies" "$root/tests/fuzz/regressions" ;;
  esac
}

failed=()
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  findings="$build/findings/$target"
  mkdir -p "$corpus" "$findings"
  for dir in $(seeds_of "$target"); do
    [[ -d $dir ]] && find "$dir" -type f -size -8k ! -name '*.md' -exec cp -n {} "$corpus/" \;
  done
  echo "== $target for ${seconds}s ($(find "$corpus" -type f | wc -l) inputs to start from)"
  log="$build/findings/$target.log"
  # -timeout is per input: generous, since a slow shared machine must not report a hang.
  if "$build/$target" "$corpus" -max_total_time="$seconds" -max_len=8192 -timeout=30 \
    -rss_limit_mb=2048 -seed="${FUZZ_SEED:-1}" -artifact_prefix="$findings/" \
    -print_final_stats=1 >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)' "$log" || true
  else
    tail -n 60 "$log"
    echo "FUZZ FINDING in $target: input left in $findings/ (reproduce: $build/$target FILE)"
    ls -l "$findings"
    failed+=("$target")
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz findings in: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no findings"
