#!/usr/bin/env bash
# --dry-run's predicted peak (memory.predicted_peak_bytes) is within 15 % of the peak the same
# run then reaches (memory.peak_rss_bytes), for LeNet-5 and PointNet, FP32 and int8, backprop
# and ZO, 1 and 2 threads; and train.memory_limit refuses a run predicted to exceed it (exit 2,
# a message naming the key and what to change, no output directory), accepts units, and
# rejects a malformed size by name; a batch size or memory plan beyond any machine is refused
# before it is allocated.
# Usage: memory_forecast.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/memory-forecast"
fresh_dir "${out}"

"${zotrain}" --make-synthetic-modelnet "${out}/points" --synthetic-classes 10 \
  --synthetic-train 8 --synthetic-test 2 > /dev/null 2>&1 || fail "make-synthetic-modelnet"
lenet=(--config "${repo}/configs/quickstart.json" --set "data.root=${repo}/data/mnist-subset"
       --set train.batch_size=256)
pointnet=(--config "${repo}/configs/pointnet-synthetic.json" --set "data.root=${out}/points"
          --set data.points=512 --set train.batch_size=16)

check() {  # check NAME ARGS...: dry run, then the same run for 3 steps; compare the two figures
  local name="$1"; shift
  local args=("$@" --set train.max_steps=3 --set train.epochs=1 --no-progress -q)
  "${zotrain}" "${args[@]}" --dry-run --output-dir "${out}/${name}-dry" > /dev/null 2>&1 ||
    fail "${name}: dry run failed"
  "${zotrain}" "${args[@]}" --output-dir "${out}/${name}" > /dev/null 2> "${out}/${name}.log" ||
    fail "${name}: $(tail -3 "${out}/${name}.log")"
  local predicted peak
  predicted="$(json_field "${out}/${name}-dry/summary.json" "s['memory']['predicted_peak_bytes']")"
  peak="$(json_field "${out}/${name}/summary.json" "s['memory']['peak_rss_bytes']")"
  local err
  err="$(/usr/bin/python3 -c "print(f'{(${predicted} - ${peak}) / ${peak} * 100:+.1f}')")"
  echo "${name}: predicted $(( predicted / 1048576 )) MiB, peak $(( peak / 1048576 )) MiB (${err} %)"
  /usr/bin/python3 -c "import sys; sys.exit(abs(${predicted} - ${peak}) > 0.15 * ${peak})" ||
    fail "${name}: the dry run's prediction is ${err} % off the measured peak"
}

check lenet-fp32-bp "${lenet[@]}" --set method.name=full_bp --set train.threads=1
check lenet-fp32-cls1 "${lenet[@]}" --set method.name=elastic_zo --set train.threads=2
check lenet-int8-zo "${lenet[@]}" --set model.precision=int8 --set method.name=full_zo \
  --set optimizer.name=sgd --set train.threads=2
check pointnet-fp32-bp "${pointnet[@]}" --set method.name=full_bp --set train.threads=2
check pointnet-int8-cls1 "${pointnet[@]}" --set model.precision=int8 --set method.name=elastic_zo \
  --set optimizer.name=sgd --set train.threads=1

# A limit below the prediction: refused before anything is written.
set +e
"${zotrain}" "${lenet[@]}" --set train.memory_limit=1MiB --output-dir "${out}/refused" \
  --no-progress > /dev/null 2> "${out}/refused.log"
code=$?
set -e
[[ ${code} -eq 2 ]] || fail "memory_limit 1MiB: exit ${code}, expected 2"
grep -q "train.memory_limit" "${out}/refused.log" || fail "refusal does not name train.memory_limit"
grep -q "train.batch_size" "${out}/refused.log" || fail "refusal does not say what to change"
[[ ! -e "${out}/refused" ]] || fail "a refused run created its output directory"
# A limit above it (with a unit): the run goes ahead.
"${zotrain}" "${lenet[@]}" --set train.memory_limit=4GiB --set train.max_steps=1 \
  --output-dir "${out}/fits" --no-progress -q > /dev/null 2>&1 || fail "memory_limit 4GiB refused"
[[ "$(json_field "${out}/fits/config.json" "s['train']['memory_limit']")" == 4294967296 ]] ||
  fail "memory_limit 4GiB not stored as 4294967296 bytes"
# A malformed size: a config error that names the key.
set +e
"${zotrain}" "${lenet[@]}" --set train.memory_limit=lots --dry-run \
  --output-dir "${out}/bad" > /dev/null 2> "${out}/bad.log"
code=$?
set -e
[[ ${code} -eq 2 ]] && grep -q "train.memory_limit" "${out}/bad.log" ||
  fail "memory_limit=lots: exit ${code}, $(cat "${out}/bad.log")"
# Sizes no machine has: refused by name before anything is allocated or written, never the
# kernel's OOM killer.
refuse() {  # refuse NAME PATTERN ARGS...
  local name="$1" pattern="$2"; shift 2
  set +e
  "${zotrain}" "$@" --output-dir "${out}/${name}" --no-progress > /dev/null 2> "${out}/${name}.log"
  local code=$?
  set -e
  [[ ${code} -eq 2 ]] || fail "${name}: exit ${code}, expected 2: $(tail -2 "${out}/${name}.log")"
  grep -q "${pattern}" "${out}/${name}.log" || fail "${name}: $(cat "${out}/${name}.log")"
  [[ ! -e "${out}/${name}" ]] || fail "${name}: created its output directory"
}
refuse batch-1e9 "train.batch_size" "${lenet[@]}" --set train.batch_size=1000000000
refuse plan-over-ram "bytes of RAM; lower train.batch_size" "${pointnet[@]}" \
  --set method.name=full_bp --set train.batch_size=16000000
echo "memory-forecast: predictions within 15 %, memory_limit enforced, impossible sizes refused"
