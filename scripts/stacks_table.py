#!/usr/bin/env python3
"""Each software stack's step on the same layout: Llama 3 8B and 70B on 64 H100s of dgx-h100,
TP 1 x DP 64, ZeRO-3, under Megatron-TE, FSDP2 (eager and torch.compile), FSDP1 and DeepSpeed;
then what each part of FSDP2 costs on the 8B (the other two parts switched back to Megatron-TE's),
and DeepSpeed at ZeRO-2 and ZeRO-1 against Megatron-TE at the same stage.

Usage: stacks_table.py BIN OUT.md
"""
import sys
from pathlib import Path

from run_report import run_report

LAYOUT = ["parallel.tp=1", "parallel.pp=1", "parallel.dp=64"]
MODELS = {  # preset: its batch and recompute on this layout
    "llama3-8b": [],  # the preset's 512 sequences of 8K: 8 microbatches per GPU
    "llama3-70b": ["parallel.global_batch_size=128", "parallel.recompute=FULL"],
}
STACKS = [
    ("MEGATRON_TE", []),
    ("PYTORCH_FSDP (pytorch_fsdp2), eager", ["software_stack=PYTORCH_FSDP"]),
    ("PYTORCH_FSDP (pytorch_fsdp2), torch.compile",
     ["software_stack=PYTORCH_FSDP", "torch_compile=true"]),
    ("PYTORCH_FSDP (pytorch_fsdp1), eager",
     ["software_stack=PYTORCH_FSDP", "stack_variant=pytorch_fsdp1"]),
    ("DEEPSPEED_ZERO (deepspeed_zero)", ["software_stack=DEEPSPEED_ZERO"]),
]
PARTS = ["stack_kernels", "stack_attention", "stack_sharding"]


def step(binary, preset, overrides):
    report = run_report(binary, preset, LAYOUT + MODELS[preset] + overrides)
    return report["iteration_time_s"], report["mfu"]


def cell(t, mfu, base):
    change = "" if base is None else f", {100 * (t - base) / base:+.1f}%"
    return f"{t:.3f} s ({100 * mfu:.1f}% MFU{change})"


def main():
    binary, out_path = sys.argv[1], sys.argv[2]
    lines = ["# Software stacks", "",
             "One step of each stack on the same layout: 64 H100s of `dgx-h100` (congestion-aware",
             "network), TP 1 x DP 64, ZeRO-3. Llama 3 8B takes its preset's 512 x 8K batch (8",
             "microbatches per GPU), Llama 3 70B 128 sequences (2 microbatches) with full recompute.",
             "Changes are against Megatron-TE on the same layout.",
             "Regenerate: `scripts/stacks_table.py build/clustersim results/stacks.md`.", "",
             "| stack | " + " | ".join(MODELS) + " |", "|---" * (len(MODELS) + 1) + "|"]
    zero3 = ["parallel.zero_stage=3"]
    base = {m: step(binary, m, zero3)[0] for m in MODELS}
    for name, sets in STACKS:
        cells = [cell(*step(binary, m, zero3 + sets), None if not sets else base[m])
                 for m in MODELS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    lines += ["", "Each part of FSDP2 (eager) alone on llama3-8b: the other two effects switched",
              "back to Megatron-TE's (`--set effects.NAME=false`). With all three off the step is",
              "Megatron-TE's.", "", "| part kept | llama3-8b |", "|---|---|"]
    fsdp = zero3 + ["software_stack=PYTORCH_FSDP"]
    for kept in PARTS + [None]:
        off = [f"effects.{p}=false" for p in PARTS if p != kept]
        lines.append(f"| {kept or '(none)'} | {cell(*step(binary, 'llama3-8b', fsdp + off), base['llama3-8b'])} |")

    lines += ["", "DeepSpeed below ZeRO-3 on llama3-8b (bf16 buckets all-reduced on the compute",
              "stream without `overlap_comm`), against Megatron-TE at the same stage.", "",
              "| ZeRO stage | MEGATRON_TE | DEEPSPEED_ZERO |", "|---|---|---|"]
    for z in (2, 1):
        stage = [f"parallel.zero_stage={z}"]
        meg = step(binary, "llama3-8b", stage)
        ds = step(binary, "llama3-8b", stage + ["software_stack=DEEPSPEED_ZERO"])
        lines.append(f"| {z} | {cell(*meg, None)} | {cell(*ds, meg[0])} |")
    Path(out_path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
