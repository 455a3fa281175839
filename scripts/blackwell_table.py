#!/usr/bin/env python3
"""Blackwell against Hopper on the two Blackwell presets: Llama 3 405B (llama3-405b-gb200: TP 4 x
CP 2 x PP 8 x DP 8, FP8, 512 GPUs) and DeepSeek-V3 (deepseek-v3-gb200: EP 64 inside NVL72 racks,
2,048 GPUs), each run on its own cluster and on H100 / B200 clusters of the same size, beside the
H100 / H800 presets they come from. One `clustersim run` per row; step time, MFU, peak memory per
GPU and exposed communication come from its --json report.

Usage: blackwell_table.py BIN OUT.md
"""
import sys
from pathlib import Path

from run_report import run_report

# (row label, preset, --set overrides)
LLAMA = [
    ("llama3-405b preset: 16,384 H100, llama3-24k, BF16", "llama3-405b", []),
    ("same layout as below on 512 H100, dgx-h100", "llama3-405b-gb200",
     ["cluster.gpu=h100", "cluster.topology=dgx-h100"]),
    ("same on 512 B200, dgx-b200", "llama3-405b-gb200",
     ["cluster.gpu=b200", "cluster.topology=dgx-b200"]),
    ("same on 512 B300, dgx-b300", "llama3-405b-gb200",
     ["cluster.gpu=b300", "cluster.topology=dgx-b300"]),
    ("llama3-405b-gb200: 512 GB200, gb200-nvl72", "llama3-405b-gb200", []),
    ("llama3-405b-gb200 in BF16", "llama3-405b-gb200", ["precision=BF16"]),
    ("llama3-405b-gb200 in MXFP8", "llama3-405b-gb200", ["precision=MXFP8"]),
    ("llama3-405b-gb200 in NVFP4", "llama3-405b-gb200", ["precision=NVFP4"]),
    ("same layout on 512 GB300, gb300-nvl72", "llama3-405b-gb200",
     ["cluster.gpu=gb300", "cluster.topology=gb300-nvl72"]),
]
DEEPSEEK = [
    ("deepseek-v3 preset: 2,048 H800, h800-cluster (EP over 8 servers)", "deepseek-v3", []),
    ("same layout on 2,048 H100, dgx-h100 (EP over 8 servers)", "deepseek-v3-gb200",
     ["cluster.gpu=h100", "cluster.topology=dgx-h100", "cluster.gpus_per_node=8"]),
    ("same on 2,048 B200, dgx-b200 (EP over 8 servers)", "deepseek-v3-gb200",
     ["cluster.gpu=b200", "cluster.topology=dgx-b200", "cluster.gpus_per_node=8"]),
    ("deepseek-v3-gb200 on all 72 GPUs of each rack (some EP groups straddle two racks)",
     "deepseek-v3-gb200", ["cluster.gpus_per_node=72"]),
    ("deepseek-v3-gb200: 2,048 GB200, 64 per NVL72 rack (EP 64 inside a rack)",
     "deepseek-v3-gb200", []),
]


def row(label, r):
    exposed = r["exposed_comm_s"]
    parts = ", ".join(f"{k.upper()} {v:.2f}" for k, v in exposed.items() if v >= 0.005)
    per_gpu = r["tokens_per_s"] / r["gpus"]
    return (f"| {label} | {r['gpu']} | {r['gpus']} | {r['precision']} | "
            f"{r['iteration_time_s']:.3f} | {per_gpu:,.0f} | {100 * r['mfu']:.1f}% | "
            f"{r['memory']['peak_gb']:.1f} of {r['memory']['capacity_gb']:.0f}"
            f"{'' if r['memory']['fits'] else ' (does not fit)'} | "
            f"{sum(exposed.values()):.2f} ({parts or 'none'}) |")


def table(binary, title, rows):
    lines = [f"## {title}", "",
             "| run | GPU | GPUs | precision | step s | tokens/s per GPU | MFU | peak GB per GPU "
             "| exposed comm s (by dimension) |", "|---" * 9 + "|"]
    lines += [row(label, run_report(binary, preset, sets)) for label, preset, sets in rows]
    return lines + [""]


def main():
    binary, out_path = sys.argv[1], sys.argv[2]
    lines = ["# Blackwell against Hopper", "",
             "Each row is one `clustersim run --preset P [--set ...]` (congestion-aware network);",
             "MFU is against the row's GPU's dense peak for its precision. The H100 and B200 rows",
             "run the Blackwell preset's layout on 8-GPU servers of the same count, so that the",
             "difference is the hardware (and, for DeepSeek-V3, where the EP groups lie).",
             "Regenerate: `scripts/blackwell_table.py build/clustersim results/blackwell.md`.", ""]
    lines += table(binary, "Llama 3 405B, 16M tokens per step", LLAMA)
    lines += table(binary, "DeepSeek-V3 671B, 15,360 x 4K tokens per step", DEEPSEEK)
    lines += ["In the row with EP groups straddling racks, a group split 56 + 8 over two racks",
              "sends its cross-rack tokens DeepEP-style once per rack, through a member of the",
              "other side on the sender's rail; on the 8-member side the rails wrap, so each of",
              "those 8 GPUs relays for 7 senders (sim/exec/all_to_all_v.cc). DeepEP itself needs",
              "the same GPUs on every node, so the row is the model's reading of a layout to",
              "avoid, which is what cluster.gpus_per_node=64 does.", ""]
    Path(out_path).write_text("\n".join(lines))


if __name__ == "__main__":
    main()
