#!/usr/bin/python3
"""scripts/plot-curves on made-up runs: a made-up sweep (config.json, jobs/*.json grid labels)
drawn by default as one line per varying-key combination averaged over seeds, and with
--group-by (one key, repeated, a comma list); the lines' labels, run counts, markers and error
bars for few epochs, the ±1 sd band (only for n > 1), integer epoch ticks, the axis label with
its unit, the legend outside the axes, and a PNG whose lines are visible pixels; the DIR=LABEL
merge and the printed last-epoch figures; bad input (no runs, a metric nobody logged, an
unknown --group-by key) refused with exit 2 and no PNG. Exit 77 (skipped) without
python3-matplotlib.
Usage: plot_curves.py REPO"""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgb
except ImportError:
    print("no python3-matplotlib: skipped")
    sys.exit(77)

repo = sys.argv[1]
script = os.path.join(repo, "scripts", "plot-curves")
loader = importlib.machinery.SourceFileLoader("plot_curves_script", script)
pc = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(pc)
failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append(f"{what}: {detail}")


def run_dir(path, accs, config=None, metric="val_accuracy"):
    os.makedirs(path)
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"event": "start"}) + "\n")  # a line without an epoch is skipped
        for e, a in enumerate(accs, 1):
            f.write(json.dumps({"epoch": e, metric: a, "train_loss": 1.0 / e}) + "\n")
    if config is not None:
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(config, f)


def sweep(root, epochs):
    """partition 3, 4 × lr 5e-4, 1e-3 × seed 1, 2, as scripts/sweep lays it out."""
    os.makedirs(os.path.join(root, "jobs"))
    for part in (3, 4):
        for lr in ("5e-4", "1e-3"):
            for seed in (1, 2):
                name = f"partition-{part}_lr-{lr}_seed-{seed}"
                acc = 10 * part + (5 if lr == "1e-3" else 0) + seed
                cfg = {"name": name, "seed": seed, "data": {"subset_seed": seed},
                       "method": {"partition": part}, "optimizer": {"lr": float(lr)},
                       "output": {"dir": name}, "train": {"epochs": epochs}}
                run_dir(os.path.join(root, "runs", name), [acc + e for e in range(epochs)],
                        cfg, "test_accuracy")
                with open(os.path.join(root, "jobs", name + ".json"), "w") as f:
                    json.dump({"name": name, "labels": {"method.partition": str(part),
                                                        "optimizer.lr": lr,
                                                        "seed": str(seed)}}, f)


