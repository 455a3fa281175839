"""Shared helpers for the plot scripts: CSV/JSON loading and a consistent look."""
import csv
import json

import matplotlib

matplotlib.use("Agg")  # files only: no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

SCHEDULE_STYLE = {
    "GPIPE": ("GPipe", "tab:red", "o"),
    "ONE_F_ONE_B": ("1F1B", "tab:blue", "s"),
    "INTERLEAVED": ("interleaved 1F1B", "tab:green", "^"),
    "ZB_H1": ("ZB-H1", "tab:purple", "D"),
    "ZB_H2": ("ZB-H2", "tab:orange", "v"),
}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_json(path):
    with open(path) as f:
        return json.load(f)


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print("wrote", path)
