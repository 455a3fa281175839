#!/usr/bin/env python3
"""What each modelled effect costs: every preset's step time with all effects on, and with each
one switched off in turn. The effects are read from proto/config.proto's EffectsConfig, so a new
effect appears here without touching this script.

Usage: effects_table.py BIN OUT.md [PRESET ...]   (default: every preset; deepseek-v3's step takes
about 10 s to simulate, so the table takes about 8 minutes)
"""
import re
import sys
from pathlib import Path

from run_report import run_report

ROOT = Path(__file__).resolve().parent.parent


def effect_fields():
    text = (ROOT / "proto/config.proto").read_text()
    body = re.search(r"message EffectsConfig \{(.*?)\n\}", text, re.S).group(1)
    return re.findall(r"optional bool (\w+) = \d+", body)


def step_time(binary, preset, overrides):
    report = run_report(binary, preset, overrides)
    return report["iteration_time_s"], report["mfu"], report["memory"]["peak_gb"]


def main():
    binary, out_path, presets = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not presets:
        presets = ["llama3.2-1b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
                   "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"]
    fields = effect_fields()
    lines = ["# What each effect costs", "",
             "Step time (s) of each preset with every effect on (MFU and peak memory per GPU in",
             "brackets), then with one effect switched off (`--set effects.NAME=false`) and its",
             "change against all-on (and the peak memory where that effect changes it).",
             "Regenerate: `scripts/effects_table.py build/clustersim results/effects.md`.", "",
             "| effect off | " + " | ".join(presets) + " |",
             "|---" * (len(presets) + 1) + "|"]
    base = {p: step_time(binary, p, []) for p in presets}
    lines.append("| (none: all on) | " +
                 " | ".join(f"{t:.3f} ({100 * m:.1f}%, {g:.1f} GB)" for t, m, g in base.values()) +
                 " |")
    for f in fields:
        cells = []
        for p in presets:
            t, _, g = step_time(binary, p, [f"effects.{f}=false"])
            cell = f"{t:.3f} ({100 * (t - base[p][0]) / base[p][0]:+.1f}%)"
            if abs(g - base[p][2]) >= 0.05:
                cell += f", {g:.1f} GB"
            cells.append(cell)
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    Path(out_path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
