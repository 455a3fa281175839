#!/usr/bin/env bash
# One command from a fresh Debian machine: install, build, run the main job and the whole test suite,
# then the suite again under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/main-job.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
scripts/sanitize.sh
