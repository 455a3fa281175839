#!/usr/bin/env python3
"""Runs `clustersim run` on random layouts of the presets and checks what every report must hold.

Each run takes a preset and 1-4 random `--set` overrides; a refused config (exit 1, naming the
field) is counted, anything else must be a report where:
  - times, bytes and money are finite and not negative (MoE effect lines may be negative: savings);
  - tokens/s x step = tokens per step; TFLOP/s per GPU x GPUs x step = model FLOPs per step;
  - 0 < MFU <= HFU <= 1 and bubbles lie in [0, 1];
  - each stage's lines add up to the step: compute on the compute stream, exposed waits by
    dimension, interference, host dispatch, side-stream hold and the bubble;
  - the kernel groups sum to the stages' mean compute, bytes by op to bytes by dimension, the
    memory parts to the peak, the peak is the largest stage's, and `fits` says peak <= capacity;
  - GPU-hours = days x 24 x GPUs, and the goodput lies in (0, 1];
  - some runs, drawn at random, give the same JSON twice (less wall time and RSS).
Usage: scripts/report_invariants.py [RUNS, default 200] [SEED, default 1] [BINARY]
Exit 1 when any run breaks one; each such run is printed with its command and what it broke.
"""
import json
import math
import random
import subprocess
import sys

CHOICES = {
    "parallel.tp": [1, 2, 4, 8],
    "parallel.pp": [1, 2, 4, 8],
    "parallel.cp": [1, 2],
    "parallel.dp": [1, 2, 8, 16, 64],
    "parallel.ep": [1, 2, 4, 8],
    "parallel.zero_stage": [0, 1, 2, 3],
    "parallel.sequence_parallel": ["true", "false"],
    "parallel.microbatch_size": [1, 2],
    "parallel.schedule": ["GPIPE", "ONE_F_ONE_B", "INTERLEAVED", "ZB_H1", "ZB_H2", "ZB_V",
                          "DUALPIPE_V"],
    "parallel.recompute": ["NONE", "SELECTIVE", "FULL"],
    "parallel.overlap_param_gather": ["true", "false"],
    "parallel.global_batch_size": [64, 256, 1024],
    "software_stack": ["MEGATRON_TE", "PYTORCH_FSDP", "DEEPSPEED_ZERO"],
    "cluster.topology": ["dgx-h100", "dgx-b200", "gb200-nvl72", "alps-gh200", "dgx-a100"],
    "cluster.gpu": ["h100", "h200", "b200", "gb200", "a100"],
    "precision": ["BF16", "FP8"],
    "network": ["ANALYTICAL", "CONGESTION_AWARE"],
}
WAITS = ["tp_comm_s", "cp_wait_s", "pp_wait_s", "dp_wait_s", "ep_comm_s", "edp_wait_s"]


def close(a, b, rel):
    return abs(a - b) <= max(1e-9, rel * max(abs(a), abs(b)))


def leaves(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def broken(d):
    out = []
    for path, v in leaves(d):
        if isinstance(v, float) and not math.isfinite(v):
            out.append(f"{path} is not finite")
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0 \
                and not path.startswith(".moe."):
            out.append(f"{path} = {v} is negative")
    step = d["iteration_time_s"]
    if not step > 0:
        return out + ["the step is not positive"]
    if not close(d["tokens_per_s"] * step, d["tokens_per_step"], 1e-9):
        out.append("tokens/s x step != tokens per step")
    if not close(d["tflops_per_gpu"] * 1e12 * d["gpus"] * step, d["model_flops_per_step"], 1e-9):
        out.append("TFLOP/s per GPU x GPUs x step != model FLOPs per step")
    if not 0 < d["mfu"] <= d["hfu"] * (1 + 1e-9) <= 1 + 1e-9:
        out.append(f"MFU {d['mfu']}, HFU {d['hfu']}")
    for s in d["stages"]:
        lines = (s["compute_s"] - s["side_stream_compute_s"] + s["interference_s"] +
                 s["host_dispatch_s"] + s["side_stream_hold_s"] + s["bubble_fraction"] * step +
                 sum(s[w] for w in WAITS))
        if not close(lines, step, 1e-6):
            out.append(f"stage {s['stage']}'s lines add up to {lines} s, the step is {step} s")
        if not 0 <= s["bubble_fraction"] <= 1:
            out.append(f"stage {s['stage']}'s bubble {s['bubble_fraction']}")
    groups = sum(d["compute_by_kernel_group_s"].values())
    compute = sum(s["compute_s"] for s in d["stages"]) / len(d["stages"])
    if not close(groups, compute, 1e-6):
        out.append(f"kernel groups {groups} s, stages' compute {compute} s")
    by = d["comm_bytes"]
    by_op = sum(v for v in by.values() if isinstance(v, (int, float)))
    if not close(by_op, sum(by["by_dim"].values()), 1e-9):
        out.append("bytes by op != bytes by dimension")
    m = d["memory"]
    parts = sum(m[k] for k in ["weights_gb", "gradients_gb", "optimizer_gb", "activations_gb",
                               "other_gb"])
    if not close(parts, m["peak_gb"], 1e-6):
        out.append(f"memory parts {parts} GB, peak {m['peak_gb']} GB")
    if not close(max(s["memory_gb"] for s in d["stages"]), m["peak_gb"], 1e-6):
        out.append("the peak is not the largest stage's")
    if m["fits"] != (m["peak_gb"] <= m["capacity_gb"]):
        out.append("fits disagrees with peak and capacity")
    c = d["cost"]
    if not close(c["gpu_hours"], c["wall_days"] * 24 * d["gpus"], 1e-6):
        out.append("GPU-hours != days x 24 x GPUs")
    if not 0 < c["goodput"] <= 1:
        out.append(f"goodput {c['goodput']}")
    return out


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    binary = sys.argv[3] if len(sys.argv) > 3 else "build/clustersim"
    # `clustersim presets` lists the workloads first, one indented line each.
    listing = subprocess.run([binary, "presets"], capture_output=True, text=True).stdout
    presets = []
    for line in listing.splitlines()[1:]:
        if not line.startswith("  "):
            break
        presets.append(line.split()[0])
    checked = refused = failed = 0
    for _ in range(runs):
        args = [binary, "run", "--preset", rng.choice(presets)]
        for key in rng.sample(sorted(CHOICES), rng.randint(1, 4)):
            args += ["--set", f"{key}={rng.choice(CHOICES[key])}"]
        args += ["--json", "-"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if r.returncode == 1 and "error:" in r.stderr:
            refused += 1
            continue
        problems = [f"exit {r.returncode}: {r.stderr.strip()[-300:]}"] if r.returncode else []
        if not problems:
            d = json.loads(r.stdout)
            problems = broken(d)
            if rng.random() < 0.15:
                again = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
                for report in (d, again):
                    report.pop("wall_time_s")
                    report.pop("peak_rss_mb")
                if d != again:
                    problems.append("the same command gave another report")
        checked += 1
        if problems:
            failed += 1
            print(" ".join(args[1:-2]))
            for p in problems[:8]:
                print("   ", p)
    print(f"{checked} reports checked, {failed} broke an invariant; {refused} configs refused")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