def plot(*args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def figure(*argv):
    """The figure plot-curves draws for these arguments, and its axes."""
    _, args = pc.parse_args(list(argv) + ["--out", "unused.png"])
    fig, _ = pc.draw(args, pc.make_groups(args, lambda m: failures.append(m)))
    return fig, fig.axes[0]


def lines_of(ax):
    return [ln for ln in ax.lines if not ln.get_label().startswith("_")]


def bands(ax):
    """The shaded areas with a non-zero extent (a band over 2+ epochs)."""
    out = []
    for c in ax.collections:
        if isinstance(c, PolyCollection):
            ext = c.get_datalim(ax.transData)
            if ext.width > 0 and ext.height > 0:
                out.append(c)
    return out


def coloured_pixels(png, colour):
    img = matplotlib.image.imread(png)[:, :, :3]
    r, g, b = to_rgb(colour)
    close = (abs(img[:, :, 0] - r) < 0.08) & (abs(img[:, :, 1] - g) < 0.08) & \
        (abs(img[:, :, 2] - b) < 0.08)
    return int(close.sum())


with tempfile.TemporaryDirectory() as t:
    # --- a 1-epoch sweep (the README's): one dot per grid cell, averaged over the seeds -------
    s1 = os.path.join(t, "sweep1")
    sweep(s1, 1)
    fig, ax = figure("--metric", "test_accuracy", s1)
    lines = lines_of(ax)
    labels = [ln.get_label() for ln in lines]
    check("default: a line per partition × lr", len(lines) == 4, str(labels))
    check("default: labelled by the varying keys (not seed, subset_seed, name, output.dir)",
          labels == ["partition=3, lr=5e-4 (n=2)", "partition=3, lr=1e-3 (n=2)",
                     "partition=4, lr=5e-4 (n=2)", "partition=4, lr=1e-3 (n=2)"], str(labels))
    check("1 epoch: every line a marker", all(ln.get_marker() == "o" for ln in lines),
          str([ln.get_marker() for ln in lines]))
    check("1 epoch: every line has its point", all(len(ln.get_xdata()) == 1 for ln in lines))
    # partition 3, lr 1e-3: seeds 1, 2 -> 36, 37.
    check("mean over the seeds", len(lines) == 4 and abs(lines[1].get_ydata()[0] - 36.5) < 1e-9,
          str([ln.get_ydata() for ln in lines]))
    check("1 epoch, n=2: error bars", len(ax.containers) == 4, str(ax.containers))
    check("y label with its unit", ax.get_ylabel() == "test accuracy (%)", ax.get_ylabel())
    check("x label", ax.get_xlabel() == "epoch", ax.get_xlabel())
    ticks = [x for x in ax.get_xticks() if ax.get_xlim()[0] <= x <= ax.get_xlim()[1]]
    check("integer epoch ticks", ticks and all(float(x).is_integer() for x in ticks), str(ticks))
    leg = ax.get_legend()
    check("legend outside the axes", leg is not None and leg.get_bbox_to_anchor().x0 >=
          ax.get_window_extent().x1, "")

    png = os.path.join(t, "sweep1.png")
    r = plot("--metric", "test_accuracy", "--out", png, s1)
    check("sweep: exit 0", r.returncode == 0, r.stderr)
    rows = [ln.split("\t") for ln in r.stdout.splitlines()]
    check("sweep: a printed row per line", [x[0] for x in rows] == [
        "partition=3, lr=5e-4", "partition=3, lr=1e-3", "partition=4, lr=5e-4",
        "partition=4, lr=1e-3"], r.stdout)
    if len(rows) > 1:
        check("sweep: runs, epoch, mean, min, max, sd", rows[1] == [
            "partition=3, lr=1e-3", "2", "1", "36.500", "36.00", "37.00", "0.707"], str(rows[1]))
    # The dots are drawn: each line's colour is on the PNG (more than a legend swatch).
    for colour in ("tab:blue", "tab:orange", "tab:green", "tab:red"):
        n = coloured_pixels(png, colour) if os.path.exists(png) else 0
        check(f"1-epoch PNG shows {colour}", n > 60, f"{n} pixels")

    # --- --group-by: one key, the same keys repeated or as a comma list ------------------------
    fig, ax = figure("--metric", "test_accuracy", "--group-by", "optimizer.lr", s1)
    labels = [ln.get_label() for ln in lines_of(ax)]
    check("--group-by optimizer.lr: 2 lines of 4 runs",
          labels == ["lr=5e-4 (n=4)", "lr=1e-3 (n=4)"], str(labels))
    fig, ax = figure("--metric", "test_accuracy", "--group-by", "optimizer.lr,seed", s1)
    comma = [ln.get_label() for ln in lines_of(ax)]
    fig, ax = figure("--metric", "test_accuracy", "--group-by", "optimizer.lr",
                     "--group-by", "seed", s1)
    repeated = [ln.get_label() for ln in lines_of(ax)]
    check("--group-by lr,seed: 4 lines of 2 runs", len(comma) == 4 and all(
        lb.endswith("(n=2)") and "seed=" in lb for lb in comma), str(comma))
    check("--group-by repeated = comma list", comma == repeated, f"{comma} {repeated}")

    # --- many epochs: no markers, the band over 2+ epochs only for n > 1 ------------------------
    s12 = os.path.join(t, "sweep12")
    sweep(s12, 12)
    fig, ax = figure("--metric", "test_accuracy", "--group-by", "method.partition", s12)
    lines = lines_of(ax)
    check("12 epochs: 2 lines", len(lines) == 2, str([ln.get_label() for ln in lines]))
    check("12 epochs: no markers", all(ln.get_marker() in (None, "None", "", " ")
                                       for ln in lines), str([ln.get_marker() for ln in lines]))
    check("12 epochs: 12 points", all(len(ln.get_xdata()) == 12 for ln in lines))
    check("n=4: a band per line", len(bands(ax)) == 2, str(ax.collections))
    check("12 epochs: no error bars", not ax.containers, str(ax.containers))
    one = os.path.join(t, "one")
    run_dir(one, [50, 60, 70])
    fig, ax = figure(one)
    check("n=1: no band", not bands(ax), str(ax.collections))
    check("n=1: labelled by its directory", [ln.get_label() for ln in lines_of(ax)] == ["one"])

    # --- DIR=LABEL: directories pooled under a label -----------------------------------------
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
        check("A: 2 runs, epoch 3, mean 93, min 92, max 94, sd 1.414",
              lines[0] == ["A", "2", "3", "93.000", "92.00", "94.00", "1.414"], str(lines[0]))
        # B's runs share epochs 1-2 only: the last common epoch is 2, (75 + 86) / 2.
        check("B merged: 2 runs, epoch 2, mean 80.5", lines[1] == ["B", "2", "2", "80.500",
                                                                   "75.00", "86.00", "7.778"],
              str(lines[1]))
    # Two runs of different settings given one label stay one line: the default keys are those
    # that vary within one DIR.
    run_dir(os.path.join(t, "p1"), [60, 70], {"seed": 1, "optimizer": {"lr": 0.001}})
    run_dir(os.path.join(t, "p2"), [62, 72], {"seed": 2, "optimizer": {"lr": 0.002}})
    fig, ax = figure(os.path.join(t, "p1") + "=P", os.path.join(t, "p2") + "=P")
    labels = [ln.get_label() for ln in lines_of(ax)]
    check("one label over two DIRs: one line", labels == ["P (n=2)"], str(labels))
    check("PNG written", os.path.getsize(png) > 1000 if os.path.exists(png) else False)
    check("no temporary left", not os.path.exists(png + ".tmp.png"))

    # --- refusals ---------------------------------------------------------------------------
    bad = os.path.join(t, "bad.png")
    r = plot("--out", bad, os.path.join(t, "nothing"))
    check("no runs: exit 2", r.returncode == 2, f"{r.returncode} {r.stderr}")
    check("no runs: names the directory", "nothing" in r.stderr, r.stderr)
    r = plot("--metric", "test_accuracy", "--out", bad, os.path.join(t, "a"))
    check("unlogged metric: exit 2", r.returncode == 2, f"{r.returncode} {r.stderr}")
    check("unlogged metric: names it", "test_accuracy" in r.stderr, r.stderr)
    r = plot("--metric", "test_accuracy", "--group-by", "optimizer.learning_rate",
             "--out", bad, s1)
    check("unknown --group-by key: exit 2", r.returncode == 2, f"{r.returncode} {r.stderr}")
    check("unknown --group-by key: names it", "optimizer.learning_rate" in r.stderr, r.stderr)
    check("bad input writes no PNG", not os.path.exists(bad))

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("plot-curves: lines per group (default and --group-by), markers and bands, labels, a "
      "visible PNG, merged labels, last-epoch figures and refusals as expected")
