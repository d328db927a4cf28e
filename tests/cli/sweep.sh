#!/usr/bin/env bash
# scripts/sweep: a tiny grid (two 2-step runs) gives a CSV and a Markdown table with a row per
# run; a second call redoes nothing; a sweep killed mid-run (SIGTERM to GNU parallel, which passes
# it on: zotrain saves a checkpoint) resumes when started again and ends with the same weights as
# an uninterrupted run; one stderr line per finished run; mean ± sd over a varying seed
# (results-stats.csv) with --threads; only the grid's keys as columns while runs are pending; a
# SIGHUP to the driver stops GNU parallel and zotrain (no orphans, a checkpoint) and a rerun
# finishes with the uninterrupted run's weights.
# Usage: sweep.sh ZOTRAIN REPO OUTDIR   (exit 77 = skipped: no GNU parallel)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/sweep"
command -v parallel >/dev/null || { echo "no GNU parallel (apt-get install parallel): skipped"; exit 77; }
sweep="${repo}/scripts/sweep"
cfg="${repo}/tests/fixtures/tiny.json"
rm -rf "${out}"
mkdir -p "${out}/tmp"
# The jobs' core-share locks live in the temporary directory: a test of its own, so that sweeps
# running elsewhere on this machine neither hold this test's jobs back nor are held back by them.
export TMPDIR="${out}/tmp"
field() {  # csv run column
  python3 - "$1" "$2" "$3" <<'PY'
import csv, sys
rows = {r["run"]: r for r in csv.DictReader(open(sys.argv[1]))}
print(rows[sys.argv[2]][sys.argv[3]])
PY
}

# 1. Two 2-step runs, two at a time.
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/grid" \
  --grid method.partition=3,5 --set train.max_steps=2 --jobs 2 > "${out}/table1.md" \
  2> "${out}/grid.log"
for p in 3 5; do
  grep -Eq "^sweep: \[[12]/2\] done partition=${p}: test [0-9.]+ % in [0-9]+ s$" "${out}/grid.log" ||
    fail "no progress line for partition=${p}: $(cat "${out}/grid.log")"
done
[[ ! -e "${out}/grid/results-stats.csv" ]] || fail "results-stats.csv without a varying seed"
csv="${out}/grid/results.csv"
[[ "$(wc -l < "${csv}")" -eq 3 ]] || fail "results.csv should hold a header and 2 rows: $(cat "${csv}")"
for run in partition-3 partition-5; do
  [[ "$(field "${csv}" "${run}" status)" == done ]] || fail "${run} not done"
  [[ "$(field "${csv}" "${run}" steps)" == 2 ]] || fail "${run}: steps != 2"
  acc="$(field "${csv}" "${run}" test_accuracy)"
  [[ "${acc}" =~ ^[0-9.]+$ ]] || fail "${run}: test_accuracy '${acc}'"
done
[[ "$(field "${csv}" partition-3 method)" == elastic_zo ]] || fail "partition-3 is not elastic_zo"
[[ "$(field "${csv}" partition-5 method)" == full_zo ]] || fail "partition-5 is not full_zo"
grep -q '^| partition-3 | done | 3 |' "${out}/table1.md" || fail "Markdown table on stdout: $(cat "${out}/table1.md")"
cmp -s "${out}/table1.md" "${out}/grid/results.md" || fail "stdout differs from results.md"

# 2. Started again: nothing is rerun (the summaries are untouched), the table is the same.
before="$(stat -c %Y.%s "${out}"/grid/runs/*/summary.json)"
sleep 1
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/grid" \
  --grid method.partition=3,5 --set train.max_steps=2 --jobs 2 > "${out}/table2.md" 2> "${out}/again.log"
grep -q "2 finished, 0 to run" "${out}/again.log" || fail "second call: $(cat "${out}/again.log")"
[[ "$(stat -c %Y.%s "${out}"/grid/runs/*/summary.json)" == "${before}" ]] || fail "a finished run was redone"
cmp -s "${out}/table1.md" "${out}/table2.md" || fail "the table changed"

