#!/usr/bin/env bash
# One command from a fresh Debian machine: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec scripts/main-job.sh "$@"
