#!/usr/bin/env python3
"""An example of the clustersim Python package: Llama 3 70B on 1,024 H100s (TP 8 x PP 8 x DP 16),
one step per pipeline schedule and microbatch count, simulated on Python threads at once (each
call releases the GIL), gathered into a pandas DataFrame and plotted with matplotlib.

    /usr/bin/python3 results/python_example.py [OUT.png] > results/python_example.txt
(after scripts/build.sh; the table on stdout, the timing on stderr)
"""

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas  # noqa: E402

import clustersim  # noqa: E402

PP, DP = 8, 16
SCHEDULES = {"ONE_F_ONE_B": 1, "INTERLEAVED": 2, "ZB_H1": 1}  # schedule: virtual stages
MICROBATCHES = [8, 16, 32, 64]


def step(schedule, m):
    report = clustersim.run(preset="llama3-70b", set={
        "parallel.pp": PP, "parallel.dp": DP, "parallel.schedule": schedule,
        "parallel.virtual_stages": SCHEDULES[schedule],
        # microbatch size 1: each data-parallel replica runs m microbatches per step
        "parallel.global_batch_size": m * DP})
    return {"schedule": schedule, "m": m, "step_s": report["iteration_time_s"],
            "mfu": report["mfu"], "bubble": report["bubble_fraction"],
            "formula": report["analytic_bubble_fraction"]}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "python_example.png")
    points = [(s, m) for s in SCHEDULES for m in MICROBATCHES]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        frame = pandas.DataFrame(pool.map(lambda p: step(*p), points))
    print(f"{len(points)} steps in {time.perf_counter() - start:.1f} s on "
          f"{os.cpu_count()} threads", file=sys.stderr)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for schedule, rows in frame.groupby("schedule", sort=False):
        line, = left.plot(rows["m"], rows["step_s"], marker="o", label=schedule)
        right.plot(rows["m"], 100 * rows["bubble"], marker="o", color=line.get_color(),
                   label=f"{schedule} simulated")
        right.plot(rows["m"], 100 * rows["formula"], linestyle=":", color=line.get_color(),
                   label=f"{schedule} formula")
    left.set(xscale="log", xlabel="microbatches per step (m)", ylabel="step time (s)",
             title=f"Llama 3 70B, TP 8 x PP {PP} x DP {DP}, 1,024 H100s")
    right.set(xscale="log", xlabel="microbatches per step (m)", ylabel="pipeline bubble (%)",
              title="bubble share of the step vs its formula")
    for ax in (left, right):
        ax.set_xticks(MICROBATCHES, [str(m) for m in MICROBATCHES])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