# 2b. Seeds: mean ± sd per partition, --threads 1 reaches zotrain; before any run (collect-only)
#     the columns are the grid's keys only, not every config key.
seeds=(--grid seed=1,2 --grid method.partition=3,5 --set train.max_steps=2)
rc=0
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/seeds" "${seeds[@]}" \
  --collect-only > /dev/null 2>&1 || rc=$?
[[ "${rc}" -eq 1 ]] || fail "--collect-only with pending runs: exit ${rc}, expected 1"
header="$(head -1 "${out}/seeds/results.csv")"
[[ "${header}" == run,status,seed,method.partition,val_accuracy,* ]] ||
  fail "pending runs: columns are not the grid's keys: ${header}"
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/seeds" "${seeds[@]}" \
  --jobs 2 --threads 1 > "${out}/seeds.md" 2> "${out}/seeds.log" || fail "seed sweep: $(cat "${out}/seeds.log")"
grep -q -- "--threads 1 " "${out}/seeds/logs/seed-2_partition-5.log" || fail "--threads 1 not passed on"
stats="${out}/seeds/results-stats.csv"
python3 - "${stats}" <<'PY' || fail "results-stats.csv: $(cat "${stats}")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["method.partition"] for r in rows] == ["3", "5"], rows
for r in rows:
    assert r["n"] == "2" and r["runs"] == "2", r
    assert float(r["test_accuracy_sd"]) >= 0 and 0 <= float(r["test_accuracy_mean"]) <= 100, r
    assert "seed" not in r, r
PY
grep -q "^| method.partition | method.name | test_accuracy mean ± sd | n | runs |" "${out}/seeds.md" ||
  fail "no seed table on stdout: $(cat "${out}/seeds.md")"

# 3. Killed and restarted. A run long enough to be caught mid-way (many short epochs, a
#    checkpoint after each), and the same run uninterrupted for reference.
long=(--set data.train_limit=256 --set data.test_limit=64 --set train.batch_size=32
      --set train.epochs=60 --set output.checkpoint_every=1)
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/ref" "${long[@]}" > /dev/null
ref="$(field "${out}/ref/results.csv" tiny weights_digest)"
setsid "${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/killed" "${long[@]}" \
  > /dev/null 2> "${out}/killed.log" &
pid=$!
for _ in $(seq 600); do
  [[ -f "${out}/killed/runs/tiny/checkpoint.safetensors" ]] && break
  sleep 0.05
done
[[ -f "${out}/killed/runs/tiny/checkpoint.safetensors" ]] || fail "no checkpoint after 30 s"
pkill -TERM -f "parallel --will-cite .*${out}/killed/" || fail "GNU parallel is not running"
rc=0
wait "${pid}" || rc=$?
[[ "${rc}" -ne 0 ]] || fail "the killed sweep reported success"
[[ ! -f "${out}/killed/runs/tiny/summary.json" ]] || fail "the run finished before it was killed (make it longer)"
grep -q "interrupted: checkpoint saved" "${out}/killed/logs/tiny.log" || fail "zotrain saved no checkpoint on SIGTERM: $(tail -5 "${out}/killed/logs/tiny.log")"
[[ "$(field "${out}/killed/results.csv" tiny status)" == interrupted ]] || fail "status is not 'interrupted'"
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/killed" "${long[@]}" > /dev/null
grep -q "interrupted earlier; resuming" "${out}/killed/logs/tiny.log" || fail "the rerun did not resume"
got="$(field "${out}/killed/results.csv" tiny weights_digest)"
[[ "${got}" == "${ref}" ]] || fail "resumed weights ${got} != uninterrupted ${ref}"
# 4. Every core share held (by another sweep): a job waits for one instead of running on all
#    cores beside them, says so, and runs once a share is free.
uid="$(id -u)"
# The holders keep their shares until told to go, and the sweep starts only once both are held,
# so nothing here depends on how fast a loaded machine starts a process.
release="${out}/release-shares"
: > "${release}"
for share in 0 1; do
  flock "${TMPDIR}/zotrain-sweep-${uid}-share-${share}.lock" \
    bash -c "while [[ -e '${release}' ]]; do sleep 0.1; done" &
