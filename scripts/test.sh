#!/usr/bin/env bash
# One command from a fresh Debian machine: install, build, run the main job and the whole test suite
# (the pytest suite of the Python package among it),
# then the suite again under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/main-job.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
# The README's promise: after the set-up, Debian's python3 imports the package from any folder.
(cd / && /usr/bin/python3 -c "import clustersim")
scripts/sanitize.sh
