"""Sweeps of zotrain runs: a list of runs (a grid or a reproduction script's plan) run with GNU
parallel, locally or on boards, then one CSV / Markdown table with a row per run.

Layout of a sweep directory OUT:
    OUT/jobs/<run>.json    what each run is (config, --set values, --init-from, labels)
    OUT/runs/<run>/        the run's own output directory (config.json, metrics.jsonl, ...)
    OUT/logs/<run>.log     its stderr (zotrain's log) and the job's notes
    OUT/joblogs/<time>.log GNU parallel's job log of each invocation (exit codes, times, hosts)
    OUT/results.csv, OUT/results.md
A run whose directory holds summary.json is finished and never run again; one with a checkpoint
but no summary is resumed (scripts/lib/sweep_job.py). Standard library only (Debian python3).
"""
import csv
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB_SCRIPT = os.path.join(REPO, "scripts", "lib", "sweep_job.py")


def log(msg):
    print(f"sweep: {msg}", file=sys.stderr, flush=True)


@dataclass
class Run:
    name: str                 # directory name under OUT/runs (unique in the sweep)
    config: str               # base config file
    sets: list = field(default_factory=list)    # ["KEY=VALUE", ...]
    init_from: str = None     # a run directory (or checkpoint) to start from
    labels: dict = field(default_factory=dict)  # extra columns for the tables


def default_zotrain():
    """The repository's host build if there is one, else zotrain on PATH."""
    built = os.path.join(REPO, "build", "host", "zotrain")
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("zotrain")
    if not found:
        raise SystemExit("sweep: error: no zotrain (build it: cmake --preset host && "
                         "cmake --build build/host; or install the package; or pass --zotrain)")
    return found


# ---- a grid -------------------------------------------------------------------------------

def parse_axis(text):
    """'KEY=v1,v2' or 'KEY=[json list]' -> (KEY, [values as --set text])."""
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise SystemExit(f"sweep: error: --grid '{text}': expected KEY=V1,V2,... "
                         "or KEY=[JSON list]")
    if values.lstrip().startswith("["):
        try:
            items = json.loads(values)
        except json.JSONDecodeError as e:
            raise SystemExit(f"sweep: error: --grid {key}: not a JSON list: {e}")
        return key, [v if isinstance(v, str) else json.dumps(v) for v in items]
    return key, [v for v in values.split(",") if v != ""]


def slug(text):
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-") or "x"


def grid_runs(configs, axes, fixed_sets):
    """The cartesian product of configs and axes; names say the varying values."""
    keys = [k for k, _ in axes]
    leaves = [k.rsplit(".", 1)[-1] for k in keys]
    short = [leaf if leaves.count(leaf) == 1 else k for k, leaf in zip(keys, leaves)]
    runs = []
    for cfg in configs:
        for combo in itertools.product(*[v for _, v in axes]):
            parts = [os.path.splitext(os.path.basename(cfg))[0]] if len(configs) > 1 else []
            parts += [f"{s}={v}" for s, v in zip(short, combo)]
            name = slug("_".join(parts)) if parts else slug(
                os.path.splitext(os.path.basename(cfg))[0])
            runs.append(Run(name=name, config=os.path.abspath(cfg),
                            sets=list(fixed_sets) + [f"{k}={v}" for k, v in zip(keys, combo)],
                            labels=dict(zip(keys, combo))))
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise SystemExit("sweep: error: two runs of the grid get the same name "
                         "(repeated values?)")
    return runs


# ---- running ------------------------------------------------------------------------------

