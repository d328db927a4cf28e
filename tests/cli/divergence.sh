#!/usr/bin/env bash
# Divergence guard: a run whose loss becomes NaN stops at that step with exit code 3 and a
# message naming the step and the learning rate, and leaves the last good checkpoint as it was
# (byte for byte), for FP32 Full BP, Full ZO and ElasticZO.
# Usage: divergence.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/divergence"
fresh_dir "${out}"
base=(--config "${repo}/configs/quickstart.json" --set "data.root=${repo}/data/mnist-subset"
      --set data.train_limit=640 --set train.threads=1 --no-progress -q)

for method in full_bp full_zo elastic_zo; do
  dir="${out}/${method}"
  # One good epoch: its checkpoint is the last good one.
  "${zotrain}" "${base[@]}" --set method.name="${method}" --set train.epochs=1 \
    --output-dir "${dir}" > /dev/null 2>&1 || fail "${method}: the first epoch failed"
  before="$(sha256sum < "${dir}/checkpoint.safetensors")"
  # The second epoch with the largest learning rate the config takes (src/config/config_train.cpp,
  # kMaxLr): one step makes the last layers' sums overflow to inf, and the loss NaN.
  set +e
  "${zotrain}" --resume "${dir}" --set train.epochs=2 --set optimizer.lr=1e10 \
    --set optimizer.bp_lr=1e10 --no-progress -q > /dev/null 2> "${dir}.log"
  code=$?
  set -e
  [[ ${code} -eq 3 ]] || fail "${method}: exit ${code}, expected 3: $(tail -2 "${dir}.log")"
  grep -q "training diverged at step [0-9]* (epoch 2" "${dir}.log" ||
    fail "${method}: the message does not name the step: $(cat "${dir}.log")"
  grep -qE "optimizer\.(bp_)?lr = (1e\+10|10000000000)\b" "${dir}.log" ||
    fail "${method}: the message does not name the learning rate"
  grep -q "last good checkpoint" "${dir}.log" || fail "${method}: the message does not point at the checkpoint"
  [[ "$(sha256sum < "${dir}/checkpoint.safetensors")" == "${before}" ]] ||
    fail "${method}: the checkpoint changed"
  # It still resumes (with a sane learning rate).
  "${zotrain}" --resume "${dir}" --set train.epochs=2 --set optimizer.lr=0.001 \
    --set optimizer.bp_lr=0.001 --no-progress -q > /dev/null 2>&1 || fail "${method}: resume after divergence failed"
  echo "${method}: stopped with exit 3, checkpoint kept, resumed"
done
echo "divergence: guarded"
