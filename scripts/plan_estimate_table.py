#!/usr/bin/env python3
"""How well `plan`'s pre-estimate (sim/plan/step_estimate.cc) stands for the step it ranks: for
each case, the 12 layouts it sends to the simulator and each one's estimate against its step on
the congestion-free analytical network. The estimate only chooses what gets simulated, so a
layout it ranks too low is never seen: the error decides which layouts a plan can find.

Usage: plan_estimate_table.py BIN OUT.md   (about 6 minutes on 2 cores)
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [  # name: plan arguments
    ("llama3.2-1b, its 64 GPUs", ["--preset", "llama3.2-1b"]),
    ("llama3-8b, its 64 GPUs", ["--preset", "llama3-8b"]),
    ("llama3-8b, 1,024 GPUs", ["--preset", "llama3-8b", "--gpus", "1024"]),
    ("llama3-8b, 98,304 GPUs of llama3-24k, batch 98,304",
     ["--preset", "llama3-8b", "--gpus", "98304", "--topology", "llama3-24k",
      "--set", "parallel.global_batch_size=98304"]),
    ("llama3-70b, its 1,024 GPUs", ["--preset", "llama3-70b"]),
    ("gpt3-175b, its 1,024 GPUs", ["--preset", "gpt3-175b"]),
    ("llama3-405b, 16,384 GPUs", ["--preset", "llama3-405b", "--gpus", "16384"]),
    ("llama3-405b, 98,304 GPUs", ["--preset", "llama3-405b", "--gpus", "98304"]),
    ("mixtral-8x7b, its 64 GPUs", ["--preset", "mixtral-8x7b"]),
    ("qwen3-30b-a3b, its 64 GPUs", ["--preset", "qwen3-30b-a3b"]),
]


def ranked(binary, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        subprocess.run([binary, "plan", *args, "--simulate", "12", "--refine", "0", "--top", "12",
                        "--jobs", "2", "--json", str(out)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads(out.read_text())["ranked"]


def main(binary, out_md):
    rows, errors = [], []
    for name, args in CASES:
        layouts = ranked(binary, args)
        err = [c["estimate_s"] / c["analytical_iteration_time_s"] - 1 for c in layouts]
        errors += err
        best = min(layouts, key=lambda c: c["analytical_iteration_time_s"])
        mean = sum(err) / len(err)
        mean_abs = sum(abs(e) for e in err) / len(err)
        rows.append(f"| {name} | {len(layouts)} | {100 * mean:+.1f}% | {100 * mean_abs:.1f}% | "
                    f"{100 * min(err):+.1f}% | {100 * max(err):+.1f}% | "
                    f"{best['analytical_iteration_time_s']:.3f} s | {best['layout']} |")
    mean_abs = sum(abs(e) for e in errors) / len(errors)
    worst = max(abs(e) for e in errors)
    text = [
        "# The planner's pre-estimate against the simulated step",
        "",
        "`scripts/plan_estimate_table.py` (run by `scripts/make-results.sh`). Each row: `plan` "
        "with `--simulate 12 --refine 0`; the 12 layouts its estimate ranks first, each "
        "estimate against that layout's step on the analytical network (error = estimate / "
        "step - 1), and the best of them.",
        "",
        "| case | layouts | mean error | mean abs. error | lowest | highest | best step | "
        "best layout |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"All {len(errors)} layouts: mean absolute error {100 * mean_abs:.1f}%, "
        f"largest {100 * worst:.1f}%.",
        "",
    ]
    Path(out_md).write_text("\n".join(text))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
