#!/usr/bin/env bash
# Configures and builds clustersim (Release) into build/ with as many jobs as cores, then lets
# Debian's python3 import the clustersim package built in build/python (scripts/python-path.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
scripts/python-path.sh
