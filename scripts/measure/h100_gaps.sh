#!/usr/bin/env bash
# The measurements that bear on validate's H100 gaps, as one run of about four minutes on one
# H100 (a lent device: kind nvidia-h100-x1, command `bash scripts/measure/h100_gaps.sh $OUT`):
#   clocks, bursts  gemm-h100-bf16-10240 and gemm-h100-tf32-4096: how long the board holds its
#                   boost clock from idle, the clock and rate it settles at under the power cap
#   interference    interference-h100-gemm-allgather: a GEMM beside SMs another kernel holds
#   mix             the clock a training step's kernel mix sustains (the h100 profile's rate)
# Writes OUT/gpu_measurements.json, OUT/clock_trace.csv, OUT/mix.json and OUT/gpu.csv.
# Usage: scripts/measure/h100_gaps.sh OUT
set -euo pipefail
out="${1:?usage: h100_gaps.sh OUT}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
for module in torch pynvml cupy; do
  python3 -c "import $module" 2>/dev/null || {
    echo "h100_gaps.sh: python module '$module' is missing (measure_gpu.py needs it)" >&2
    exit 1
  }
done
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv | tee "$out/gpu.csv"
grep -q "H100" "$out/gpu.csv" || echo "h100_gaps.sh: not an H100; the figures are this GPU's" >&2
cd "$here"
python3 measure_gpu.py "$out" clocks bursts interference
python3 measure_mix.py "$out"
