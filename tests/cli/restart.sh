#!/usr/bin/env bash
# Always-right restarts, what an unattended board needs (`Restart=on-failure` with
# `zotrain --resume DIR`, examples/zotrain-train.service):
# 1. a run killed (SIGKILL) before its first checkpoint: `--resume DIR` starts it afresh from
#    DIR/config.json, says so, and ends with the uninterrupted run's weights and its records once;
# 2. a directory with neither a checkpoint nor config.json is still an error: exit 2 naming
#    DIR/config.json; a dry run's directory (how docs/board.md sets one up) is started by
#    `--resume DIR`, to the same weights;
# 3. checkpoints by time (output.checkpoint_minutes, here tiny: after every step, mid-epoch):
#    killed with SIGKILL at random moments, every kill loses at most one step, checkpoints land
#    mid-epoch, and the resumed runs end with the uninterrupted run's weights, bit for bit.
# Usage: restart.sh ZOTRAIN REPO OUTDIR [SEED (default 1)]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/restart" seed="${4:-1}"
fresh_dir "${out}"
RANDOM="${seed}"
steps_per_epoch=4 epochs=6
args=(--config "${repo}/tests/fixtures/tiny.json" --set "data.root=${repo}/data/mnist-subset"
      --set data.train_limit=$(( 32 * steps_per_epoch )) --set data.test_limit=32
      --set train.epochs=${epochs} --set train.threads=1 --set train.log_every=1
      --set output.checkpoint_every=0 --no-progress -q)
digest_of() { json_field "$1/summary.json" 's["weights_digest"]'; }

# start_and_kill DIR STEPS CMD...: runs CMD and kills it with SIGKILL once DIR/steps.jsonl holds
# STEPS records; returns CMD's exit code (0: it finished first).
start_and_kill() {
  local d="$1" n="$2"; shift 2
  "$@" > /dev/null 2> "${d}.log" &
  local pid=$!
  while kill -0 "${pid}" 2> /dev/null; do
    if [[ -f "${d}/steps.jsonl" ]] && (( $(wc -l < "${d}/steps.jsonl") >= n )); then
      kill -KILL "${pid}" 2> /dev/null || true
      break
    fi
    sleep 0.005
  done
  local rc=0
  wait "${pid}" 2> /dev/null || rc=$?
  return "${rc}"
}

"${zotrain}" "${args[@]}" --output-dir "${out}/reference" > /dev/null 2> "${out}/reference.log" ||
  fail "the uninterrupted run failed: $(tail -3 "${out}/reference.log")"
ref="$(digest_of "${out}/reference")"

# --- 1. Killed before its first checkpoint (checkpoints only at the end and by time, off here).
dir="${out}/no-checkpoint"
killed=0
for attempt in 1 2 3 4 5; do
  rm -rf "${dir}"
  rc=0
  start_and_kill "${dir}" 3 "${zotrain}" "${args[@]}" --set output.checkpoint_minutes=0 --output-dir "${dir}" || rc=$?
  [[ ${rc} -eq 137 ]] && { killed=1; break; }
  [[ ${rc} -eq 0 ]] || fail "no checkpoint: the run exited ${rc}: $(tail -3 "${dir}.log")"
done
(( killed )) || fail "no checkpoint: five runs finished before their kill"
[[ -f "${dir}/config.json" && ! -e "${dir}/checkpoint.safetensors" ]] ||
  fail "no checkpoint: the kill did not land before the first checkpoint"
"${zotrain}" --resume "${dir}" --no-progress > /dev/null 2> "${dir}.log" ||
  fail "no checkpoint: --resume failed: exit $?: $(tail -3 "${dir}.log")"
grep -qF "no checkpoint yet: starting the run afresh from ${dir}/config.json" "${dir}.log" ||
  fail "no checkpoint: the restart is not logged: $(cat "${dir}.log")"
