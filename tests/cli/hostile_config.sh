#!/usr/bin/env bash
# Hostile configs and flags (docs/design.md §12, "Config input"): each is refused before anything is
# written, with exit 2 and one error naming the key, flag or file and what it accepts. The
# classes: integers beyond int (keys and flags), fractional integers, numbers that underflow or
# overflow a double, repeated keys and sections, a config larger than 1 MiB (/dev/zero,
# /dev/urandom, a 10 MB file; also for `zotrain eval -c`), names that are no single path
# component (../../x, 200 kB), an absurd zo.eps or learning rate; and --help shows sane ranges.
# Usage: hostile_config.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/hostile-config"
fresh_dir "${out}"
mkdir -p "${out}/a/b/cwd" "${out}/files"
cwd="${out}/a/b/cwd"  # every run starts here: a runs/<name> it made would show
tiny=(--config "${repo}/tests/fixtures/tiny.json")
common=(--set "data.root=${repo}/data/mnist-subset" --no-progress -q)
base=("${tiny[@]}" "${common[@]}")
cases=0

# refuse CASE PATTERN ARGS...: `zotrain ARGS` (from ${cwd}, at most 20 s) exits 2, its stderr
# matches PATTERN (grep -E) in one error line, names no internal error, and nothing was created
# (${out}/runs/CASE, which the run cases give as --output-dir, nor anything in ${cwd} or
# ${out}/a).
refuse() {
  local name="$1" pattern="$2" log="${out}/$1.log" code
  shift 2
  set +e
  (cd "${cwd}" && timeout 20 "${zotrain}" "$@" > /dev/null 2> "${log}")
  code=$?
  set -e
  [[ ${code} -eq 2 ]] || fail "${name}: exit ${code}, expected 2: $(head -c 600 "${log}")"
  grep -qE -- "${pattern}" "${log}" || fail "${name}: the error does not match '${pattern}': $(head -c 600 "${log}")"
  [[ $(grep -cE -- "${pattern}" "${log}") -eq 1 ]] || fail "${name}: more than one error line: $(head -c 600 "${log}")"
  ! grep -qiE "internal|critical" "${log}" || fail "${name}: an internal error: $(head -c 600 "${log}")"
  [[ ! -e "${out}/runs/${name}" ]] || fail "${name}: the run directory was created"
  [[ -z "$(ls -A "${cwd}")" && "$(ls -A "${out}/a")" == b && "$(ls -A "${out}/a/b")" == cwd ]] ||
    fail "${name}: something was written next to the run: $(find "${out}/a")"
  echo "${name}: $(grep -E -- "${pattern}" "${log}" | head -c 200)"
  cases=$(( cases + 1 ))
}
# run_refuse CASE PATTERN ARGS...: a training run with ARGS (of tiny.json unless ARGS give
# --config), refused.
run_refuse() {
  local name="$1" pattern="$2" config=("${tiny[@]}")
  shift 2
  [[ " $* " != *" --config "* ]] || config=()
  refuse "${name}" "${pattern}" "${config[@]}" "${common[@]}" --output-dir "${out}/runs/${name}" "$@"
}
# file NAME TEXT: a config file holding TEXT; prints its path.
file() { printf '%s' "$2" > "${out}/files/$1"; echo "${out}/files/$1"; }
int_range='must be an integer in \[1, 2147483647\]'

# --- integers beyond int, in keys (--set and a file) and flags; fractional integers
run_refuse train_limit_wraps "data\.train_limit' ${int_range} or null, got 4294967297" \
  --set data.train_limit=4294967297
run_refuse train_limit_2p31 "data\.train_limit' ${int_range} or null, got 2147483648" \
  --config "$(file train_limit.json '{"data": {"train_limit": 2147483648}}')"
run_refuse test_limit_wraps "data\.test_limit' ${int_range} or null, got 4294967297" \
  --set data.test_limit=4294967297
run_refuse subset_wraps "data\.subset' ${int_range} or null, got 4294967297" --set data.subset=4294967297
run_refuse points_wraps "data\.points' must be an integer in \[1, 1048576\], got 4294967297" \
  --set data.points=4294967297
run_refuse epochs_wraps "train\.epochs' ${int_range}, got 4294967296" --set train.epochs=4294967296
run_refuse max_steps_negative "train\.max_steps' ${int_range} or null, got -1" --set train.max_steps=-1
run_refuse threads_key_wraps "train\.threads' must be an integer in \[1, 1024\] or \"auto\", got 2147483648" \
  --set train.threads=2147483648
run_refuse epochs_fraction "train\.epochs' ${int_range}, got 2\.5" --set train.epochs=2.5
run_refuse batch_fraction "train\.batch_size' must be an integer in \[1, 16777216\] or \"auto\", got 1\.5" \
  --config "$(file batch.json '{"train": {"batch_size": 1.5}}')"
run_refuse threads_flag_zero "--threads: expected an integer from 1 to 1024, got '0'" --threads 0
run_refuse threads_flag_text "--threads: expected an integer from 1 to 1024, got 'abc'" --threads abc
run_refuse threads_flag_wraps "--threads: expected an integer from 1 to 1024, got '2147483648'" \
  --threads 2147483648
# An accepted flag is read as decimal ("010" is 10, not octal 8).
"${zotrain}" "${base[@]}" --threads 010 --dry-run --output-dir "${out}/runs/threads_decimal" > /dev/null 2>&1 ||
  fail "--threads 010: refused"
[[ "$(json_field "${out}/runs/threads_decimal/config.json" "s['train']['threads']")" == 10 ]] ||
  fail "--threads 010: train.threads is not 10"
