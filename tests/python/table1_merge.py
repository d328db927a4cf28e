#!/usr/bin/python3
"""scripts/reproduce/table1-merge on made-up CSVs: a re-run cell's rows replace the committed
ones by run name, new runs are added, the label columns follow the run names, the table and
verdict are recomputed over the merged rows, and a missing CSV is refused with exit 2.
Usage: table1_merge.py REPO"""
import csv
import os
import subprocess
import sys
import tempfile

repo = sys.argv[1]
script = os.path.join(repo, "scripts", "reproduce", "table1-merge")
failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append(f"{what}: {detail}")


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def row(run, acc, method="", extra=None):
    r = {"run": run, "status": "done", "dataset": "", "variant": "", "method": method,
         "seed": "", "test_accuracy": acc}
    r.update(extra or {})
    return r


with tempfile.TemporaryDirectory() as d:
    base, new = os.path.join(d, "base.csv"), os.path.join(d, "new.csv")
    # MNIST FP32 Full ZO, seeds 1 and 2 (paper 89.80): seed 2 far below; a PointNet row.
    write(base, [row("lenet5-mnist-fp32-full_zo-e100", "90.0"),
                 row("lenet5-mnist-fp32-full_zo-e100-s2", "80.0", method="elastic_zo"),
                 row("pointnet-synthetic-fp32-full_bp-e200", "99.0")])
    write(new, [row("lenet5-mnist-fp32-full_zo-e100-s2", "89.5", extra={"int8.dead_zone": "0"}),
                row("lenet5-mnist-int8-cls1-e100", "97.0")])
    p = subprocess.run([sys.executable, script, base, new], capture_output=True, text=True)
    check("exit 0", p.returncode == 0, p.stderr)
    with open(base, newline="") as f:
        merged = {r["run"]: r for r in csv.DictReader(f)}
    check("rows", list(merged) == ["lenet5-mnist-fp32-full_zo-e100",
                                   "lenet5-mnist-fp32-full_zo-e100-s2",
                                   "pointnet-synthetic-fp32-full_bp-e200",
                                   "lenet5-mnist-int8-cls1-e100"], list(merged))
    s2 = merged.get("lenet5-mnist-fp32-full_zo-e100-s2", {})
    check("replaced", s2.get("test_accuracy") == "89.5", s2)
    check("new column kept", s2.get("int8.dead_zone") == "0", s2)
    check("labels from the name", (s2.get("dataset"), s2.get("variant"), s2.get("method"),
                                   s2.get("seed")) == ("mnist", "fp32", "full_zo", "2"), s2)
    check("other rows kept", merged.get("pointnet-synthetic-fp32-full_bp-e200", {})
          .get("test_accuracy") == "99.0", merged)
    check("cell", "89.75 ± 0.35 (89.80, -0.05; worst -0.30) [90.00 / 89.50]" in p.stdout, p.stdout)
    check("one seed only", "97.00 (97.34, -0.34) [1 seed(s) not run]" in p.stdout, p.stdout)
    check("verdict", "2 of 2 LeNet-5 cells reach" in p.stdout, p.stdout)
    p = subprocess.run([sys.executable, script, os.path.join(d, "missing.csv"), new],
                       capture_output=True, text=True)
    check("missing CSV: exit 2", p.returncode == 2, p.returncode)
    check("missing CSV: named", "missing.csv" in p.stderr, p.stderr)

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("table1-merge: rows replaced by name, labels from names, table and verdict recomputed")