finished "${dir}" "${ref}" "no checkpoint: --resume"
echo "killed before its first checkpoint: --resume started it afresh from config.json, same weights"

# --- 2. Neither a checkpoint nor config.json.
dir="${out}/nothing"
mkdir -p "${dir}"
set +e; "${zotrain}" --resume "${dir}" --no-progress -q > /dev/null 2> "${dir}.log"; code=$?; set -e
[[ ${code} -eq 2 ]] || fail "nothing to resume: exit ${code}, expected 2: $(cat "${dir}.log")"
grep -qF "${dir}/config.json" "${dir}.log" || fail "nothing to resume: the error does not name config.json: $(cat "${dir}.log")"
[[ -z "$(ls -A "${dir}")" ]] || fail "nothing to resume: something was written"
echo "neither checkpoint nor config.json: $(grep -o 'error .*' "${dir}.log")"
dir="${out}/dry"
"${zotrain}" "${args[@]}" --output-dir "${dir}" --dry-run > /dev/null 2> "${dir}.log" ||
  fail "dry run: exit $?: $(tail -3 "${dir}.log")"
"${zotrain}" --resume "${dir}" --no-progress > /dev/null 2> "${dir}.log" ||
  fail "--resume of a dry run's directory: exit $?: $(tail -3 "${dir}.log")"
grep -qF "no checkpoint yet: starting the run afresh from ${dir}/config.json" "${dir}.log" ||
  fail "--resume of a dry run's directory: the start is not logged: $(cat "${dir}.log")"
finished "${dir}" "${ref}" "--resume of a dry run's directory"
echo "a dry run's directory: --resume started the run, same weights"

# --- 3. Checkpoints by time, after every step: SIGKILL at random steps, --resume, to the end.
dir="${out}/by-time"
timed=("${args[@]}" --set output.checkpoint_minutes=1e-9)
total=$(( steps_per_epoch * epochs ))
kills=0 mid=0 lost=0 how=fresh
cmd=("${zotrain}" "${timed[@]}" --output-dir "${dir}")
while (( kills < 4 )); do
  logged=0
  [[ -f "${dir}/steps.jsonl" ]] && logged=$(wc -l < "${dir}/steps.jsonl")
  rc=0
  start_and_kill "${dir}" $(( logged + 1 + RANDOM % (total / 4) )) "${cmd[@]}" || rc=$?
  if [[ ${rc} -eq 0 ]]; then
    finished "${dir}" "${ref}" "by time: a ${how} run that finished before its kill"
    rm -rf "${dir}"
    cmd=("${zotrain}" "${timed[@]}" --output-dir "${dir}") how=fresh
    continue
  fi
  [[ ${rc} -eq 137 ]] || fail "by time: exit ${rc}: $(tail -3 "${dir}.log")"
  kills=$(( kills + 1 ))
  read -r ckpt last _ < <(/usr/bin/python3 "${repo}/tests/cli/check_run_dir.py" "${dir}") ||
    fail "by time: the run directory is unsound after kill ${kills}"
  (( last - ckpt <= 1 )) || fail "by time: kill ${kills}: checkpoint of step ${ckpt}, ${last} steps logged"
  (( last - ckpt > lost )) && lost=$(( last - ckpt ))
  (( ckpt % steps_per_epoch != 0 )) && mid=$(( mid + 1 ))
  cmd=("${zotrain}" --resume "${dir}" --no-progress -q) how=resumed
done
"${cmd[@]}" > /dev/null 2> "${dir}.log" || fail "by time: the last --resume failed: $(tail -3 "${dir}.log")"
finished "${dir}" "${ref}" "by time: after ${kills} kills"
(( mid > 0 )) || fail "by time: no kill left a mid-epoch checkpoint"
echo "checkpoints by time: ${kills} kills, ${mid} at a mid-epoch checkpoint, at most ${lost} step lost," \
     "resumed to the uninterrupted weights"
echo "restart: always right"
