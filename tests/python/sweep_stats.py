#!/usr/bin/python3
"""scripts/lib/zotrain_sweep.py's statistics over seeds on made-up rows: grouped by the other
varying keys (in order of appearance, the thread count not a group), mean and sample sd (n-1)
of the finished runs' final test and validation accuracy, sd empty for n=1, unfinished runs not
counted; no table without a varying seed; the progress line of a finished run read from a
GNU parallel job log.
Usage: sweep_stats.py REPO"""
import contextlib
import io
import json
import os
import sys
import tempfile

repo = sys.argv[1]
sys.path.insert(0, os.path.join(repo, "scripts", "lib"))
import zotrain_sweep as zs  # noqa: E402

failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append(f"{what}: {detail}")


def row(run, seed, lr, test, val=None, status="done", threads=2):
    return {"run": run, "status": status, "seed": seed, "optimizer.lr": lr,
            "train.threads": threads, "val_accuracy": val, "test_accuracy": test}


rows = [row("a1", 1, "1e-3", 90.0, 80.0), row("a2", 2, "1e-3", 92.0, 84.0, threads=1),
        row("a3", 3, "1e-3", 94.0, 82.0), row("a4", 4, "1e-3", None, status="interrupted"),
        row("b1", 1, "3e-3", 50.0, 40.0), row("b2", 2, "3e-3", None, status="pending")]
stats = zs.seed_stats(rows)
check("two groups by lr", stats is not None and [s["optimizer.lr"] for s in stats]
      == ["1e-3", "3e-3"], stats)
if stats and len(stats) == 2:
    a, b = stats
    check("no seed or threads column", "seed" not in a and "train.threads" not in a, a)
    check("mean of the finished runs", abs(a["test_accuracy_mean"] - 92.0) < 1e-12, a)
    check("sample sd (n-1)", abs(a["test_accuracy_sd"] - 2.0) < 1e-12, a)
    check("val mean and sd", abs(a["val_accuracy_mean"] - 82.0) < 1e-12
          and abs(a["val_accuracy_sd"] - 2.0) < 1e-12, a)
    check("n counts finished runs, runs all", a["n"] == 3 and a["runs"] == 4, a)
    check("n=1: sd empty", b["n"] == 1 and b["test_accuracy_sd"] is None
          and b["test_accuracy_mean"] == 50.0, b)
    md = zs.stats_markdown(stats)
    check("markdown mean ± sd", "| 1e-3 | 82.00 ± 2.00 | 92.00 ± 2.00 | 3 | 4 |" in md, md)
    check("markdown n=1 without sd", "| 3e-3 | 40.00 | 50.00 | 1 | 2 |" in md, md)
    with tempfile.TemporaryDirectory() as d:
        zs.write_csv(os.path.join(d, "s.csv"), stats)
        text = open(os.path.join(d, "s.csv")).read().splitlines()
        check("csv header", text[0] == "optimizer.lr,val_accuracy_mean,val_accuracy_sd,n,"
              "test_accuracy_mean,test_accuracy_sd,runs", text[0])
        check("csv n=1 row: empty sd", text[2] == "3e-3,40.0,,1,50.0,,2", text[2])

check("no varying seed: no table",
      zs.seed_stats([{k: v for k, v in r.items() if k != "seed"} for r in rows]) is None)
check("a nested seed key counts (data.seed)",
      zs.seed_stats([{"run": "x", "status": "done", "data.seed": 1, "test_accuracy": 1.0}])
      is not None)
check("test only: no val columns",
      "val_accuracy_mean" not in zs.seed_stats([row("c", 1, "1", 3.0)])[0])
check("mean_sd of nothing", zs.mean_sd([]) == (None, None, 0))

# The progress line of a run, from a line of GNU parallel's job log.
with tempfile.TemporaryDirectory() as out:
    runs = [zs.Run("lr-1_seed-2", "c.json", labels={"optimizer.lr": "1", "seed": "2"}),
            zs.Run("lr-3_seed-2", "c.json", labels={"optimizer.lr": "3", "seed": "2"})]
    os.makedirs(os.path.join(out, "runs", "lr-1_seed-2"))
    with open(os.path.join(out, "runs", "lr-1_seed-2", "summary.json"), "w") as f:
        json.dump({"test_accuracy": 91.25}, f)
    joblog = os.path.join(out, "joblog")
    with open(joblog, "w") as f:
        f.write("Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n")
        f.write(f"1\t:\t0\t41.7\t0\t0\t0\t0\tpython3 job.py {out}/jobs/lr-1_seed-2.json\n")
        f.write(f"2\t:\t0\t3.2\t0\t0\t2\t0\tpython3 job.py {out}/jobs/lr-3_seed-2.js")
    p = zs.Progress(out, runs, runs, joblog)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        p.poll()
        with open(joblog, "a") as f:
            f.write("on\n")
        p.poll()
    lines = err.getvalue().splitlines()
    check("progress: done line", lines[:1] == ["sweep: [1/2] done lr=1 seed=2: test 91.2 % in 42 s"],
          lines)
    check("progress: failed line, written in two pieces", len(lines) == 2
          and lines[1].startswith("sweep: [2/2] failed (exit 2) lr=3 seed=2 after 3 s: see "),
          lines)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("sweep statistics over seeds and progress lines fine")
