#!/usr/bin/python3
"""One job of a sweep (scripts/sweep), run by GNU parallel on this machine or on a board.

    sweep_job.py --jobs-per-host N [--threads T] [--zotrain PATH] JOBFILE

JOBFILE is the JSON written by scripts/lib/zotrain_sweep.py: {"name", "run_dir", "config",
"set": [KEY=VALUE, ...], "init_from": DIR or null, "log": FILE}. What the job does depends on the
run directory, so a sweep can be killed and started again:
  - summary.json there: the run finished; nothing to do.
  - checkpoint.safetensors there: the run was interrupted; `zotrain --resume` continues it.
  - otherwise: a fresh run (replacing what a run killed before its first checkpoint left).
The job claims one of N equal shares of this host's cores (a lock file per share in the
temporary directory, held for the job's life; when every share is taken, e.g. by another sweep
on this host, it waits for one), pins itself to them and gives zotrain that many threads. With
--threads T the job takes T cores instead of its share: share k is pinned to cores k*T .. k*T+T-1
(modulo the host's cores, so N*T above the core count shares cores) and zotrain gets --threads T.
zotrain's stderr goes to the job's log file; exec keeps its exit code and its signal handling
(SIGTERM or SIGINT: checkpoint, exit 143 / 130).
Standard library only: boards have python3 but may lack anything else.
"""
import argparse
import fcntl
import json
import os
import sys
import tempfile
import time


def claim_share(jobs_per_host, threads=None):
    """Locks one of jobs_per_host core shares; returns (fd, cores): the share's cores, or with
    threads T, T cores from k*T on (wrapping around the host's cores)."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        list(range(os.cpu_count() or 1))
    shares = max(1, min(jobs_per_host, len(cores)))
    per = len(cores) // shares
    lock_dir = tempfile.gettempdir()
    waited = False
    while True:
        for k in range(jobs_per_host):
            path = os.path.join(lock_dir, f"zotrain-sweep-{os.getuid()}-share-{k}.lock")
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if threads:
                mine = [cores[(k * threads + i) % len(cores)] for i in range(threads)]
                return fd, sorted(set(mine))
            k_share = k % shares
            return fd, cores[k_share * per:(k_share + 1) * per]
        # Every share is taken: by another sweep on this host, or by a run of this one still
        # writing its checkpoint after a stop. Running on all cores beside them would
        # oversubscribe every core (OpenMP threads spinning against each other), so wait.
        if not waited:
            print(f"sweep-job: all {jobs_per_host} core shares are busy; waiting for one",
                  file=sys.stderr, flush=True)
            waited = True
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs-per-host", type=int, required=True)
    ap.add_argument("--threads", type=int, help="zotrain threads (default: the share's cores)")
    ap.add_argument("--zotrain", default="zotrain")
    ap.add_argument("jobfile")
    a = ap.parse_args()
    with open(a.jobfile) as f:
        job = json.load(f)
    run_dir = job["run_dir"]
    log = open(job["log"], "a")

    def say(msg):
        print(f"sweep-job: {job['name']}: {msg}", file=log, flush=True)

    if os.path.exists(os.path.join(run_dir, "summary.json")):
        say("finished earlier; skipped")
        return 0
    fd, cores = claim_share(a.jobs_per_host, a.threads)
    if fd is not None:
        os.set_inheritable(fd, True)  # the lock lives as long as zotrain does
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)
    common = ["--threads", str(a.threads or len(cores)), "--no-progress"]
    if os.path.exists(os.path.join(run_dir, "checkpoint.safetensors")):
        cmd = [a.zotrain, "--resume", run_dir] + common
        say("interrupted earlier; resuming")
    else:
        cmd = [a.zotrain, "--config", job["config"], "--output-dir", run_dir] + common
        for kv in job["set"]:
            cmd += ["--set", kv]
        if job.get("init_from"):
            cmd += ["--init-from", job["init_from"]]
        if os.path.isdir(run_dir) and os.listdir(run_dir):
            cmd.append("--overwrite")  # killed before its first checkpoint: start again
    say(f"cores {cores}: {' '.join(cmd)}")
    os.dup2(log.fileno(), 2)
    # Results stay in the run directory; zotrain's stdout line goes to the log as well.
    os.dup2(log.fileno(), 1)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        say(f"cannot run {cmd[0]}: {e}")
        return 127


if __name__ == "__main__":
    sys.exit(main())
