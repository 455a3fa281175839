#!/usr/bin/env bash
# The main job: a ring all-reduce on one 8xH100 server at nccl-tests sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec build/clustersim collective --op all_reduce --algo ring --gpus 8 --topology dgx-h100 \
  --sizes 1K,1M,64M,1G "$@"
