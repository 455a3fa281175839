#!/usr/bin/python3
"""Step-time breakdown as stacked bars: compute, exposed TP / PP / DP / CP communication, bubble.

usage: breakdown.py OUT.png TITLE INPUT [INPUT ...]
An INPUT is a `clustersim run --json` report (one bar) or a `clustersim sweep --csv` file (one
bar per row, labelled by its varied fields). Whatever the step holds beyond these parts (the
optimizer, ranks waiting for others at the end) is drawn as "other". Bars of configurations that
do not fit in HBM are hatched.
"""
import os
import sys

from matplotlib.patches import Patch

from common import plt, read_csv, read_json, save

PARTS = [("compute", "#4c8bd6"), ("TP comm", "#e39b3a"), ("PP comm", "#d6584c"),
         ("DP comm", "#9c6ad1"), ("CP comm", "#6ab0a0"), ("bubble", "#cfcfcf"),
         ("other", "#fff2b3")]


def short_layout(layout):
    head = layout.split(",")[0].split(" (")[0].replace(" x CP 1", "")
    return head.replace(" x ", "×").replace("TP ", "TP").replace("PP ", "PP").replace("DP ", "DP")


def schedule_label(schedule, virtual_stages):
    name = {"ONE_F_ONE_B": "1F1B", "ZB_H1": "ZB-H1", "GPIPE": "GPipe",
            "INTERLEAVED": "interleaved"}.get(schedule, schedule)
    return name + (f" v={virtual_stages}" if schedule == "INTERLEAVED" else "")


def bar(step, compute, tp, pp, dp, cp, bubble):
    parts = [compute, tp, pp, dp, cp, bubble]
    return parts + [max(0.0, step - sum(parts))]


def from_report(path):
    r = read_json(path)
    step = r["iteration_time_s"]
    compute = sum(s["compute_s"] for s in r["stages"]) / len(r["stages"])
    e = r["exposed_comm_s"]
    v = r["layout"].split(" virtual stages")[0].split("(")[-1] if "virtual" in r["layout"] else 1
    label = short_layout(r["layout"]) + "\n" + schedule_label(r["schedule"], v)
    return [(label, bar(step, compute, e["tp"], e["pp"], e["dp"], e["cp"],
                        r["bubble_fraction"] * step), r["memory"]["fits"])]


def from_sweep(path):
    rows = read_csv(path)
    fields = [k for k in rows[0] if ("." in k or k == "network") and
              k not in ("parallel.schedule", "parallel.virtual_stages")] if rows else []
    out = []
    for r in rows:
        step = float(r["iteration_time_s"])
        label = "\n".join([schedule_label(r["schedule"], r.get("parallel.virtual_stages", 1))] +
                          [r[f] for f in fields])
        if "parallel.global_batch_size" in fields:
            label = label.replace(r["parallel.global_batch_size"],
                                  f"m={r['microbatches']}", 1)
        out.append((label, bar(step, float(r["compute_s"]), float(r["exposed_tp_s"]),
                               float(r["exposed_pp_s"]), float(r["exposed_dp_s"]),
                               float(r["exposed_cp_s"]),
                               float(r["bubble_fraction"]) * step), r["fits"] == "true"))
    return out


def main(out, title, inputs):
    bars = []
    for path in inputs:
        bars += from_sweep(path) if path.endswith(".csv") else from_report(path)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.95 * len(bars) + 2), 5.0))
    x = range(len(bars))
    bottom = [0.0] * len(bars)
    for i, (name, color) in enumerate(PARTS):
        values = [b[1][i] for b in bars]
        ax.bar(x, values, bottom=bottom, color=color, edgecolor="white", linewidth=0.5,
               hatch=None)
        bottom = [a + v for a, v in zip(bottom, values)]
    for xi, (label, parts, fits) in zip(x, bars):
        if not fits:
            ax.bar([xi], [sum(parts)], fill=False, hatch="///", edgecolor="#aa0000", lw=0)
            ax.text(xi, sum(parts), "no fit", ha="center", va="bottom", fontsize=7,
                    color="#aa0000")
        else:
            ax.text(xi, sum(parts), f"{sum(parts):.2f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x))
    ax.set_xticklabels([b[0] for b in bars], fontsize=7.5)
    ax.set_ylabel("seconds per step (mean per GPU)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    used = [i for i in range(len(PARTS)) if any(b[1][i] > 0 for b in bars)]
    handles = [Patch(color=PARTS[i][1], label=PARTS[i][0]) for i in used]
    if any(not b[2] for b in bars):
        handles.append(Patch(fill=False, hatch="///", edgecolor="#aa0000",
                             label="does not fit in HBM"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_ylim(0, max(sum(b[1]) for b in bars) * 1.1)
    save(fig, out)


if __name__ == "__main__":
    if len(sys.argv) < 4 or not all(os.path.exists(p) for p in sys.argv[3:]):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
