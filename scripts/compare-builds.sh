#!/usr/bin/env bash
# Compares two zotrain binaries on the same training runs, interleaved (A, B, A, B, ...) so that
# machine noise hits both alike: per setting, the fastest training time of each over the rounds,
# their ratio, the median time per step (phases other than evaluation) of each and its ratio,
# the median Data phase per step (reading and preparing batches), and whether the weights
# digests agree (they must, unless the change is meant to alter results).
#   scripts/compare-builds.sh OLD_BINARY NEW_BINARY [ROUNDS]     (default 3 rounds)
# Settings: LeNet-5 on the bundled MNIST subset, 1 thread, FP32 (batch 32, 300 steps) and int8
# (batch 256, 60 steps), each of Full BP, Full ZO, ElasticZO Cls1. Prints one line per setting
# on stdout: "<precision> <method> <old s> <new s> <new/old> step <old us> <new us> <new/old>
# data <old us> <new us> <digests equal|DIFFER>". A binary may be a wrapper script that adds
# options (e.g. --set data.prefetch=false).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
old="$1" new="$2" rounds="${3:-3}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

run() {  # binary out precision method steps batch -> "train_seconds digest step_us data_us"
  "$1" --config "${repo}/configs/quickstart.json" --set "data.root=${repo}/data/mnist-subset" \
       --set "model.precision=$3" --set "method.name=$4" --set "train.max_steps=$5" \
       --set "train.batch_size=$6" --set train.threads=1 --set train.epochs=100 \
       --set output.checkpoint_every=0 $([[ "$3" == int8 ]] && echo --set optimizer.name=sgd) \
       --output-dir "$2" --overwrite --no-progress -q >/dev/null 2>&1
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); p=s["phases"]; n=s["steps"]
print(s["train_seconds"], s["weights_digest"],
      sum(v["seconds"] for k, v in p.items() if k != "eval") / n * 1e6, p["data"]["seconds"] / n * 1e6)' \
    "$2/summary.json"
}

for precision in fp32 int8; do
  if [[ "${precision}" == fp32 ]]; then steps=300 batch=32; else steps=60 batch=256; fi
  for method in full_bp full_zo elastic_zo; do
    best_old="" best_new="" d_old="" d_new="" steps_old="" steps_new="" data_old="" data_new=""
    for ((r = 0; r < rounds; ++r)); do
      read -r t d_old su du < <(run "${old}" "${work}/old" "${precision}" "${method}" "${steps}" "${batch}")
      best_old="$(python3 -c "print(min(float('${best_old:-inf}'), ${t}))")"
      steps_old+=" ${su}" data_old+=" ${du}"
      read -r t d_new su du < <(run "${new}" "${work}/new" "${precision}" "${method}" "${steps}" "${batch}")
      best_new="$(python3 -c "print(min(float('${best_new:-inf}'), ${t}))")"
      steps_new+=" ${su}" data_new+=" ${du}"
    done
    medians="$(python3 -c "import statistics as s, sys
m = [s.median(map(float, a.split())) for a in sys.argv[1:]]
print(f'step {m[0]:.0f} {m[1]:.0f} {m[1] / m[0]:.3f} data {m[2]:.0f} {m[3]:.0f}')" \
      "${steps_old}" "${steps_new}" "${data_old}" "${data_new}")"
    same="digests equal"
    [[ "${d_old}" == "${d_new}" ]] || same="digests DIFFER (${d_old} vs ${d_new})"
    printf '%s %s %.3f %.3f %.3f %s %s\n' "${precision}" "${method}" "${best_old}" "${best_new}" \
      "$(python3 -c "print(${best_new} / ${best_old})")" "${medians}" "${same}"
  done
done
