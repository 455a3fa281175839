#!/usr/bin/env bash
# Writes every command's output over every preset into one folder, so that a refactor can be
# checked byte for byte: scripts/golden_outputs.sh BIN DIR, once before and once after, then
# diff -r the two folders. Wall time and peak memory (the only figures that vary run to run)
# are blanked. Takes about three minutes on one core.
set -euo pipefail
BIN=$(realpath "${1:?usage: golden_outputs.sh BIN DIR}")
OUT=${2:?usage: golden_outputs.sh BIN DIR}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$OUT"

# Blanks the machine-dependent figures, in JSON ("wall_time_s": 1.2) and in text tables.
steady() {
  sed -E -e 's/("(wall_time_s|peak_rss_mb|wall_s|elapsed_s|seconds)": )[-0-9.e+]+/\1X/g' \
         -e 's/events, [0-9.]+ s(, [0-9]+ MB)?/events, X s/' \
         -e 's/skipped\) in [0-9.]+ s/skipped) in X s/' \
         -e 's/(built|written) in [0-9.]+ s/\1 in X s/g' \
         -e 's/events in all runs, [0-9.]+ s wall/events in all runs, X s wall/' \
         -e 's/(congestion-aware|analytical ranking only|simulated), [0-9.]+ s$/\1, X s/' \
         -e 's/^( +[0-9.]+[KMGT]? +[a-z_]+ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+) +[0-9.]+$/\1 X/'
}
# Runs one command, keeping its stdout, its stderr and its exit status.
record() {
  local name=$1
  shift
  set +e
  "$@" >"$name.out" 2>"$name.err"
  echo "exit $?" >>"$name.out"
  set -e
  steady <"$name.out" >"$name.tmp" && mv "$name.tmp" "$name.out"
  steady <"$name.err" >"$name.tmp" && mv "$name.tmp" "$name.err"
}

presets=$("$BIN" presets | awk '/^workloads/{w=1;next} /^[a-z]/{w=0} w{print $1}')
for p in $presets; do
  record "run-$p" "$BIN" run --preset "$p" --json "run-$p.json" --timeline "timeline-$p.json"
  steady <"run-$p.json" >"run-$p.tmp" && mv "run-$p.tmp" "run-$p.json"
  record "memory-$p" "$BIN" memory --preset "$p" --json "memory-$p.json"
  record "generate-$p" "$BIN" generate --preset "$p" -o "trace-$p.pb"
done
for p in llama3-8b mixtral-8x7b llama3-70b; do
  record "replay-$p" "$BIN" replay "trace-$p.pb" --json "replay-$p.json"
  steady <"replay-$p.json" >"replay-$p.tmp" && mv "replay-$p.tmp" "replay-$p.json"
  record "convert-$p" "$BIN" convert "trace-$p.pb" --to-chakra "chakra-$p"
done
record replay-chakra "$BIN" replay --chakra chakra-llama3-8b \
  --comm-groups chakra-llama3-8b.comm_groups.json
record multi-job "$BIN" run --preset llama3-8b --preset llama3.2-1b --placement spread
record sweep "$BIN" sweep --preset llama3-70b --jobs 1 \
  --vary parallel.schedule=GPIPE,ONE_F_ONE_B,ZB_H1,ZB_H2 \
  --vary parallel.global_batch_size=256,512 --csv sweep.csv --json sweep.json
record sweep-stacks "$BIN" sweep --preset llama3-8b --jobs 1 \
  --vary software_stack=MEGATRON_TE,PYTORCH_FSDP,DEEPSPEED_ZERO --set parallel.tp=1 \
  --set parallel.zero_stage=3 --csv sweep-stacks.csv
record plan-8b "$BIN" plan --preset llama3-8b --gpus 64 --jobs 1 --stacks all --json plan-8b.json
record plan-405b "$BIN" plan --preset llama3-405b --gpus 16384 --jobs 1 --json plan-405b.json
record plan-mixtral "$BIN" plan --preset mixtral-8x7b --gpus 64 --jobs 1 --objective cost
record plan-min "$BIN" plan --preset llama3-70b --min-gpus --jobs 1
for op in all_reduce all_gather reduce_scatter all_to_all broadcast send_recv; do
  record "coll-$op" "$BIN" collective --op "$op" --gpus 64 --sizes 1K,1M,64M,1G
done
record coll-fluid "$BIN" collective --op reduce_scatter --gpus 4096 --group-size 128 \
  --group-stride 8 --sizes 160M --fluid
record coll-nvl72 "$BIN" collective --op all_reduce --gpus 72 --topology gb200-nvl72 --sizes 1G
record coll-a100 "$BIN" collective --op all_reduce --gpus 16 --topology dgx-a100 --algo tree \
  --network analytical --sizes 8M,256M
record validate "$BIN" validate --json validate.json
record verify "$BIN" verify
record verify-broken "$BIN" verify --broken
record bad-config "$BIN" run --preset llama3-8b --set parallel.tp=3
cp "$ROOT/README.md" not-a-config.textproto
record bad-file "$BIN" run not-a-config.textproto
rm -f ./*.tmp
# The Python package, when its module is on PYTHONPATH (an absolute path; scripts/python-path.sh).
if /usr/bin/python3 -c "import clustersim" 2>/dev/null; then
  record python /usr/bin/python3 -c 'import clustersim, json
r = clustersim.run(preset="llama3-8b"); r.pop("wall_time_s", None); r.pop("peak_rss_mb", None)
print(json.dumps(r, sort_keys=True))
print(json.dumps(clustersim.memory(preset="llama3-70b"), sort_keys=True))'
fi
