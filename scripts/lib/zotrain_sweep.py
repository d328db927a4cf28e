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


class Stopped(KeyboardInterrupt):
    """The driver got SIGHUP or SIGTERM; its jobs were stopped (their checkpoints saved). A
    KeyboardInterrupt, so that callers handling Ctrl-C (scripts/lib/paper.py) handle it too."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def short_keys(keys):
    """A key's last component when no other key shares it, else the whole key."""
    leaves = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (leaf if leaves.count(leaf) == 1 else k) for k, leaf in zip(keys, leaves)}


def pct(v):
    return f"{v:.1f} %" if isinstance(v, (int, float)) else "?"


class Progress:
    """Reads GNU parallel's job log as it grows and says one line per finished run."""

    def __init__(self, out, runs, todo_runs, joblog):
        self.out, self.joblog, self.total = out, joblog, len(runs)
        self.count = len(runs) - len(todo_runs)
        self.todo = {r.name: r for r in todo_runs}
        keys = []
        for r in runs:
            keys += [k for k in r.labels if k not in keys]
        self.short = short_keys(keys)
        self.offset = 0
        self.partial = ""

    def poll(self):
        try:
            with open(self.joblog) as f:
                f.seek(self.offset)
                text = f.read()
                self.offset = f.tell()
        except OSError:
            return
        text = self.partial + text
        lines = text.split("\n")
        self.partial = lines.pop()
        for line in lines:
            self.finished(line)

    def finished(self, line):
        fields = line.split("\t")
        if len(fields) < 9 or fields[0] == "Seq":
            return
        command = fields[8].rstrip().rstrip("'\"")
        run = next((r for n, r in self.todo.items() if command.endswith("/" + n + ".json")),
                   None)
        if run is None:
            return
        del self.todo[run.name]
        self.count += 1
        try:
            seconds, exitval, sig = float(fields[3]), int(fields[6]), int(fields[7])
        except ValueError:
            seconds, exitval, sig = 0.0, -1, 0
        values = " ".join(f"{self.short[k]}={v}" for k, v in run.labels.items()) or run.name
        summary_path = os.path.join(self.out, "runs", run.name, "summary.json")
        summary = None
        if exitval == 0 and os.path.exists(summary_path):
            try:
                with open(summary_path) as f:
                    summary = json.load(f)
            except (OSError, ValueError):
                summary = None
        if summary is not None:
            acc = f"test {pct(summary.get('test_accuracy'))}"
            if summary.get("val_accuracy") is not None:
                acc = f"val {pct(summary.get('val_accuracy'))}, " + acc
            log(f"[{self.count}/{self.total}] done {values}: {acc} in {seconds:.0f} s")
        else:
            if exitval in (130, 143) or sig:
                status = "interrupted"
            else:
                status = f"failed (exit {exitval})"
            log(f"[{self.count}/{self.total}] {status} {values} after {seconds:.0f} s: "
                f"see {os.path.join(self.out, 'logs', run.name + '.log')}")


def run_all(out, runs, jobs=1, sshloginfile=None, zotrain=None, parallel_args=(), threads=None):
    """Runs every unfinished run with GNU parallel; returns the number of failed jobs.
    Needs the same paths on every host (a shared file system) when sshloginfile is given.
    threads: each job's zotrain --threads (default: its share of the host's cores).
    Says one line per finished run on stderr. SIGHUP (a lost terminal) or SIGTERM stops the
    jobs (zotrain saves a checkpoint) and raises Stopped; Ctrl-C raises KeyboardInterrupt."""
    out = os.path.abspath(out)
    files = write_jobs(out, runs)
    todo = [(r, f) for r, f in zip(runs, files) if not is_done(out, r.name)]
    log(f"{len(runs)} runs in {out}: {len(runs) - len(todo)} finished, {len(todo)} to run "
        f"({jobs} at a time{' per host' if sshloginfile else ''}"
        f"{f', {threads} threads each' if threads else ''})")
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
    cmd += ["python3", JOB_SCRIPT, "--jobs-per-host", str(jobs), "--zotrain", zotrain]
    if threads:
        cmd += ["--threads", str(threads)]
    cmd += ["{}", ":::"] + [f for _, f in todo]
    progress = Progress(out, runs, [r for r, _ in todo], joblog)
    # GNU parallel and its jobs get a session of their own: a hang-up of the terminal reaches
    # only this driver, which stops them itself (below) instead of leaving them orphaned.
    got = []

    def on_signal(signum, _frame):
        got.append(signum)

    # Under nohup SIGHUP stays ignored: the sweep then outlives the terminal, as asked.
    caught = [s for s in (signal.SIGHUP, signal.SIGTERM) if signal.getsignal(s) != signal.SIG_IGN]
    old = {s: signal.signal(s, on_signal) for s in caught}
    proc = subprocess.Popen(cmd, start_new_session=True)
    stopping = False
    try:
        while True:
            try:
                rc = proc.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                pass
            progress.poll()
            if got and not stopping:
                stopping = True
                if got[0] == signal.SIGHUP:
                    detach_output(out)
                log(f"got {signal.Signals(got[0]).name}: stopping the running jobs (each saves "
                    "a checkpoint; the same command resumes them). For a sweep that outlives "
                    "the terminal, start it with nohup or inside tmux/screen.")
                proc.send_signal(signal.SIGTERM)
    except KeyboardInterrupt:
        # zotrain saves checkpoints on SIGTERM (GNU parallel passes it on), so a rerun resumes.
        log("interrupted: waiting for the running jobs to save their checkpoints")
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        progress.poll()
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    progress.poll()
    if got:
        raise Stopped(got[0])
    if 0 < rc <= 100:  # GNU parallel's exit code counts the failed jobs up to 100
        log(f"{rc} job(s) failed; see {out}/logs/<run>.log and {joblog}")
    elif rc:
        log(f"GNU parallel stopped with exit code {rc} (101: more than 100 jobs failed; "
            f"otherwise stopped by a signal or an error); a rerun resumes")
    return rc


