#!/usr/bin/python3
"""Pipeline Gantt charts drawn from `clustersim run --timeline` traces, one panel per trace.

usage: gantt.py OUT.png TITLE=TIMELINE.json [TITLE=TIMELINE.json ...]
Each trace should hold one rank per pipeline stage (the default --timeline-ranks). Compute-stream
ops are merged into one bar per (microbatch, phase); the number on a bar is its microbatch.
"""
import sys

from matplotlib.patches import Patch

from common import plt, read_json, save

PHASE_COLOR = {
    "forward": "#4c8bd6",
    "backward": "#e39b3a",
    "weight_grad": "#9c6ad1",
    "recompute": "#8fbf6a",
    "optimizer": "#888888",
}


def stage_blocks(path):
    """{stage: [(start_us, end_us, phase, microbatch)]} from a trace's compute streams."""
    trace = read_json(path)
    stage_of = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            stage_of[e["pid"]] = int(e["args"]["name"].split("stage ")[1].rstrip(")"))
    # The first rank of each stage stands for the stage.
    first = {}
    for pid, stage in sorted(stage_of.items()):
        first.setdefault(stage, pid)
    wanted = {pid: stage for stage, pid in first.items()}
    blocks = {stage: [] for stage in first}
    events = sorted((e for e in trace["traceEvents"]
                     if e["ph"] == "X" and e["tid"] == 0 and e["pid"] in wanted),
                    key=lambda e: (e["pid"], e["ts"]))
    for e in events:
        phase = e["args"]["class"]
        mb = e["args"].get("microbatch", -1)
        out = blocks[wanted[e["pid"]]]
        # Collectives on the compute stream (TP) belong to the phase they interrupt.
        if phase == "comm" and out:
            phase, mb = out[-1][2], out[-1][3]
        if out and out[-1][2] == phase and out[-1][3] == mb and e["ts"] - out[-1][1] < 1.0:
            out[-1] = (out[-1][0], e["ts"] + e["dur"], phase, mb)
        else:
            out.append((e["ts"], e["ts"] + e["dur"], phase, mb))
    return blocks


def main(out, specs):
    panels = [(spec.rsplit("=", 1)[0], stage_blocks(spec.rsplit("=", 1)[1])) for spec in specs]
    end = max(b[1] for _, blocks in panels for bs in blocks.values() for b in bs) / 1e3
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 1.0 + 1.15 * len(panels) * 1.6),
                             sharex=True, squeeze=False)
    for ax, (title, blocks) in zip(axes[:, 0], panels):
        stages = sorted(blocks)
        step = max(b[1] for bs in blocks.values() for b in bs) / 1e3
        for s in stages:
            for start, stop, phase, mb in blocks[s]:
                x, w = start / 1e3, (stop - start) / 1e3
                ax.broken_barh([(x, w)], (s - 0.4, 0.8), facecolors=PHASE_COLOR.get(phase, "k"),
                               edgecolor="white", linewidth=0.4)
                if mb >= 0 and w > end / 120:
                    ax.text(x + w / 2, s, str(mb), ha="center", va="center", fontsize=6.5,
                            color="white")
        ax.set_yticks(stages)
        ax.set_yticklabels([f"stage {s}" for s in stages], fontsize=8)
        ax.set_ylim(max(stages) + 0.6, -0.6)
        ax.set_title(f"{title}: step {step:.1f} ms", fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time (ms)")
    axes[-1, 0].set_xlim(0, end * 1.01)
    handles = [Patch(color=c, label=p.replace("_", " ")) for p, c in PHASE_COLOR.items()
               if any(b[2] == p for _, bl in panels for bs in bl.values() for b in bs)]
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=8)
    save(fig, out)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
