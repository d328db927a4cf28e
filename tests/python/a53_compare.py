#!/usr/bin/python3
"""scripts/a53-model.sh --compare on a made-up board: a bench JSON whose step times are known
multiples of the committed model results (docs/results/a53-model), so the board / model column,
the per-sample FP32 / int8 ratio and the refusal of a bench with no modelled step can be checked.
Usage: a53_compare.py REPO"""
import json
import os
import subprocess
import sys
import tempfile

repo = sys.argv[1]
script = os.path.join(repo, "scripts", "a53-model.sh")
with open(os.path.join(repo, "docs", "results", "a53-model", "int8-cls1-256.json")) as f:
    int8 = json.load(f)
with open(os.path.join(repo, "docs", "results", "a53-model", "fp32-cls1-32.json")) as f:
    fp32 = json.load(f)
failures = []


def step(precision, batch, ms, path="neon"):
    return {"precision": precision, "method": "cls1", "batch": batch, "ms_per_step": ms, "path": path, "steps": 10,
            "phases": {"forward": {"ms": 0.9 * ms, "share": 0.9}, "zo_perturb": {"ms": 0.05 * ms, "share": 0.05},
                       "zo_update": {"ms": 0.05 * ms, "share": 0.05}}}


def run(bench, *extra):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(bench, f)
    try:
        return subprocess.run(["bash", script, "--compare", f.name, *extra], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


# The board is exactly 2× slower than the model on int8 and 1.5× on FP32 at 1 GHz; a portable
# row that must be ignored would give other figures.
int8_ms, fp32_ms = int8["cycles"] / 1e6, fp32["cycles"] / 1e6
bench = {"cpu": "made-up", "threads": 1, "best_path": "neon",
         "steps": [step("int8", 256, 2 * int8_ms), step("fp32", 32, 1.5 * fp32_ms),
                   step("int8", 256, 50 * int8_ms, path="portable")]}
r = run(bench)
if r.returncode != 0:
    failures.append(f"exit {r.returncode}: {r.stderr}")
rows = [l for l in r.stdout.splitlines() if l.startswith("| int8 | cls1 | 256 |") or l.startswith("| fp32 | cls1 | 32 |")]
if len(rows) != 2:
    failures.append(f"expected one int8 and one FP32 row, got {rows}")
for l in rows:
    cells = [c.strip() for c in l.strip("|").split("|")]
    want = "2.00" if cells[0] == "int8" else "1.50"
    if cells[5] != want:
        failures.append(f"{cells[0]}: board / model {cells[5]}, expected {want}")
    if cells[6].split(" / ")[0] != "90.0" or cells[7].split(" / ")[0] != "10.0":
        failures.append(f"{cells[0]}: board shares {cells[6]}, {cells[7]}")
# Per sample FP32 @ 32 / int8 @ 256: model m, board m · 1.5 / 2.
model_ratio = (fp32["cycles"] / 32) / (int8["cycles"] / 256)
ratio_rows = [l for l in r.stdout.splitlines() if l.startswith("| cls1 |")]
want = f"| cls1 | {model_ratio * 1.5 / 2:.2f} | {model_ratio:.2f} |"
if ratio_rows != [want]:
    failures.append(f"per-sample ratio rows {ratio_rows}, expected [{want!r}]")
# 4 threads at 0.5 efficiency: the model's time is divided by 2, so board / model doubles.
bench4 = dict(bench, threads=4)
r4 = run(bench4, "--efficiency", "0.5")
if "| int8 | cls1 | 256 |" not in r4.stdout or "| 4.00 |" not in r4.stdout:
    failures.append(f"4 threads at 0.5: {r4.stdout}{r4.stderr}")
# No modelled configuration in the bench: a clear error, exit 1.
r0 = run({"cpu": "made-up", "threads": 1, "steps": [step("int8", 7, 1.0)]})
if r0.returncode != 1 or "no step of" not in r0.stderr:
    failures.append(f"unmatched bench: exit {r0.returncode}, stderr {r0.stderr!r}")
r2 = run(bench, "--ghz", "fast")
if r2.returncode != 2 or "--ghz" not in r2.stderr:
    failures.append(f"--ghz fast: exit {r2.returncode}, stderr {r2.stderr!r}")

for f in failures:
    print("FAIL:", f)
print(f"a53_compare: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