def detach_output(out):
    """After a hang-up the terminal is gone: stdout and stderr go to OUT/sweep.log instead."""
    fd = os.open(os.path.join(out, "sweep.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


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
    # A run without a config.json yet (pending) says nothing about which keys vary: compare only
    # the runs that have one (a pending run's grid values are in its labels).
    known = [c for c in flat_cfgs if c]
    all_keys = sorted({k for c in known for k in c})
    varying = [k for k in all_keys
               if k not in ("name", "output.dir")
               and (len({json.dumps(c.get(k)) for c in known}) > 1
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


def param_keys(rows):
    """The columns that say what a run is (labels and varying config keys), not its results."""
    return [k for k in columns_of(rows) if k not in RESULT_KEYS and k not in ("run", "status")]


def seed_keys(keys):
    return [k for k in keys if k.rsplit(".", 1)[-1] == "seed"]


def mean_sd(values):
    """(mean, sample sd with n-1, n); sd is None for n < 2, mean None for n = 0."""
    n = len(values)
    if n == 0:
        return None, None, 0
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else None
    return mean, sd, n


def seed_stats(rows):
    """Rows of mean, sd and n over seeds of the final test (and validation) accuracy of the
    finished runs, one per combination of the other varying keys (in order of appearance);
    None when no seed key varies."""
    keys = param_keys(rows)
    seeds = seed_keys(keys)
    if not seeds:
        return None
    # The thread count is how a run ran, not what it is: runs differing only in it are grouped.
    group_keys = [k for k in keys if k not in seeds and k != "train.threads"]
    metrics = ["test_accuracy"]
    if any(r.get("val_accuracy") is not None for r in rows):
        metrics.insert(0, "val_accuracy")
    groups = {}
    for r in rows:
        g = tuple(json.dumps(r.get(k)) for k in group_keys)
        groups.setdefault(g, []).append(r)
    stats = []
    for members in groups.values():
        row = {k: members[0].get(k) for k in group_keys}
        done = [r for r in members if r.get("status") == "done"]
        for m in metrics:
            mean, sd, n = mean_sd([r[m] for r in done if isinstance(r.get(m), (int, float))])
            row[f"{m}_mean"], row[f"{m}_sd"] = mean, sd
            row.setdefault("n", n)  # the first metric's count (test and val come together)
        row["runs"] = len(members)
        stats.append(row)
    return stats


def stats_markdown(stats):
    keys = [k for k in columns_of(stats) if k not in ("n", "runs")
            and not k.endswith(("_mean", "_sd"))]
    metrics = [k[:-5] for k in columns_of(stats) if k.endswith("_mean")]
    header = keys + [f"{m} mean ± sd" for m in metrics] + ["n", "runs"]

    def cell(r, m):
        mean, sd = r.get(f"{m}_mean"), r.get(f"{m}_sd")
        if mean is None:
            return ""
        return f"{mean:.2f}" + (f" ± {sd:.2f}" if sd is not None else "")

    body = [[fmt(r.get(k)) for k in keys] + [cell(r, m) for m in metrics] + [r["n"], r["runs"]]
            for r in stats]
    return ("\nOver seeds (mean ± sample sd of the finished runs' final accuracy; n finished "
            "of runs):\n\n" + markdown_table(header, body))


def write_markdown(path, rows, extra=""):
    keys = ["run", "status"] + [k for k in columns_of(rows)
                                if k not in RESULT_KEYS and k not in ("run", "status")]
    if any(r.get("val_accuracy") is not None for r in rows):  # data.validation: choose on these
        keys += ["val_accuracy", "best_val_accuracy", "val_loss"]
    keys += ["test_accuracy", "best_test_accuracy", "test_loss", "train_loss", "epochs",
             "train_seconds"]
    text = markdown_table(keys, [[fmt(r.get(k)) for k in keys] for r in rows]) + extra
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return text
