#!/usr/bin/env bash
# The main job: one training step of Llama 3 405B (TP 8 x PP 16 x DP 128) on all 16,384 GPUs
# of the Llama 3 cluster, congestion-aware.
set -euo pipefail
cd "$(dirname "$0")/.."
exec build/clustersim run --preset llama3-405b "$@"
