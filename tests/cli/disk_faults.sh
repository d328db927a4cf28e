#!/usr/bin/env bash
# A full disk or a read-only output directory stops a run with exit 2 and an error naming the
# file and the cause ("No space left on device", "Read-only file system"), and leaves no
# truncated checkpoint.safetensors, optimizer file, config.json, summary.json or JSON-lines
# record: each is absent or a whole earlier version (tests/cli/check_run_dir.py reads them back).
# Once there is room again (or the file system is writable), --resume finishes the run with the
# uninterrupted run's weights. The output directories are small tmpfs mounts and read-only bind
# mounts, so this needs root (or CAP_SYS_ADMIN): without it, it exits 77 (skipped).
#   full-nothing    a tmpfs too small for anything: the first file fails
#   full-second     room for the config and the first checkpoint, not the second
#   full-mid-run    a tmpfs filled up by another file at some moment of the run, then emptied
#   full-append     the same with no checkpoint due: a steps.jsonl / metrics.jsonl append fails
#   ro-fresh        a new run into a read-only directory
#   ro-resume       --resume of a stopped run on a read-only mount: nothing changes
#   ro-mid-run      the file system remounted read-only during the run, then read-write again
# Usage: disk_faults.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/disk-faults"
mounts=()
cleanup() {
  local i
  for (( i = ${#mounts[@]} - 1; i >= 0; i-- )); do umount "${mounts[i]}" 2> /dev/null || umount -l "${mounts[i]}" || true; done
}
trap cleanup EXIT
# Mounts left by an earlier run that was killed before its trap.
while read -r m; do umount -l "${m}" 2> /dev/null || true; done < <(awk -v o="${out}/" 'index($2, o) == 1 { print $2 }' /proc/mounts | sort -r)
fresh_dir "${out}"

mnt() {  # mnt DIR OPTIONS...: mount a tmpfs (remembered for the trap)
  mkdir -p "$1"
  mount -t tmpfs -o "$2" zt-disk-faults "$1" || return 1
  mounts+=("$1")
}
if ! mnt "${out}/probe" size=64k 2> "${out}/probe.log"; then
  echo "disk-faults: SKIP: cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): $(cat "${out}/probe.log" 2> /dev/null)"
  exit 77
fi

check_dir() { /usr/bin/python3 "${repo}/tests/cli/check_run_dir.py" "$1" > /dev/null || fail "$2: $1 is unsound (above)"; }
digest() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_digest"])' "$1"; }
no_temporaries() {
  local left
  left="$(find "$1" -name '*.tmp')"
  [[ -z "${left}" ]] || fail "$2: temporary files left: ${left}"
}
# expect_failure WHAT CAUSE LOG CODE: exit 2, one error naming a file of the run and the cause.
expect_failure() {
  [[ "$4" -eq 2 ]] || fail "$1: exit $4, expected 2: $(tail -3 "$3")"
  grep -q "error .*${out}/[^ ]*: .*$2" "$3" || fail "$1: the error does not name the file and '$2': $(cat "$3")"
  echo "$1: exit 2: $(grep -o "error .*" "$3" | head -1)"
}

args=(--config "${repo}/tests/fixtures/tiny.json" --set data.train_limit=96 --set data.test_limit=32
      --set train.epochs=60 --set train.log_every=1 --set output.checkpoint_every=1
      --set train.threads=1 --no-progress -q)
"${zotrain}" "${args[@]}" --output-dir "${out}/reference" > /dev/null 2> "${out}/reference.log" ||
  fail "the uninterrupted run failed: $(tail -3 "${out}/reference.log")"
reference="$(digest "${out}/reference/summary.json")"
ckpt_kib=$(( ($(stat -c %s "${out}/reference/checkpoint.safetensors") + $(stat -c %s "${out}/reference/optimizer.safetensors")) / 1024 ))

# resume_to_end WHAT DIR [ARGS...]: --resume finishes the run with the uninterrupted weights.
resume_to_end() {
  local what="$1" d="$2"; shift 2
  "${zotrain}" --resume "${d}" "$@" --no-progress -q > /dev/null 2> "${out}/${what}.resume.log" ||
    fail "${what}: --resume failed: $(tail -3 "${out}/${what}.resume.log")"
  [[ "$(digest "${d}/summary.json")" == "${reference}" ]] ||
    fail "${what}: resumed weights differ from the uninterrupted run's"
  no_temporaries "${d}" "${what}"
  echo "${what}: resumed to the end with the uninterrupted weights"
}
# A run of `args` with many more epochs, so the fault surely lands in it; its checkpoint must be
# before the end of the reference run (epoch 60) to finish as that one with --set train.epochs=60.
long=(--set train.epochs=1000)
before_end() {
  local step
  read -r step _ _ < <(/usr/bin/python3 "${repo}/tests/cli/check_run_dir.py" "$1")
  (( step < 180 )) || fail "$2: the run got to step ${step} before the fault (too late to compare)"
}

# run_bg DIR LOG ARGS...: start a run in the background (pid in $run_pid).
run_bg() { local d="$1" log="$2"; shift 2; "${zotrain}" "$@" --output-dir "${d}" > /dev/null 2> "${log}" & run_pid=$!; }
# wait_for FILE: until it exists (or the run ended).
wait_for() { while [[ ! -e "$1" ]] && kill -0 "${run_pid}" 2> /dev/null; do sleep 0.01; done; }
cases=0

# --- full-nothing: one page, taken by the claim file; config.json cannot be written.
mnt "${out}/full-nothing" size=4k
set +e; "${zotrain}" "${args[@]}" --output-dir "${out}/full-nothing/run" > /dev/null 2> "${out}/full-nothing.log"; code=$?; set -e
expect_failure full-nothing "No space left on device" "${out}/full-nothing.log" "${code}"
check_dir "${out}/full-nothing/run" full-nothing
[[ ! -e "${out}/full-nothing/run/config.json" ]] || fail "full-nothing: config.json written"
no_temporaries "${out}/full-nothing" full-nothing
cases=$(( cases + 1 ))

# --- full-second: the first checkpoint (and its optimizer file) fit, the second does not (a
# checkpoint write needs room for the old files and the new ones at once).
mnt "${out}/full-second" "size=$(( ckpt_kib * 3 / 2 ))k"
set +e; "${zotrain}" "${args[@]}" --output-dir "${out}/full-second/run" > /dev/null 2> "${out}/full-second.log"; code=$?; set -e
expect_failure full-second "No space left on device" "${out}/full-second.log" "${code}"
grep -q "checkpoint.safetensors\|optimizer.safetensors" "${out}/full-second.log" ||
  fail "full-second: it did not fail in the second checkpoint: $(cat "${out}/full-second.log")"
check_dir "${out}/full-second/run" full-second
read -r step _ _ < <(/usr/bin/python3 "${repo}/tests/cli/check_run_dir.py" "${out}/full-second/run")
[[ "${step}" -eq 3 ]] || fail "full-second: the checkpoint left is of step ${step}, expected the first one (3)"
[[ ! -e "${out}/full-second/run/summary.json" ]] || fail "full-second: summary.json written"
no_temporaries "${out}/full-second" full-second
mount -o remount,size=16m "${out}/full-second"  # room again
resume_to_end full-second "${out}/full-second/run"
cases=$(( cases + 1 ))

# --- full-mid-run: another file fills the disk once the first checkpoint is there.
mnt "${out}/full-mid" size=4m
run_bg "${out}/full-mid/run" "${out}/full-mid.log" "${args[@]}" "${long[@]}"
wait_for "${out}/full-mid/run/checkpoint.safetensors"
dd if=/dev/zero of="${out}/full-mid/filler" bs=64k 2> /dev/null || true  # until the disk is full
set +e; wait "${run_pid}"; code=$?; set -e
expect_failure full-mid-run "No space left on device" "${out}/full-mid.log" "${code}"
check_dir "${out}/full-mid/run" full-mid-run
no_temporaries "${out}/full-mid" full-mid-run
rm "${out}/full-mid/filler"
before_end "${out}/full-mid/run" full-mid-run
resume_to_end full-mid-run "${out}/full-mid/run" --set train.epochs=60
cases=$(( cases + 1 ))

# --- full-append: the same with no checkpoint due, so a record append meets the full disk
# (tmpfs fills page by page: the line that crosses into a new page is half written, then cut off).
mnt "${out}/full-append" size=4m
run_bg "${out}/full-append/run" "${out}/full-append.log" "${args[@]}" "${long[@]}" \
  --set output.checkpoint_every=1000
wait_for "${out}/full-append/run/steps.jsonl"
dd if=/dev/zero of="${out}/full-append/filler" bs=64k 2> /dev/null || true
set +e; wait "${run_pid}"; code=$?; set -e
expect_failure full-append "No space left on device" "${out}/full-append.log" "${code}"
grep -q "jsonl: cannot append a record" "${out}/full-append.log" ||
  fail "full-append: it did not fail in an append: $(cat "${out}/full-append.log")"
check_dir "${out}/full-append/run" full-append
no_temporaries "${out}/full-append" full-append
cases=$(( cases + 1 ))

# --- ro-fresh: a read-only bind mount of an empty directory.
mkdir -p "${out}/ro-src" "${out}/ro"
mount --bind "${out}/ro-src" "${out}/ro" && mounts+=("${out}/ro")
mount -o remount,bind,ro "${out}/ro"
set +e; "${zotrain}" "${args[@]}" --output-dir "${out}/ro/run" > /dev/null 2> "${out}/ro-fresh.log"; code=$?; set -e
expect_failure ro-fresh "Read-only file system" "${out}/ro-fresh.log" "${code}"
[[ -z "$(ls -A "${out}/ro-src")" ]] || fail "ro-fresh: something was written"
cases=$(( cases + 1 ))

# --- ro-resume: a run stopped after 4 steps, resumed on a read-only mount.
"${zotrain}" "${args[@]}" --set train.max_steps=4 --output-dir "${out}/ro-src/run" > /dev/null 2> "${out}/ro-resume.log" ||
  fail "ro-resume: the first part failed: $(tail -3 "${out}/ro-resume.log")"
before="$(cd "${out}/ro-src/run" && find . -type f -exec sha256sum {} + | sort)"
set +e; "${zotrain}" --resume "${out}/ro/run" --set train.max_steps=null --no-progress -q > /dev/null 2> "${out}/ro-resume.log"; code=$?; set -e
expect_failure ro-resume "Read-only file system" "${out}/ro-resume.log" "${code}"
[[ "$(cd "${out}/ro-src/run" && find . -type f -exec sha256sum {} + | sort)" == "${before}" ]] ||
  fail "ro-resume: files of the run changed"
check_dir "${out}/ro-src/run" ro-resume
cases=$(( cases + 1 ))

# --- ro-mid-run: the file system goes read-only under the run (as an SD card does after I/O
# errors); a remount is refused while a file is open for writing, so it is retried.
mnt "${out}/ro-mid" size=16m
run_bg "${out}/ro-mid/run" "${out}/ro-mid.log" "${args[@]}" "${long[@]}"
wait_for "${out}/ro-mid/run/checkpoint.safetensors"
for (( i = 0; i < 500; i++ )); do mount -o remount,ro "${out}/ro-mid" 2> /dev/null && break; sleep 0.001; done
(( i < 500 )) || fail "ro-mid-run: could not remount read-only"
set +e; wait "${run_pid}"; code=$?; set -e
expect_failure ro-mid-run "Read-only file system" "${out}/ro-mid.log" "${code}"
check_dir "${out}/ro-mid/run" ro-mid-run
mount -o remount,rw "${out}/ro-mid"
no_temporaries "${out}/ro-mid" ro-mid-run
before_end "${out}/ro-mid/run" ro-mid-run
resume_to_end ro-mid-run "${out}/ro-mid/run" --set train.epochs=60
cases=$(( cases + 1 ))

echo "disk-faults: ${cases} cases (4 full disk, 3 read-only): exit 2 naming the file, nothing half-written, resumed where there was a run"
