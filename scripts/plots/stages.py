#!/usr/bin/python3
"""One step broken down per pipeline stage, from a `clustersim run --json` report.

usage: stages.py REPORT.json OUT.png
Per stage (mean over its GPUs): compute, TP communication on the compute stream, waits for the
data-parallel gradient sync, pipeline bubble, and the rest of the step; plus memory per stage.
"""
import sys

from matplotlib.patches import Patch

from common import plt, read_json, save

PARTS = [("compute", "#4c8bd6"), ("TP comm", "#e39b3a"), ("DP wait", "#9c6ad1"),
         ("CP wait", "#6ab0a0"), ("bubble", "#cfcfcf"), ("other", "#fff2b3")]


def main(path, out):
    r = read_json(path)
    step = r["iteration_time_s"]
    stages = r["stages"]
    rows = []
    for s in stages:
        parts = [s["compute_s"], s["tp_comm_s"], s["dp_wait_s"], s["cp_wait_s"],
                 s["bubble_fraction"] * step]
        rows.append(parts + [max(0.0, step - sum(parts))])
    fig, (ax, mem) = plt.subplots(2, 1, figsize=(10, 6.6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.3]})
    x = [s["stage"] for s in stages]
    bottom = [0.0] * len(rows)
    for i, (name, color) in enumerate(PARTS):
        values = [row[i] for row in rows]
        ax.bar(x, values, bottom=bottom, color=color, edgecolor="white", lw=0.5)
        bottom = [a + v for a, v in zip(bottom, values)]
    ax.set_ylabel("seconds of the step")
    ax.set_title(f"{r['name']}: {r['layout']}, {r['schedule']}, {r['microbatches']} microbatches,"
                 f" {r['gpus']:,} {r['gpu'].upper()}\nstep {step:.2f} s, MFU "
                 f"{100 * r['mfu']:.1f}%, bubble {100 * r['bubble_fraction']:.1f}% "
                 f"(formula {100 * r['analytic_bubble_fraction']:.1f}%)", fontsize=9)
    ax.legend(handles=[Patch(color=c, label=n) for n, c in PARTS], fontsize=8, ncol=6,
              loc="upper center")
    ax.set_ylim(0, step * 1.18)
    ax.grid(axis="y", alpha=0.3)
    cap = r["memory"]["capacity_gb"]
    mem.bar(x, [s["memory_gb"] for s in stages],
            color=["#d6584c" if s["memory_gb"] > cap else "#8fbf6a" for s in stages])
    mem.axhline(cap, color="gray", ls="--", lw=1)
    mem.text(x[-1] + 0.5, cap, f"HBM {cap:.0f} GB", fontsize=7, va="bottom", ha="right")
    mem.set_ylabel("peak GB per GPU")
    mem.set_xlabel("pipeline stage")
    mem.set_xticks(x)
    mem.grid(axis="y", alpha=0.3)
    save(fig, out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
