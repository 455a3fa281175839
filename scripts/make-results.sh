#!/usr/bin/env bash
# Regenerates everything under results/ from the built binary (run scripts/build.sh first):
# collective tables, the lesson's pipeline sweep, the Llama 3 steps, timelines and every plot.
# BIN=path/to/clustersim overrides the binary; SKIP_405B=1 skips the Llama 3 405B step and
# SKIP_SCALING=1 the scaling curve (results/scaling.md, about 5 minutes), SKIP_PLAN=1 the planner's
# estimate table (results/plan_estimate.md, about 12 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/clustersim}
py=/usr/bin/python3  # Debian's, which has python3-matplotlib (scripts/install-deps.sh)
plots=scripts/plots
start=$SECONDS

# --- collectives on a 64-GPU DGX H100 cluster, nccl-tests style ---------------------------------
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
# The scale check: the 128 data-parallel rings of TP 8 x PP 16 x DP 128, all at once, as fluid
# transfers (the README's example).
"$bin" collective --op all_reduce --algo ring --gpus 16384 --group-size 128 --group-stride 128 \
  --topology llama3-24k --sizes 1G --fluid --json "$out/llama3_dp_rings_16384.json" \
  | sed 's/ *[0-9.]*$//' >"$out/llama3_dp_rings_16384.txt"
"$py" $plots/busbw.py "$out/busbw_64xh100.png" \
  "$out"/all_reduce_{ring,tree,hierarchical}_64xh100.json \
  "$out"/{all_gather,reduce_scatter,all_to_all}_64xh100.json

"$bin" validate >results/validation.md || [ $? -eq 1 ]  # 1: some case misses its published figure
# --- NCCL-level curves, 8 B to 8 GiB, 1 to 64 DGX servers, beside published nccl-tests ----------
# auto: NCCL's own choice (cost model of src/graph/tuning.cc); ring: NCCL_ALGO=Ring.
nccl_sizes=8,64,512,4K,32K,64K,256K,512K,1M,2M,4M,8M,16M,32M,64M,256M,1G,4G,8G
curves=()
for gpu in h100 a100; do
  for servers in 1 2 4 8 16 32 64; do
    gpus=$((servers * 8))
    for op in all_reduce all_gather reduce_scatter; do
      f="$out/nccl_${op}_auto_${gpus}x${gpu}.json"
      "$bin" collective --op "$op" --gpus "$gpus" --topology "dgx-$gpu" --sizes "$nccl_sizes" \
        --json "$f" >/dev/null
      curves+=("$f")
    done
    if [ "$servers" -le 2 ]; then
      f="$out/nccl_all_reduce_ring_${gpus}x${gpu}.json"
      "$bin" collective --op all_reduce --algo ring --gpus "$gpus" --topology "dgx-$gpu" \
        --sizes "$nccl_sizes" --json "$f" >/dev/null
      curves+=("$f")
    fi
  done
done
# NVLS forced on one H100 server (NCCL_ALGO=NVLS), beside Azure's published curve.
f="$out/nccl_all_reduce_nvls_8xh100.json"
"$bin" collective --op all_reduce --algo nvls --gpus 8 --topology dgx-h100 --sizes "$nccl_sizes" \
  --json "$f" >/dev/null
curves+=("$f")
"$py" $plots/nccl_curves.py "$out" "$out/nccl_tests_published.csv" "${curves[@]}"

# --- the lesson's case: p = 4 stages, m = 1..32 microbatches ------------------------------------
# A small model (Llama 3 8B's layer shapes, 16 layers, 4K tokens, a 1K vocabulary so that the
# first and last stages are not heavier than the others), DP 1 and microbatch size 1, so the
# global batch size is m. Interleaved needs virtual stages and m % p == 0: the sweep asks for
# every combination and the invalid ones are skipped.
out=results/pipeline
mkdir -p "$out"
small=(--preset llama3-8b --set model.num_layers=16 --set model.seq_length=4096
       --set model.vocab_size=1024 --set parallel.pp=4 --set parallel.dp=1)
axes=(--vary parallel.schedule=GPIPE,ONE_F_ONE_B,INTERLEAVED,ZB_H1,ZB_H2,ZB_V,DUALPIPE
      --vary parallel.virtual_stages=1,2
      --vary parallel.global_batch_size="$(seq -s, 1 32)")
# Pure law: 4 GPUs, communication free.
"$bin" sweep "${small[@]}" --set parallel.tp=1 --set parallel.zero_stage=0 \
  --set parallel.sequence_parallel=false --vary network=IDEAL "${axes[@]}" \
  --csv "$out/lesson_p4_ideal.csv" --json "$out/lesson_p4_ideal.json" >"$out/lesson_p4_ideal.txt"
