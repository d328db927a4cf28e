#!/usr/bin/python3
"""scripts/plot-curves on made-up metrics.jsonl files: a sweep directory and a run directory,
two directories under one label merged into one group, the printed last-epoch mean, min and max
per group, the PNG written, and bad input (no runs, a metric nobody logged) refused with exit 2
and no PNG. Exit 77 (skipped) without python3-matplotlib.
Usage: plot_curves.py REPO"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("no python3-matplotlib: skipped")
    sys.exit(77)

repo = sys.argv[1]
script = os.path.join(repo, "scripts", "plot-curves")
failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append(f"{what}: {detail}")


def run_dir(path, accs):
    os.makedirs(path)
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"event": "start"}) + "\n")  # a line without an epoch is skipped
        for e, a in enumerate(accs, 1):
            f.write(json.dumps({"epoch": e, "val_accuracy": a, "train_loss": 1.0 / e}) + "\n")


def plot(*args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as t:
    run_dir(os.path.join(t, "a", "runs", "seed-1"), [80, 90, 92])
    run_dir(os.path.join(t, "a", "runs", "seed-2"), [81, 89, 94])
    run_dir(os.path.join(t, "b"), [70, 75])  # one run, two epochs
    run_dir(os.path.join(t, "c"), [85, 86, 90])  # merged into b's group
    png = os.path.join(t, "out.png")
    r = plot("--out", png, os.path.join(t, "a") + "=A", os.path.join(t, "b") + "=B",
             os.path.join(t, "c") + "=B")
    check("exit 0", r.returncode == 0, r.stderr)
    lines = [ln.split("\t") for ln in r.stdout.splitlines()]
    check("one line per group", len(lines) == 2, r.stdout)
    if len(lines) == 2:
        check("A: 2 runs, epoch 3, mean 93, min 92, max 94", lines[0] == ["A", "2", "3", "93.000",
                                                                          "92.00", "94.00"],
              str(lines[0]))
        # B's runs share epochs 1-2 only: the last common epoch is 2, (75 + 86) / 2.
        check("B merged: 2 runs, epoch 2, mean 80.5", lines[1] == ["B", "2", "2", "80.500",
                                                                   "75.00", "86.00"],
              str(lines[1]))
    check("PNG written", os.path.getsize(png) > 1000 if os.path.exists(png) else False)
    check("no temporary left", not os.path.exists(png + ".tmp.png"))

    bad = os.path.join(t, "bad.png")
    r = plot("--out", bad, os.path.join(t, "nothing"))
    check("no runs: exit 2", r.returncode == 2, f"{r.returncode} {r.stderr}")
    check("no runs: names the directory", "nothing" in r.stderr, r.stderr)
    r = plot("--metric", "test_accuracy", "--out", bad, os.path.join(t, "a"))
    check("unlogged metric: exit 2", r.returncode == 2, f"{r.returncode} {r.stderr}")
    check("unlogged metric: names it", "test_accuracy" in r.stderr, r.stderr)
    check("bad input writes no PNG", not os.path.exists(bad))

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("plot-curves: groups, merged labels, last-epoch figures and refusals as expected")
