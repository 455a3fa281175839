#!/usr/bin/env bash
# Configures and builds clustersim (Release) into build/ with as many jobs as cores.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