# Real network: TP 8 inside each DGX server, so the 4 stages sit on 4 servers and talk over RoCE.
"$bin" sweep "${small[@]}" --set parallel.tp=8 --vary network=CONGESTION_AWARE "${axes[@]}" \
  --csv "$out/lesson_p4_network.csv" --json "$out/lesson_p4_network.json" \
  >"$out/lesson_p4_network.txt"
"$py" $plots/bubbles.py "$out/lesson_p4_ideal.csv" "$out/lesson_p4_network.csv" "$out/lesson_p4"
# Gantt charts: the same small model, 8 microbatches, each schedule, from simulated timelines.
gantt=()
for s in GPIPE ONE_F_ONE_B INTERLEAVED ZB_H1 ZB_V DUALPIPE; do
  v=1
  case "$s" in INTERLEAVED | ZB_V | DUALPIPE) v=2 ;; esac
  "$bin" run "${small[@]}" --set parallel.tp=1 --set parallel.zero_stage=0 \
    --set parallel.sequence_parallel=false --set network=IDEAL --set parallel.global_batch_size=8 \
    --set parallel.schedule=$s --set parallel.virtual_stages=$v \
    --timeline "$out/timeline_p4_m8_$s.json" >/dev/null
  gantt+=("$s (v=$v)=$out/timeline_p4_m8_$s.json")
done
"$py" $plots/gantt.py "$out/gantt_p4_m8.png" "${gantt[@]}"

# The five schedules that keep activations bounded on the llama3-70b preset at PP 8 (TP 8, DP 32,
# 32 microbatches; v = 2 for interleaved, ZB-V and DualPipe), congestion-aware.
"$bin" sweep --preset llama3-70b --set parallel.pp=8 \
  --vary parallel.schedule=ONE_F_ONE_B,INTERLEAVED,ZB_H1,ZB_H2,ZB_V,DUALPIPE \
  --vary parallel.virtual_stages=1,2 --csv "$out/schedules_70b_pp8.csv" \
  >"$out/schedules_70b_pp8.txt"
# ZB-H2 with optimizer post-validation (Qi et al. section 4): its bubble law needs the step
# boundary free of cross-stage synchronisation.
"$bin" run --preset llama3-70b --set parallel.pp=8 --set parallel.schedule=ZB_H2 \
  --set parallel.optimizer_post_validation=true --json "$out/zb_h2_post_validation_70b_pp8.json" \
  | grep -v '^  simulation ' >"$out/zb_h2_post_validation_70b_pp8.txt"

# --- Llama 3 70B on 1,024 H100s: layouts, and the schedules at scale ----------------------------
out=results/llama3
mkdir -p "$out"
layouts=("tp=8 pp=4 dp=32 ONE_F_ONE_B 1" "tp=8 pp=2 dp=64 ONE_F_ONE_B 1"
         "tp=8 pp=8 dp=16 ONE_F_ONE_B 1" "tp=4 pp=8 dp=32 ONE_F_ONE_B 1"
         "tp=8 pp=16 dp=8 ONE_F_ONE_B 1" "tp=8 pp=4 dp=32 INTERLEAVED 5"
         "tp=8 pp=4 dp=32 ZB_H1 1")
reports=()
for l in "${layouts[@]}"; do
  read -r tp pp dp sched v <<<"$l"
  name="llama3_70b_${tp/=/}_${pp/=/}_${dp/=/}_${sched}"
  "$bin" run --preset llama3-70b --set parallel.$tp --set parallel.$pp --set parallel.$dp \
    --set parallel.schedule=$sched --set parallel.virtual_stages=$v --json "$out/$name.json" \
    >"$out/$name.txt"
  reports+=("$out/$name.json")
done
"$py" $plots/breakdown.py "$out/llama3_70b_layouts.png" \
  "Llama 3 70B on 1,024 H100s, 1,024 x 8K tokens per step: where the step goes" "${reports[@]}"
"$bin" sweep --preset llama3-70b --vary parallel.schedule=GPIPE,ONE_F_ONE_B,INTERLEAVED,ZB_H1 \
  --vary parallel.virtual_stages=1,5 --vary parallel.global_batch_size=256,512,1024 \
  --csv "$out/llama3_70b_schedules.csv" --json "$out/llama3_70b_schedules.json" \
  >"$out/llama3_70b_schedules.txt"