rm -rf "${out}/runs/threads_decimal"
refuse bench_threads "--threads: expected an integer from 0 to 1024, got '-1'" bench --threads -1
refuse bench_run_steps "--run-steps: expected an integer from 0 to 2147483647, got '1\.5'" \
  bench --run-steps 1.5
refuse bench_batch "--batch: expected an integer from 1 to 16777216, got '4294967297'" \
  bench --run-steps 1 --batch 4294967297
refuse synthetic_train "--synthetic-train: expected an integer from 1 to 2147483647, got '4294967297'" \
  --make-synthetic-modelnet "${out}/runs/synthetic_train" --synthetic-train 4294967297
refuse synthetic_seed "--synthetic-seed: expected an integer from 0 to 18446744073709551615, got '-1'" \
  --make-synthetic-modelnet "${out}/runs/synthetic_seed" --synthetic-seed -1

# --- numbers that underflow or overflow a double: never silently 0 (freeze) or inf
run_refuse lr_underflow "--set optimizer\.lr: the number 1e-400 is too small for a double" \
  --set optimizer.lr=1e-400
run_refuse lr_underflow_file "key 'optimizer\.lr': the number 1e-400 is too small for a double" \
  --config "$(file underflow.json '{"optimizer": {"lr": 1e-400}}')"
run_refuse eps_overflow_file "key 'zo\.eps': the number 1e999 is beyond the range of a double" \
  --config "$(file overflow.json '{"zo": {"eps": 1e999}}')"

# --- repeated keys and sections
run_refuse duplicate_key "duplicate_key\.json: key 'zo\.eps' appears twice" \
  --config "$(file duplicate_key.json '{"zo": {"eps": 0.01, "eps": 0.02}}')"
run_refuse duplicate_section "duplicate_section\.json: section 'train' appears twice" \
  --config "$(file duplicate_section.json '{"train": {"epochs": 1}, "seed": 3, "train": {"max_steps": 2}}')"

# --- size: a bounded read, whatever the file claims
run_refuse dev_zero "/dev/zero: larger than 1 MiB" --config /dev/zero
run_refuse dev_urandom "/dev/urandom: larger than 1 MiB" --config /dev/urandom
head -c 10485760 /dev/zero | tr '\0' ' ' > "${out}/files/big.json"
run_refuse ten_megabytes "big\.json: larger than 1 MiB" --config "${out}/files/big.json"

# --- names that become paths
run_refuse name_escapes "key 'name' must be one path component .*runs/<name>" --set name=../../x
refuse name_escapes_default "key 'name' must be one path component" "${base[@]}" --set name=../../x
[[ ! -e "${out}/a/x" && ! -e "${out}/x" ]] || fail "name ../../x: wrote above runs/"
python3 -c "import json,sys; json.dump({'name': 'n' * 200000}, open(sys.argv[1], 'w'))" "${out}/files/long_name.json"
run_refuse name_long "key 'name' must be at most 200 bytes, got 200000" --config "${out}/files/long_name.json"
[[ $(wc -c < "${out}/name_long.log") -lt 1000 ]] || fail "name_long: the error repeats the name"

# --- absurd zo.eps and learning rates
run_refuse eps_absurd "key 'zo\.eps' must be a number in \[1e-09, 1\], got 1e\+30" --set zo.eps=1e30
run_refuse lr_absurd "key 'optimizer\.lr' must be a number in \[0, 1e\+10\] or \"auto\", got 1e\+308" \
  --set optimizer.lr=1e308
# The warning band: accepted, said.
(cd "${cwd}" && "${zotrain}" "${base[@]}" --set optimizer.lr=500 --dry-run --output-dir "${out}/runs/lr_warn" \
  > /dev/null 2> "${out}/lr_warn.log") || fail "lr 500: refused: $(cat "${out}/lr_warn.log")"
grep -q "warning.*optimizer\.lr = 500\.0 is unusual" "${out}/lr_warn.log" ||
  fail "lr 500: no warning: $(cat "${out}/lr_warn.log")"
rm -rf "${out}/runs/lr_warn"

# --- eval -c reads configs the same way (a one-step run to evaluate)
"${zotrain}" "${base[@]}" --set train.max_steps=1 --set data.test_limit=32 --set train.threads=1 \
  --output-dir "${out}/evalrun" > /dev/null 2> "${out}/evalrun.log" || fail "the run for eval failed: $(tail -3 "${out}/evalrun.log")"
refuse eval_dev_zero "/dev/zero: larger than 1 MiB" eval "${out}/evalrun" -c /dev/zero
refuse eval_duplicate "key 'zo\.eps' appears twice" eval "${out}/evalrun" -c "${out}/files/duplicate_key.json"

# --- --help: ranges readable (no number of more than 20 digits, as CLI11's double bounds were)
for sub in "" bench eval; do
  # shellcheck disable=SC2086
  "${zotrain}" ${sub} --help > "${out}/help.txt" 2>&1 || fail "zotrain ${sub} --help failed"
  ! grep -qE "[0-9]{21,}" "${out}/help.txt" || fail "zotrain ${sub} --help: $(grep -oE ".{30}[0-9]{21,}" "${out}/help.txt" | head -1)"
done
"${zotrain}" --help > "${out}/help.txt"
grep -q -- "--threads INT:1\.\.1024" "${out}/help.txt" || fail "--help does not show --threads' range"
grep -q "train.threads (integer in \[1, 1024\]" "${out}/help.txt" || fail "--help does not show train.threads' range"
"${zotrain}" bench --help > "${out}/help.txt"
grep -q -- "--threads INT:0\.\.1024" "${out}/help.txt" || fail "bench --help does not show --threads' range"
echo "hostile_config: ${cases} cases refused"
