#!/usr/bin/env bash
# One writer per run directory (src/run/run_folder.hpp): while a run trains in DIR (here held
# still with SIGSTOP, so the timing is the test's), a second `--overwrite --output-dir DIR` and a
# `--resume DIR` exit 2 with an error naming DIR and the holder's pid, and change nothing; the
# holder killed with SIGKILL does not block: `--resume DIR` then continues it to the end, every
# epoch and step logged once, in order. Two `--overwrite --output-dir DIR` started together:
# exactly one runs (exit 0), the other is refused (exit 2), and metrics.jsonl holds each epoch once.
# Usage: run_lock.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/run-lock"
fresh_dir "${out}"
args=(--config "${repo}/tests/fixtures/tiny.json" --set "data.root=${repo}/data/mnist-subset"
      --set data.train_limit=128 --set data.test_limit=32 --set train.threads=1
      --set train.log_every=1 --no-progress -q)

# records_once DIR EPOCHS: metrics.jsonl holds epochs 1..EPOCHS, steps.jsonl steps 1..N, once each.
records_once() {
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "$1: records duplicated or out of order (above)"
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
epochs = [json.loads(l)["epoch"] for l in open(os.path.join(d, "metrics.jsonl"))]
steps = [json.loads(l)["step"] for l in open(os.path.join(d, "steps.jsonl"))]
if epochs != list(range(1, n + 1)): sys.exit(f"metrics.jsonl holds epochs {epochs}")
if steps != list(range(1, len(steps) + 1)): sys.exit(f"steps.jsonl holds steps {steps}")
PY
}

# refused WHAT LOG: exit 2 (in $code) and the holder named.
refused() {
  [[ ${code} -eq 2 ]] || fail "$1: exit ${code}, expected 2: $(tail -3 "$2")"
  grep -qF "output directory '${dir}' is in use by another zotrain run (pid ${holder} on host " "$2" ||
    fail "$1: the error does not name the directory and the holder (pid ${holder}): $(cat "$2")"
  grep -qF "${dir}/.zotrain-lock" "$2" || fail "$1: the error does not name the lock file: $(cat "$2")"
  echo "$1: refused: $(grep -o 'error .*' "$2" | cut -c1-160)..."
}

# --- A run in DIR, stopped (SIGSTOP) once it has finished an epoch: it holds the lock.
dir="${out}/held"
"${zotrain}" "${args[@]}" --set train.epochs=1000 --output-dir "${dir}" > /dev/null 2> "${out}/holder.log" &
holder=$!
for _ in $(seq 600); do
  [[ -s "${dir}/metrics.jsonl" ]] && break
  kill -0 "${holder}" 2> /dev/null || fail "the holder ended early: $(tail -3 "${out}/holder.log")"
  sleep 0.05
done
kill -STOP "${holder}"
snapshot() { (cd "${dir}" && find . -type f ! -name '*.tmp' -exec sha256sum {} + | sort); }
before="$(snapshot)"
set +e
"${zotrain}" "${args[@]}" --set train.epochs=1 --output-dir "${dir}" --overwrite > /dev/null 2> "${out}/overwrite.log"
code=$?
set -e
refused "--overwrite while another run trains" "${out}/overwrite.log"
set +e
"${zotrain}" --resume "${dir}" --no-progress -q > /dev/null 2> "${out}/resume.log"
code=$?
set -e
refused "--resume while another run trains" "${out}/resume.log"
[[ "$(snapshot)" == "${before}" ]] || fail "a refused run changed files of the run directory"

# --- The holder killed with SIGKILL: its lock goes with it; --resume continues to the end.
kill -KILL "${holder}"
wait "${holder}" 2> /dev/null || true
epochs=$(( $(wc -l < "${dir}/metrics.jsonl") + 2 ))
"${zotrain}" --resume "${dir}" --set train.epochs=${epochs} --no-progress -q > /dev/null 2> "${out}/after.log" ||
  fail "--resume after the holder was killed: exit $?: $(tail -3 "${out}/after.log")"
records_once "${dir}" "${epochs}"
echo "--resume after SIGKILL of the holder: ran to epoch ${epochs}, every record once"

# --- Two --overwrite runs into one directory, started together: one runs, one is refused.
dir="${out}/together"
mkdir -p "${dir}"
pids=()
for i in 1 2; do
  "${zotrain}" "${args[@]}" --set train.epochs=6 --set data.train_limit=256 --output-dir "${dir}" --overwrite \
    > /dev/null 2> "${out}/together-${i}.log" &
  pids+=($!)
done
ok=0 no=0
for i in 1 2; do
  set +e; wait "${pids[$(( i - 1 ))]}"; code=$?; set -e
  if [[ ${code} -eq 0 ]]; then
    ok=$(( ok + 1 ))
  else
    holder="${pids[$(( 2 - i ))]}"
    refused "two --overwrite at once (run ${i})" "${out}/together-${i}.log"
    no=$(( no + 1 ))
  fi
done
[[ ${ok} -eq 1 && ${no} -eq 1 ]] || fail "two --overwrite at once: ${ok} ran, ${no} refused (expected 1 and 1)"
records_once "${dir}" 6
echo "run-lock: one writer per directory"