done
for share in 0 1; do
  for _ in $(seq 300); do
    flock -n "${TMPDIR}/zotrain-sweep-${uid}-share-${share}.lock" true || break
    sleep 0.1
  done
  flock -n "${TMPDIR}/zotrain-sweep-${uid}-share-${share}.lock" true &&
    fail "the holder of core share ${share} never took its lock"
done
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/busy" --set train.max_steps=2 \
  --jobs 2 > /dev/null 2> "${out}/busy.log" &
sweep_pid=$!
for _ in $(seq 600); do
  grep -q "core shares are busy; waiting" "${out}/busy.log" 2> /dev/null && break
  sleep 0.1
done
grep -q "core shares are busy; waiting" "${out}/busy.log" || fail "no wait reported: $(cat "${out}/busy.log")"
! grep -qs "cores \[" "${out}/busy/logs/tiny.log" || fail "the job started while every core share was held"
rm -f "${release}"
wait "${sweep_pid}" || fail "the sweep with busy shares failed: $(cat "${out}/busy.log")"
wait
grep -q "cores \[[0-9]*\]" "${out}/busy/logs/tiny.log" ||
  fail "the job did not run on a share of its own: $(head -1 "${out}/busy/logs/tiny.log")"
# 5. SIGHUP (a lost ssh connection) to the driver: GNU parallel and zotrain stop (the run saves a
#    checkpoint) instead of running on orphaned; the driver says so in OUT/sweep.log, exits 129,
#    and the same command resumes to the uninterrupted weights.
setsid "${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/hup" "${long[@]}" \
  > /dev/null 2> "${out}/hup.log" &
pid=$!
for _ in $(seq 600); do
  [[ -f "${out}/hup/runs/tiny/checkpoint.safetensors" ]] && break
  sleep 0.05
done
[[ -f "${out}/hup/runs/tiny/checkpoint.safetensors" ]] || fail "no checkpoint after 30 s (SIGHUP case)"
pgrep -f -- "--output-dir ${out}/hup/runs/tiny" > /dev/null || fail "zotrain is not running (SIGHUP case)"
kill -HUP -- "-${pid}"  # the driver's process group, as a hang-up does
rc=0
wait "${pid}" || rc=$?
[[ "${rc}" -eq 129 ]] || fail "after SIGHUP the sweep exited ${rc}, expected 129"
sleep 1
! pgrep -f -- "--output-dir ${out}/hup/runs/tiny" > /dev/null || fail "zotrain left running after SIGHUP"
! pgrep -f -- "parallel --will-cite .*${out}/hup/" > /dev/null || fail "GNU parallel left running after SIGHUP"
grep -q "got SIGHUP: stopping the running jobs.*nohup" "${out}/hup/sweep.log" ||
  fail "no SIGHUP note in sweep.log: $(cat "${out}/hup/sweep.log" "${out}/hup.log")"
grep -q "interrupted: checkpoint saved" "${out}/hup/logs/tiny.log" || fail "no checkpoint on SIGHUP"
"${sweep}" --zotrain "${zotrain}" --config "${cfg}" --out "${out}/hup" "${long[@]}" > /dev/null 2>&1 ||
  fail "the rerun after SIGHUP failed"
got_hup="$(field "${out}/hup/results.csv" tiny weights_digest)"
[[ "${got_hup}" == "${ref}" ]] || fail "resumed after SIGHUP: ${got_hup} != uninterrupted ${ref}"
echo "sweep: grid, skip, seeds, kill and resume, SIGHUP, waiting for a core share all fine (digest ${got})"
