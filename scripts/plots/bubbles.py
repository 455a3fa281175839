#!/usr/bin/python3
"""Bubble fraction and peak activation memory vs microbatches, from a `clustersim sweep` CSV.

usage: bubbles.py SWEEP.csv [SWEEP.csv ...] OUT_PREFIX
Each sweep (one panel) varies parallel.schedule, parallel.virtual_stages and
parallel.global_batch_size (= microbatches with DP 1 and microbatch size 1); interleaved points
are drawn at v = 2, the others at v = 1. Writes OUT_PREFIX_bubble.png (simulated points,
analytic curves) and OUT_PREFIX_memory.png (from the first sweep).
"""
import sys

from common import SCHEDULE_STYLE, plt, read_csv, save


def series(rows, schedule):
    v = "2" if schedule == "INTERLEAVED" else "1"
    pts = [r for r in rows
           if r["schedule"] == schedule and r["parallel.virtual_stages"] == v]
    pts.sort(key=lambda r: int(r["microbatches"]))
    return pts


def stages(rows):
    return int(rows[0]["layout"].split("PP ")[1].split()[0])


def main(csv_paths, prefix):
    sweeps = [read_csv(path) for path in csv_paths]
    fig, axes = plt.subplots(1, len(sweeps), figsize=(6.2 * len(sweeps), 4.6), squeeze=False)
    for ax, rows in zip(axes[0], sweeps):
        for schedule, (label, color, marker) in SCHEDULE_STYLE.items():
            pts = series(rows, schedule)
            if not pts:
                continue
            m = [int(r["microbatches"]) for r in pts]
            # The analytic value is the schedule's formula at the simulated stage costs; drawn
            # as a line through m it is the curve the points should sit on.
            ax.plot(m, [float(r["analytic_bubble_fraction"]) for r in pts], "-", color=color,
                    lw=1.2, alpha=0.8)
            ax.plot(m, [float(r["bubble_fraction"]) for r in pts], marker, color=color, ms=5,
                    mfc="none", label=f"{label} (v={pts[0]['parallel.virtual_stages']})")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8, 16, 32])
        ax.set_xticklabels(["1", "2", "4", "8", "16", "32"])
        ax.set_ylim(0, 1)
        ax.set_xlabel("microbatches m")
        ax.set_ylabel("bubble fraction of the step")
        net = rows[0].get("network", "")
        net = "ideal network: communication is free" if net == "IDEAL" else \
            "congestion-aware network"
        layout = rows[0]["layout"].split(",")[0].replace(" x CP 1", "")
        ax.set_title(f"{layout}, {rows[0]['gpus']} GPUs\n{net}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="markers: simulated, lines: formula", title_fontsize=8)
    save(fig, prefix + "_bubble.png")

    fig, ax = plt.subplots(figsize=(6.2, 4.4))
    for schedule in ("GPIPE", "ONE_F_ONE_B"):
        label, color, marker = SCHEDULE_STYLE[schedule]
        pts = series(sweeps[0], schedule)
        m = [int(r["microbatches"]) for r in pts]
        ax.plot(m, [float(r["activations_gb"]) for r in pts], marker + "-", color=color, ms=4,
                label=f"{label}: holds {'m' if schedule == 'GPIPE' else 'min(m, p)'} microbatches")
    ax.set_xlabel("microbatches m")
    ax.set_ylabel("activation memory at the peak (GB per GPU)")
    capacity = 80.0
    ax.axhline(capacity, color="gray", ls="--", lw=1)
    ax.text(1, capacity, " H100 HBM (80 GB)", va="bottom", fontsize=8, color="gray")
    ax.set_title(f"Activations held at the peak, p = {stages(sweeps[0])} stages", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, prefix + "_memory.png")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1:-1], sys.argv[-1])