"$py" $plots/breakdown.py "$out/llama3_70b_schedules.png" \
  "Llama 3 70B, TP 8 x PP 4 x DP 32 on 1,024 H100s: schedules and microbatches per replica" \
  "$out/llama3_70b_schedules.csv"

# --- Llama 3 405B on 16,384 H100s: one step, broken down per stage ------------------------------
if [ "${SKIP_405B:-0}" != 1 ]; then
  # The default timeline (the first rank of all 16 stages) is ~15 MB; the first and the last
  # stage keep the committed file small.
  "$bin" run --preset llama3-405b --json "$out/llama3_405b.json" \
    --timeline "$out/llama3_405b_timeline.json" --timeline-ranks 0,120 >"$out/llama3_405b.txt"
  "$py" $plots/stages.py "$out/llama3_405b.json" "$out/llama3_405b_stages.png"
fi
# --- variability: what one GPU at 90% speed costs the 16,384-GPU step (about 4 minutes) -------
# A slow GPU unfolds the run, so the reference is the unfolded nominal step. Rank 0 sits on the
# first pipeline stage, rank 64 on a middle one (TP 0, stage 8, replica 0), rank 120 on the
# last (stage 15, with the output layer and the loss).
if [ "${SKIP_405B:-0}" != 1 ]; then
  out=results/variability
  mkdir -p "$out"
  speed=variability.gpu_speed
  runs=("nominal_unfolded --set simulation.fold_tensor_parallel=false --set simulation.fold_data_parallel=false"
        "slow_rank0_0.9 --set $speed.slow_ranks=0 --set $speed.slow_speeds=0.9"
        "slow_rank64_0.9 --set $speed.slow_ranks=64 --set $speed.slow_speeds=0.9"
        "slow_rank120_0.9 --set $speed.slow_ranks=120 --set $speed.slow_speeds=0.9"
        "slow_nic0_0.5 --set variability.links.slow_nic_ranks=0 --set variability.links.slow_nic_factors=0.5"
        "jitter_cv0.05 --set variability.kernel_jitter.cv=0.05")
  for r in "${runs[@]}"; do
    read -r name sets <<<"$r"
    # shellcheck disable=SC2086  # $sets is a list of --set options
    "$bin" run --preset llama3-405b $sets --json "$out/llama3_405b_$name.json" \
      | grep -v '^  simulation ' >"$out/llama3_405b_$name.txt"
  done
fi
# --- mixtures of experts: the three MoE presets, and routing skew / capacity on Mixtral ---------
out=results/moe
mkdir -p "$out"
for preset in mixtral-8x7b qwen3-30b-a3b deepseek-v3; do
  "$bin" run --preset "$preset" --json "$out/$preset.json" | grep -v '^  simulation ' >"$out/$preset.txt"
done
# DualPipe's overlapped pairs switched off: what hiding the all-to-alls is worth.
"$bin" run --preset deepseek-v3 --set parallel.dualpipe_overlap=false \
  --json "$out/deepseek-v3-pairs-in-sequence.json" | grep -v '^  simulation ' \
  >"$out/deepseek-v3-pairs-in-sequence.txt"
"$bin" sweep --preset mixtral-8x7b --set model.moe.routing.kind=SKEWED \
  --vary model.moe.routing.skew=0,0.5,1,1.5 --vary model.moe.capacity_factor=0,1.25 \
  --csv "$out/mixtral_skew_capacity.csv" >"$out/mixtral_skew_capacity.txt"
"$py" scripts/moe_results.py results/moe results/moe.md
# --- what each modelled effect costs on each preset ----------------------------------------------
"$py" scripts/effects_table.py "$bin" results/effects.md
# --- each software stack on one FSDP layout of Llama 3 8B and 70B (about 3 minutes) -------------
"$py" scripts/stacks_table.py "$bin" results/stacks.md
# --- the planner's pre-estimate against the steps it ranks (about 12 minutes) --------------------
if [ "${SKIP_PLAN:-0}" != 1 ]; then
  "$py" scripts/plan_estimate_table.py "$bin" results/plan_estimate.md
fi
# --- wall time, memory and events per second from 64 to 98,304 GPUs (about 5 minutes) ----------
if [ "${SKIP_SCALING:-0}" != 1 ]; then
  "$py" scripts/scaling.py "$bin"
fi

# --- the same simulator through the Python package (build/python, scripts/build.sh) ------------
PYTHONPATH=build/python "$py" results/python_example.py results/python_example.png \
  >results/python_example.txt

echo "results regenerated in $((SECONDS - start)) s"
