"""What the scripts of scripts/reproduce/ share: the ElasticZO paper's published figures, the runs
that reproduce them (named so that every script finds the runs another one already made), the
command-line options, and the Markdown report helpers. The paper's values are transcribed from
its Tables 1-2 and Sections 5.3-5.4; docs/paper-reproduction.md says how each artefact is made.
Standard library only, except figures (matplotlib from Debian, imported where used).
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zotrain_sweep as zs  # noqa: E402

REPO = zs.REPO
CONFIGS = os.path.join(REPO, "configs", "paper")

# ---- the paper's figures ------------------------------------------------------------------

METHODS = ["full_zo", "cls2", "cls1", "full_bp"]
METHOD_LABEL = {"full_zo": "Full ZO", "cls2": "ZO-Feat-Cls2", "cls1": "ZO-Feat-Cls1",
                "full_bp": "Full BP"}
DATASET_LABEL = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST"}
VARIANT_LABEL = {"fp32": "FP32", "int8": "INT8", "int8star": "INT8*"}

# Table 1: accuracy (%) after 100 epochs (LeNet-5) / 200 epochs (PointNet, ModelNet40).
TABLE1 = {
    ("mnist", "fp32"): [89.80, 94.85, 97.53, 99.10],
    ("mnist", "int8"): [89.78, 94.34, 97.34, 98.77],
    ("mnist", "int8star"): [88.92, 93.92, 95.83, None],
    ("fashion_mnist", "fp32"): [77.09, 82.28, 86.60, 91.37],
    ("fashion_mnist", "int8"): [73.98, 80.33, 84.66, 90.40],
    ("fashion_mnist", "int8star"): [71.02, 77.93, 81.60, None],
    ("modelnet40", "fp32"): [32.05, 70.38, 73.50, 71.60],
}

# Table 2: accuracy (%) on the rotated test subsets; rows "pretrained" (w/o fine-tuning) and
# METHODS after 50 fine-tuning epochs; columns (precision, data set, angle).
TABLE2_ROWS = ["pretrained"] + METHODS
TABLE2 = {
    ("fp32", "mnist", 30): [74.41, 85.94, 90.04, 93.16, 94.82],
    ("fp32", "mnist", 45): [46.58, 74.71, 86.23, 91.60, 93.85],
    ("fp32", "fashion_mnist", 30): [39.65, 61.33, 77.25, 75.98, 80.37],
    ("fp32", "fashion_mnist", 45): [23.34, 59.08, 74.51, 76.86, 79.49],
    ("int8", "mnist", 30): [84.08, 85.94, 93.07, 93.46, 96.68],
    ("int8", "mnist", 45): [60.25, 64.36, 87.99, 91.80, 95.21],
    ("int8", "fashion_mnist", 30): [28.13, 37.21, 69.43, 76.07, 80.08],
    ("int8", "fashion_mnist", 45): [13.77, 22.95, 68.95, 75.68, 80.86],
}

# Figs. 4-6: the paper's analytic memory (Eqs. 2-5, 13-15) in bytes, as its Section 5.3 states
# it (MB = 2^20 B); each is reproduced exactly by the accounting docs/design.md describes.
# (model, precision, batch) -> {method: bytes}
PAPER_MEMORY = {
    ("lenet5", "fp32", 32): {"full_zo": 2742568, "cls2": 2742568 + 4680,
                             "cls1": 2742568 + 66840, "full_bp": 2 * 2742568},
    ("lenet5", "fp32", 256): {"full_zo": 18922536, "cls2": 18922536 + 13640,
                              "cls1": 18922536 + 226328, "full_bp": 2 * 18922536},
    ("lenet5", "int8", 32): {"full_zo": 1716318, "cls2": 1716318 + 4520,
                             "cls1": 1716318 + 71048, "full_bp": 3108916},
    ("lenet5", "int8", 256): {"full_zo": 12977694, "cls2": 12977694 + 6760,
                              "cls1": 12977694 + 186184, "full_bp": 20354228},
    ("pointnet", "fp32", 32): {"full_zo": 532082080, "cls2": 532082080 + 46240,
                               "cls1": 532082080 + 637088},
}

# Fig. 7 (Raspberry Pi Zero 2, LeNet-5 on MNIST), as Section 5.4 states it: shares of an epoch.
PAPER_FIG7 = {
    "fp32": {"forward": (84.3, 84.8), "zo_perturb+zo_update": (11.8, 13.1),
             "backward": (0.0, 0.76)},
    "int8": {"forward": (94.8, 97.1), "zo_perturb+zo_update": (1.0, 1.2),
             "backward": (0.0, 2.5)},
    "int8_speedup": (1.38, 1.42),  # FP32 epoch time / INT8 epoch time (ElasticZO)
}

# ---- runs ---------------------------------------------------------------------------------

PARTITION_FILE = {"full_zo": "full-zo", "cls2": "zo-feat-cls2", "cls1": "zo-feat-cls1",
                  "full_bp": "full-bp"}
# C of each method on a network of L parametric layers.
PARTITION_C = {"full_zo": lambda L: L, "cls2": lambda L: L - 1, "cls1": lambda L: L - 2,
               "full_bp": lambda L: 0}


def lenet_config(dataset, variant, method):
    """The shipped config of one Table 1 cell: variant fp32, int8 (float sign) or int8star."""
    ds = "mnist" if dataset == "mnist" else "fmnist"
    v = "" if variant == "fp32" else f"-{variant}"
    return os.path.join(CONFIGS, f"lenet5-{ds}{v}-{PARTITION_FILE[method]}.json")


def tag(args):
    """'' for the default data and settings, else a short digest of what differs, so runs with
    other data (e.g. the bundled subset) or extra --set values never share a directory."""
    import hashlib
    items = list(args.extra_set) + [f"{d}={args.root[d]}" for d in sorted(args.root)
                                    if args.root[d] != DEFAULT_ROOT[d]]
    return "" if not items else "-x" + hashlib.sha1("\n".join(items).encode()).hexdigest()[:6]


def table1_lenet_run(args, dataset, variant, method, seed=None):
    """LeNet-5 trained from scratch with the paper's settings (configs/paper/, one per cell);
    seed None = the config's own seed, else `seed` (named -s<seed>, so the default runs keep
    their names and other scripts find them)."""
    sets = [f"train.epochs={args.epochs}", f"data.root={args.root[dataset]}"] + args.extra_set
    suffix = ""
    if seed is not None:
        sets.append(f"seed={seed}")
        suffix = f"-s{seed}"
    return zs.Run(name=f"lenet5-{dataset}-{variant}-{method}-e{args.epochs}{suffix}{tag(args)}",
                  config=lenet_config(dataset, variant, method), sets=sets,
                  labels={"dataset": dataset, "variant": variant, "method": method,
                          "seed": seed})


POINTNET_CONFIG = os.path.join(REPO, "configs", "pointnet-synthetic.json")


def table1_pointnet_run(args, method, data_root, variant="fp32"):
    """PointNet on the synthetic point clouds (ModelNet40's layout), in ModelNet40's place;
    variant fp32 (configs/pointnet-synthetic.json) or int8 (the same config at int8's own
    defaults: NITI backprop, ElasticZO-INT8, integer BatchNorm)."""
    epochs = args.pointnet_epochs
    sets = [f"train.epochs={epochs}", f"data.root={data_root}",
            f"data.points={args.points}", f"method.partition={PARTITION_C[method](8)}"]
    if variant == "int8":
        sets.append("model.precision=int8")
    sets += args.extra_set
    v = "" if variant == "fp32" else f"-{variant}"
    return zs.Run(name=f"pointnet-synthetic-c{args.classes}-p{args.points}{v}-{method}-e{epochs}"
                       f"{tag(args)}",
                  config=POINTNET_CONFIG, sets=sets,
                  labels={"dataset": "synthetic", "variant": variant, "method": method})


def synthetic_points(args, classes=10):
    """Writes the synthetic point-cloud set once (the tool's own generator, `classes` shape
    classes, 100 training and 20 test clouds each); returns its dir."""
    name = "modelnet-synthetic" + ("" if classes == 10 else f"-c{classes}")
    d = os.path.join(os.path.abspath(args.out), "data", name)
    if not os.path.exists(os.path.join(d, "ply_data_test0.h5")):
        zs.log(f"writing the synthetic point clouds to {d}")
        subprocess.run([args.zotrain, "--make-synthetic-modelnet", d,
                        "--synthetic-classes", str(classes)], check=True)
    return d


# ---- command line -------------------------------------------------------------------------

DEFAULT_ROOT = {"mnist": os.path.join(REPO, "data", "mnist"),
                "fashion_mnist": os.path.join(REPO, "data", "fashion-mnist")}

def common_args(description, epochs, epochs_help):
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=epochs, help=epochs_help)
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs at a time (each pinned to its share of cores; default 1)")
    ap.add_argument("--out", default=os.path.join("runs", "reproduce"),
                    help="sweep directory shared by every reproduce script, so runs one "
                         "script made are reused by another (default runs/reproduce)")
    ap.add_argument("--report", help="where the Markdown tables and PNG figures go "
                                     "(default OUT/report)")
    ap.add_argument("--datasets", default="mnist,fashion_mnist",
                    help="image data sets to include (default mnist,fashion_mnist)")
    ap.add_argument("--mnist-root", default=DEFAULT_ROOT["mnist"],
                    help="MNIST IDX directory (default data/mnist: scripts/get-data.sh)")
    ap.add_argument("--fashion-root", default=DEFAULT_ROOT["fashion_mnist"],
                    help="Fashion-MNIST IDX directory (default data/fashion-mnist)")
    ap.add_argument("--set", dest="extra_set", action="append", default=[],
                    metavar="KEY=VALUE", help="applied to every run (e.g. train.max_steps=2)")
    ap.add_argument("--zotrain", default=None, help="zotrain binary (default: build/host)")
    ap.add_argument("--sshloginfile", help="run on boards (scripts/sweep)")
    return ap


def finish_args(ap, a):
    if a.epochs < 1:
        ap.error("--epochs must be at least 1")
    if a.jobs < 1:
        ap.error("--jobs must be at least 1")
    a.datasets = [d for d in a.datasets.split(",") if d]
    for d in a.datasets:
        if d not in DATASET_LABEL:
            ap.error(f"--datasets: unknown data set '{d}' (mnist, fashion_mnist)")
    a.root = {"mnist": os.path.abspath(a.mnist_root),
              "fashion_mnist": os.path.abspath(a.fashion_root)}
    for d in a.datasets:
        if not os.path.isdir(a.root[d]):
            ap.error(f"{d}: no directory {a.root[d]} (scripts/get-data.sh installs the full "
                     "sets; --mnist-root data/mnist-subset uses the bundled subset)")
    a.zotrain = os.path.abspath(a.zotrain) if a.zotrain else zs.default_zotrain()
    a.report = os.path.abspath(a.report or os.path.join(a.out, "report"))
    os.makedirs(a.report, exist_ok=True)
    a.started = time.monotonic()
    return a


def run(args, runs):
    """Runs what is not finished; exits non-zero when a run failed."""
    try:
        rc = zs.run_all(args.out, runs, args.jobs, args.sshloginfile, args.zotrain)
    except KeyboardInterrupt:
        zs.log("interrupted; run the same command again to resume")
        sys.exit(130)
    if rc:
        sys.exit(f"sweep: not every run finished; see {os.path.abspath(args.out)}/logs/ "
                 "(the same command resumes)")


def records(args, runs):
    out = os.path.abspath(args.out)
    return {r.name: zs.run_record(out, r.name) for r in runs}


# ---- reports ------------------------------------------------------------------------------

def cell_seeds(values, paper, digits=2):
    """'mean ± sd (paper, mean − paper; worst seed − paper) [each seed]' for a cell run with
    several seeds; one seed: as cell()."""
    done = [v for v in values if v is not None]
    if not values:
        return cell(None, paper, digits)
    if len(done) < 2:
        return cell(done[0] if done else None, paper, digits) + \
            (f" [{len(values) - len(done)} seed(s) not run]" if len(done) < len(values) else "")
    mean, sd, _ = zs.mean_sd(done)
    each = " / ".join("–" if v is None else f"{v:.{digits}f}" for v in values)
    if paper is None:
        return f"{mean:.{digits}f} ± {sd:.{digits}f} (paper –) [{each}]"
    return (f"{mean:.{digits}f} ± {sd:.{digits}f} ({paper:.{digits}f}, {mean - paper:+.{digits}f}; "
            f"worst {min(done) - paper:+.{digits}f}) [{each}]")


def cell(ours, paper, digits=2):
    """'ours (paper, ±diff)' for a Markdown cell."""
    if ours is None:
        return "–" if paper is None else f"not run (paper {paper:.{digits}f})"
    if paper is None:
        return f"{ours:.{digits}f} (paper –)"
    return f"{ours:.{digits}f} ({paper:.{digits}f}, {ours - paper:+.{digits}f})"


def write_report(args, filename, text):
    path = os.path.join(args.report, filename)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    zs.log(f"wrote {path}")
    return path


def provenance(args, recs):
    """A footer: how the runs were made (commands, tool version, machine, wall time)."""
    runs = [r["summary"]["run"] for r in recs.values() if r["summary"]]
    run = runs[0] if runs else {}
    revisions = sorted({r.get("source_revision", "?") for r in runs}) or ["?"]
    wall = time.monotonic() - args.started
    train = sum((r["summary"] or {}).get("train_seconds", 0.0) for r in recs.values())
    lines = [f"Command: `{' '.join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])}`",
             f"zotrain {run.get('zotrain_version', '?')} (built from {', '.join(revisions)}) on "
             f"{run.get('cpu', '?')}, {run.get('cores', '?')} cores; {len(recs)} runs, "
             f"{train:.0f} s of training in total; this invocation took {wall:.0f} s "
             "(finished runs are not redone, so a second invocation only re-reads them)."]
    return "\n\n".join(lines) + "\n"


def savefig(fig, args, filename):
    path = os.path.join(args.report, filename)
    fig.savefig(path + ".tmp.png", dpi=110, bbox_inches="tight")
    os.replace(path + ".tmp.png", path)
    zs.log(f"wrote {path}")


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def number_ticks(only=None):
    """Plain numbers on a log axis (optionally only those whose first digit is in `only`)."""
    from matplotlib.ticker import FuncFormatter

    def f(v, _):
        text = f"{v:g}"
        return text if only is None or text.lstrip("0.")[:1] in only else ""
    return FuncFormatter(f)
