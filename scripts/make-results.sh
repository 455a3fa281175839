#!/usr/bin/env bash
# Regenerates everything under results/ from the built binary (run scripts/build.sh first).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/clustersim
out=results/collectives
mkdir -p "$out"
sizes=1K,4K,16K,64K,256K,1M,4M,16M,64M,256M,1G
for algo in ring tree hierarchical; do
  "$bin" collective --op all_reduce --algo "$algo" --gpus 64 --topology dgx-h100 --sizes "$sizes" \
    --json "$out/all_reduce_${algo}_64xh100.json" >"$out/all_reduce_${algo}_64xh100.txt"
done
for op in all_gather reduce_scatter all_to_all; do
  "$bin" collective --op "$op" --gpus 64 --topology dgx-h100 --sizes "$sizes" \
    --json "$out/${op}_64xh100.json" >"$out/${op}_64xh100.txt"
done
# The scale check: the 128 data-parallel rings of TP 8 x PP 16 x DP 128, all at once.
"$bin" collective --op all_reduce --algo ring --gpus 16384 --group-size 128 --group-stride 128 \
  --topology llama3-24k --sizes 1G --json "$out/llama3_dp_rings_16384.json" \
  | sed 's/ *[0-9.]*$//' >"$out/llama3_dp_rings_16384.txt"
