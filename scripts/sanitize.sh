#!/usr/bin/env bash
# Builds the test suite and the fuzz targets with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan (-O1), runs the suite, then each fuzz target for a
# bounded time (scripts/fuzz.sh, FUZZ_SECONDS each, default 15); any memory error, leak,
# undefined behaviour or fuzz finding fails the run. One build serves both: the library carries
# libFuzzer's coverage hooks, which cost the tests little, where a second sanitized build with
# clang would cost minutes. The two tests that start mpirun are left out: OpenMPI and protobuf
# leave allocations at exit inside those processes (LeakSanitizer reports them in libmpi and
# libprotobuf frames, not in ours).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Asan \
  -DCMAKE_CXX_FLAGS_ASAN=-O1 -DCLUSTERSIM_SANITIZE=ON -DCLUSTERSIM_FUZZ=ON -DCLUSTERSIM_BENCH=OFF \
  "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$(nproc)" -E mpirun_matches_single_process)
scripts/fuzz.sh "${FUZZ_SECONDS:-15}" "$PWD/build-asan"