def write_jobs(out, runs):
    for sub in ("jobs", "runs", "logs"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    files = []
    for r in runs:
        job = {"name": r.name, "run_dir": os.path.join(out, "runs", r.name),
               "config": os.path.abspath(r.config), "set": r.sets,
               "init_from": os.path.abspath(r.init_from) if r.init_from else None,
               "log": os.path.join(out, "logs", r.name + ".log"), "labels": r.labels}
        path = os.path.join(out, "jobs", r.name + ".json")
        text = json.dumps(job, indent=1) + "\n"
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
        files.append(path)
    return files


def is_done(out, name):
    return os.path.exists(os.path.join(out, "runs", name, "summary.json"))


def run_all(out, runs, jobs=1, sshloginfile=None, zotrain=None, parallel_args=()):
    """Runs every unfinished run with GNU parallel; returns the number of failed jobs.
    Needs the same paths on every host (a shared file system) when sshloginfile is given."""
    out = os.path.abspath(out)
    files = write_jobs(out, runs)
    todo = [f for r, f in zip(runs, files) if not is_done(out, r.name)]
    log(f"{len(runs)} runs in {out}: {len(runs) - len(todo)} finished, {len(todo)} to run "
        f"({jobs} at a time{' per host' if sshloginfile else ''})")
    if not todo:
        return 0
    if shutil.which("parallel") is None:
        raise SystemExit("sweep: error: GNU parallel not found (apt-get install parallel)")
    zotrain = zotrain or default_zotrain()
    # One job log per invocation: sweeps sharing OUT (the reproduce scripts do) may overlap.
    os.makedirs(os.path.join(out, "joblogs"), exist_ok=True)
    joblog = os.path.join(out, "joblogs", time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}.log")
    cmd = ["parallel", "--will-cite", "--jobs", str(jobs), "--joblog", joblog, "--line-buffer"]
    if sshloginfile:
        cmd += ["--sshloginfile", sshloginfile, "--workdir", out]
    cmd += list(parallel_args)
    cmd += ["python3", JOB_SCRIPT, "--jobs-per-host", str(jobs), "--zotrain", zotrain, "{}",
            ":::"] + todo
    proc = subprocess.Popen(cmd)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        # parallel passes the signal on; zotrain saves checkpoints, so a rerun resumes.
        log("interrupted: waiting for the running jobs to save their checkpoints")
        proc.send_signal(signal.SIGINT)
        proc.wait()
        raise
    if 0 < rc <= 100:  # GNU parallel's exit code counts the failed jobs up to 100
        log(f"{rc} job(s) failed; see {out}/logs/<run>.log and {joblog}")
    elif rc:
        log(f"GNU parallel stopped with exit code {rc} (101: more than 100 jobs failed; "
            f"otherwise stopped by a signal or an error); a rerun resumes")
    return rc


# ---- collecting ---------------------------------------------------------------------------

def flatten(d, prefix=""):
    flat = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(flatten(v, key + "."))
        elif not isinstance(v, list):
            flat[key] = v
    return flat


def read_jsonl(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    return rows


def run_record(out, name):
    """Everything known about one run: labels, config, summary, per-epoch metrics."""
    d = os.path.join(out, "runs", name)
    rec = {"name": name, "dir": d}
    with open(os.path.join(out, "jobs", name + ".json")) as f:
        rec["job"] = json.load(f)
    rec["config"] = json.load(open(os.path.join(d, "config.json"))) \
        if os.path.exists(os.path.join(d, "config.json")) else {}
    rec["summary"] = json.load(open(os.path.join(d, "summary.json"))) \
        if os.path.exists(os.path.join(d, "summary.json")) else None
    rec["metrics"] = [m for m in read_jsonl(os.path.join(d, "metrics.jsonl")) if "epoch" in m]
    if rec["summary"] is not None:
        rec["status"] = "done"
    elif os.path.exists(os.path.join(d, "checkpoint.safetensors")):
        rec["status"] = "interrupted"
    elif rec["config"]:
        rec["status"] = "incomplete"  # failed, or still before its first checkpoint
    else:
        rec["status"] = "pending"
    return rec


RESULT_KEYS = ["val_accuracy", "best_val_accuracy", "val_loss", "test_accuracy", "test_loss",
               "train_loss", "best_test_accuracy", "epochs",
               "steps", "train_seconds", "step_seconds_mean", "method", "partition",
               "weights_digest", "memory.paper.total", "memory.planned_bytes",
               "memory.peak_rss_bytes"]


def collect(out, names=None, settings=()):
    """Rows (dicts) for every run of the sweep directory (or the given names): status, labels,
    the config keys that vary among the runs, those under the prefixes in `settings` whether
    they vary or not (so that rows from separate invocations, merged, still say what ran), and
    the results."""
    out = os.path.abspath(out)
    if names is None:
        names = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(out, "jobs"))
                       if f.endswith(".json"))
    recs = [run_record(out, n) for n in names]
    flat_cfgs = [flatten(r["config"]) for r in recs]
    all_keys = sorted({k for c in flat_cfgs for k in c})
    varying = [k for k in all_keys
               if k not in ("name", "output.dir")
               and (len({json.dumps(c.get(k)) for c in flat_cfgs}) > 1
                    or k.startswith(tuple(settings)))]
    rows = []
    for r, c in zip(recs, flat_cfgs):
        row = {"run": r["name"], "status": r["status"]}
        for k, v in r["job"].get("labels", {}).items():
            row[k] = v
        for k in varying:
            row.setdefault(k, c.get(k))
        s = flatten(r["summary"]) if r["summary"] else {}
        m = r["metrics"]
        s["train_loss"] = m[-1].get("train_loss") if m else None
        for split in ("test", "val"):
            accs = [x[f"{split}_accuracy"] for x in m if x.get(f"{split}_accuracy") is not None]
            s[f"best_{split}_accuracy"] = max(accs) if accs else None
        for k in RESULT_KEYS:  # a label of the same name (table1's "method": cls2) is kept
            row.setdefault(k, s.get(k))
        rows.append(row)
    return rows


def columns_of(rows):
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def write_csv(path, rows):
    cols = columns_of(rows)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
    os.replace(tmp, path)


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(lines) + "\n"


def write_markdown(path, rows):
    keys = ["run", "status"] + [k for k in columns_of(rows)
                                if k not in RESULT_KEYS and k not in ("run", "status")]
    if any(r.get("val_accuracy") is not None for r in rows):  # data.validation: choose on these
        keys += ["val_accuracy", "best_val_accuracy", "val_loss"]
    keys += ["test_accuracy", "best_test_accuracy", "test_loss", "train_loss", "epochs",
             "train_seconds"]
    text = markdown_table(keys, [[fmt(r.get(k)) for k in keys] for r in rows])
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return text
