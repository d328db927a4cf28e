#!/usr/bin/env bash
# Benchmark (not a test): int8 training (NITI / ElasticZO-INT8) against FP32 on the same
# machine, LeNet-5, full MNIST (scripts/get-data.sh first).
#
# Speed mode (default): for each method, one epoch of FP32 at its paper batch (32), FP32 at the
# int8 batch (256) and int8 (256), same threads, interleaved; prints s/epoch, the FP32/int8
# ratio (paper, on a Pi Zero 2: int8 1.38-1.42x faster) and the phase shares (paper: ZO
# perturb+update 1.0-1.2 % of the int8 time).
# Accuracy mode (--accuracy EPOCHS): int8 test accuracy after EPOCHS epochs for every method,
# both sign modes and every r_max of --rmax, on --dataset; prints a table.
#
# Usage: scripts/bench-int8.sh [--threads T] [--repeat R] [--methods full_bp,full_zo,cls1,cls2]
#                              [--accuracy E] [--dataset mnist|fashion_mnist]
#                              [--rmax "1 3 7 15 31 63"] [--signs "float integer"] [--build]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo}"
threads="${THREADS:-2}"
repeat=1
methods="full_bp,full_zo,cls1,cls2"
accuracy=0
dataset=mnist
rmax_list="1 3 7 15 31 63"
signs="float integer"
build=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --methods) methods="$2"; shift 2 ;;
    --accuracy) accuracy="$2"; shift 2 ;;
    --dataset) dataset="$2"; shift 2 ;;
    --rmax) rmax_list="$2"; shift 2 ;;
    --signs) signs="$2"; shift 2 ;;
    --build) build=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-int8: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=build/host/zotrain
if [[ "${build}" -eq 1 || ! -x "${bin}" ]]; then
  cmake --preset host >/dev/null && cmake --build --preset host -j "$(nproc)" >/dev/null
fi
case "${dataset}" in
  mnist) root=data/mnist ;;
  fashion_mnist) root=data/fashion-mnist ;;
  *) echo "bench-int8: --dataset must be mnist or fashion_mnist" >&2; exit 2 ;;
esac
[[ -d "${root}" ]] || { echo "bench-int8: ${root} missing: run scripts/get-data.sh" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT

method_args() {  # cls1 → --set method.name=elastic_zo --set method.partition=zo-feat-cls1
  case "$1" in
    full_bp|full_zo) echo "--set method.name=$1" ;;
    cls1) echo "--set method.name=elastic_zo --set method.partition=zo-feat-cls1" ;;
    cls2) echo "--set method.name=elastic_zo --set method.partition=zo-feat-cls2" ;;
  esac
}

# run TAG EPOCHS ARGS... → prints the summary path
run() {
  local tag="$1" epochs="$2"; shift 2
  "${bin}" --config configs/paper/lenet5-mnist-zo-feat-cls1.json --set "data.root=${repo}/${root}" --set "data.dataset=${dataset}" \
    --set "train.epochs=${epochs}" --set "train.threads=${threads}" --set train.eval_every=1000 \
    --set name="${tag}" "$@" --output-dir "${out}/${tag}" --overwrite --no-progress -q
  echo "${out}/${tag}/summary.json"
}
best_epoch_seconds() {  # TAG ARGS... → fastest train_seconds - eval over `repeat` runs
  local tag="$1" best="" s; shift
  for ((r = 0; r < repeat; ++r)); do
    s="$(jq '.phases | [to_entries[] | select(.key != "eval") | .value.seconds] | add' "$(run "${tag}" 1 "$@")")"
    if [[ -z "${best}" ]] || awk "BEGIN{exit !(${s} < ${best})}"; then best="${s}"; fi
  done
  echo "${best}"
}

if [[ "${accuracy}" -eq 0 ]]; then
  printf '%-8s %12s %13s %12s %9s %9s %12s %10s\n' method "fp32 B=32" "fp32 B=256" "int8 B=256" \
    "32/int8" "256/int8" "int8 fwd %" "ZO p+u %"
  IFS=, read -ra ms <<<"${methods}"
  for m in "${ms[@]}"; do
    # shellcheck disable=SC2046
    f32="$(best_epoch_seconds "fp32-${m}" $(method_args "${m}") --set model.precision=fp32 --set train.batch_size=32)"
    # shellcheck disable=SC2046
    f256="$(best_epoch_seconds "fp32b-${m}" $(method_args "${m}") --set model.precision=fp32 --set train.batch_size=256)"
    # shellcheck disable=SC2046
    i8="$(best_epoch_seconds "int8-${m}" $(method_args "${m}") --set model.precision=int8 --set train.batch_size=256)"
    s="${out}/int8-${m}/summary.json"
    fwd="$(jq '100 * .phases.forward.seconds / ([.phases | to_entries[] | select(.key != "eval") | .value.seconds] | add)' "${s}")"
    zo="$(jq '100 * (.phases.zo_perturb.seconds + .phases.zo_update.seconds) / ([.phases | to_entries[] | select(.key != "eval") | .value.seconds] | add)' "${s}")"
    printf '%-8s %11.3fs %12.3fs %11.3fs %8.2fx %8.2fx %11.1f%% %9.2f%%\n' "${m}" "${f32}" "${f256}" "${i8}" \
      "$(awk "BEGIN{print ${f32}/${i8}}")" "$(awk "BEGIN{print ${f256}/${i8}}")" "${fwd}" "${zo}"
  done
  echo "(seconds per epoch of training without evaluation, ${threads} threads, best of ${repeat})"
  exit 0
fi

printf '%-8s %-8s %6s %10s %12s\n' method sign r_max "test acc %" "sign agree %"
IFS=, read -ra ms <<<"${methods}"
for m in "${ms[@]}"; do
  for sign in ${signs}; do
    rlist="${rmax_list}"
    [[ "${m}" == full_bp ]] && rlist="-"  # no ZO part: r_max and the sign do not apply
    for r in ${rlist}; do
      extra=()
      [[ "${r}" != "-" ]] && extra=(--set "int8.r_max=${r}")
      # shellcheck disable=SC2046
      s="$(run "acc-${m}-${sign}-${r}" "${accuracy}" $(method_args "${m}") --set model.precision=int8 \
            --set train.batch_size=256 --set "int8.sign=${sign}" --set train.eval_every=1 "${extra[@]}")"
      agree="$(jq -s 'map(.sign_agreement // empty) | if length > 0 then 100 * add / length else null end' \
               "$(dirname "${s}")/metrics.jsonl")"
      printf '%-8s %-8s %6s %10.2f %12s\n' "${m}" "${sign}" "${r}" "$(jq .test_accuracy "${s}")" "${agree}"
    done
    [[ "${m}" == full_bp ]] && break
  done
done
