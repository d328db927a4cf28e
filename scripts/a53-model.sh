#!/usr/bin/env bash
# Predicted Cortex-A53 cycles of ONE training step (LeNet-5, synthetic input, 1 thread) per
# precision and method, without a board: what qemu executes times a pipeline model of the A53.
#
# How: as scripts/count-insns.sh, `zotrain bench --run-steps 2 --precision P --method M --batch B
# --threads 1` runs under `qemu-aarch64 -cpu cortex-a53 -d in_asm,exec,nochain`; awk
# (scripts/lib/a53_trace.awk) keeps the translated blocks executed between the 2nd and 3rd call
# of zt_bench_step_boundary (the second step) with their execution counts. The blocks covering
# 99.5 % (--coverage) of the step's guest instructions go through `llvm-mca -mcpu=cortex-a53
# -iterations=100` (Debian's LLVM 14): a block's cost is Total Cycles / iterations, i.e. its
# steady-state cycles when repeated back to back; the step's estimate is the sum over blocks of
# executions x that cost. The remaining blocks are charged at the average IPC of the modelled
# ones. Disassembly conversion: qemu's "0x<pc>: <encoding> <insn>" lines lose address and
# encoding; absolute targets of branches, adr/adrp and literal loads are rewritten to a local
# label at the top of the block (llvm-mca ignores control flow; only the instruction class
# counts); lines llvm-mc rejects are dropped (the block scaled by total/kept instructions) and an
# instruction the A53 model does not support is replaced by a nop (both are reported). llvm-mca
# results are cached per hash of the converted block in <build-dir>/a53-model-cache.tsv.
#
# Phases: a table of driver functions in scripts/lib/a53_model.py (Fp32Trainer::forward,
# ZoStep::probe/perturb/update/estimate, Int8Trainer::probe/perturb/zo_update/backprop,
# BpOptimizer::apply, softmax_xent_f32, xent_error_s8, ...) switches the current phase when one of
# their blocks executes; kernels inherit the phase of the driver that called them. Phases:
# forward, zo_perturb, zo_update, backward (+ optimizer), loss, other (step set-up, memset of
# the gradients, ...). The top 15 functions (--top) per configuration are listed as well.
#
# Memory: a coarse analytic estimate of the bytes each phase moves (model sizes of
# src/nn/lenet5.cpp: 107,786 FP32 / 107,550 int8 weights; activations from the layer shapes;
# no reuse through the caches between layers or passes) against an ASSUMED 1.3 GB/s sustained
# LPDDR2 bandwidth of the Pi Zero 2 W; a phase whose transfer time exceeds its predicted compute
# cycles is flagged memory-bound.
#
# What the model leaves out: caches (every load is an L1 hit at llvm-mca's load latency; no L1/L2
# misses, no prefetch, no TLB), memory bandwidth except via the analytic estimate above, branch
# mispredictions (and fetch bubbles: each block is modelled as repeated back to back, so the
# pipeline state across block boundaries is not carried), the 4-core scaling (1 thread; OpenMP
# fork/join costs not modelled), qemu's block granularity (a block that exits early is counted
# whole; a loop body split over several blocks is modelled piecewise), and llvm-mca's own A53
# model errors (see --sanity). Calls (`bl`, `blr`) are costed as the taken branches `b`, `br`:
# llvm-mca does not model calls and would charge each a 100-cycle placeholder.
#
# Batch: the paper's batches by default (FP32 32, int8 256), plus each precision at the other's
# batch (int8 at 32, FP32 at 256; --no-equal skips them) so int8/FP32 per sample is compared at
# equal batch too. A step is a fixed part (ZO perturbation passes, weight packing, optimizer)
# plus a part proportional to the batch, so cycles/sample at a small batch overstate the
# per-sample cost at a larger one; with two batches per precision the report fits
# cycles(B) = fixed + B x per_sample (a straight line through the two points).
# Time: ~10 s per FP32 run at batch 32, ~1 min per run at batch 256 (qemu + awk, one at a time).
#
# Usage: scripts/a53-model.sh [--build-dir DIR] [--batch B | --fp32-batch B --int8-batch B]
#          [--no-equal] [--methods full_bp,full_zo,cls1,cls2]
#          [--precisions fp32,int8] [--coverage 0.995] [--iterations 100] [--top 15]
#          [--build] [--sanity] [--keep DIR] [--cache-direction] [--perturbation S]
#        scripts/a53-model.sh --compare BENCH.json [--model-dir DIR] [--ghz 1.0] [--efficiency 0.75]
#   --sanity  only the llvm-mca sanity check (FMLA / SMULL-SMLAL2-SADALP loops vs published).
#   --compare BENCH.json  no model run: a board's `zotrain bench --only steps --json` against the
#             committed results (--model-dir, default docs/results/a53-model: one JSON per
#             configuration, as --keep writes them) at --ghz (Zero 2 W: 1.0), with --efficiency
#             per thread when the bench ran more than one (an assumption). Board / model per step
#             and the phase shares side by side, then FP32 @ 32 / int8 @ 256 per sample.
#   --keep DIR  keep the reduced traces (<prec>-<method>-<batch>.tsv) and results (.json) in DIR.
#   --cache-direction  steps with zo.cache_direction (`zotrain bench --cache-direction`).
#   --perturbation S   FP32 steps' zo.perturbation: gaussian (default), rademacher or uniform.
#   --build   (re)build build-dir's zotrain first (preset aarch64, -j1); built anyway if missing.
# The default set (16 runs) takes ~7 min on the 2-core development host.
# stdout: markdown tables; progress on stderr.
# Exit status: 0 ok, 2 bad arguments, 1 failure (build, qemu, llvm-mca, parsing).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lib="${repo}/scripts/lib"
build_dir="${repo}/build/aarch64"
fp32_batch=32
int8_batch=256
equal=1
methods="full_bp,full_zo,cls1,cls2"
precisions="fp32,int8"
coverage=0.995
iterations=100
top=15
build=0
sanity=0
keep=""
bench_extra=()
compare=""
model_dir="${repo}/docs/results/a53-model"
ghz=1.0
efficiency=0.75
die() { echo "a53-model: $*" >&2; exit 2; }
need() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }
posint() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1: expected a non-negative integer, got '$2'"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) need "$@"; build_dir="$2"; shift 2 ;;
    --batch) need "$@"; posint "$1" "$2"; fp32_batch="$2"; int8_batch="$2"; equal=0; shift 2 ;;
    --fp32-batch) need "$@"; posint "$1" "$2"; fp32_batch="$2"; shift 2 ;;
    --int8-batch) need "$@"; posint "$1" "$2"; int8_batch="$2"; shift 2 ;;
    --no-equal) equal=0; shift ;;
    --methods) need "$@"; methods="$2"; shift 2 ;;
    --precisions) need "$@"; precisions="$2"; shift 2 ;;
    --coverage) need "$@"; [[ "$2" =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || die "--coverage: expected 0..1"; coverage="$2"; shift 2 ;;
    --iterations) need "$@"; posint "$1" "$2"; iterations="$2"; shift 2 ;;
    --top) need "$@"; posint "$1" "$2"; top="$2"; shift 2 ;;
    --keep) need "$@"; keep="$2"; shift 2 ;;
    --build) build=1; shift ;;
    --cache-direction) bench_extra+=(--cache-direction); shift ;;
    --perturbation) need "$@"; [[ "$2" =~ ^(gaussian|rademacher|uniform)$ ]] ||
                      die "--perturbation: expected gaussian, rademacher or uniform, got '$2'"
                    bench_extra+=(--perturbation "$2"); shift 2 ;;
    --sanity) sanity=1; shift ;;
    --compare) need "$@"; compare="$2"; shift 2 ;;
    --model-dir) need "$@"; model_dir="$2"; shift 2 ;;
    --ghz) need "$@"; [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--ghz: expected a number, got '$2'"; ghz="$2"; shift 2 ;;
    --efficiency) need "$@"; [[ "$2" =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || die "--efficiency: expected 0..1, got '$2'"; efficiency="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for m in ${methods//,/ }; do [[ "$m" =~ ^(full_bp|full_zo|cls1|cls2)$ ]] || die "unknown method $m"; done
for p in ${precisions//,/ }; do [[ "$p" =~ ^(fp32|int8)$ ]] || die "unknown precision $p"; done
[[ "${fp32_batch}" -gt 0 && "${int8_batch}" -gt 0 && "${iterations}" -gt 0 ]] || die "batches and --iterations must be > 0"

command -v python3 >/dev/null || { echo "a53-model: python3 missing" >&2; exit 1; }
if [[ -n "${compare}" ]]; then
  [[ -r "${compare}" ]] || die "--compare: cannot read ${compare}"
  shopt -s nullglob
  models=("${model_dir}"/*.json)
  [[ ${#models[@]} -gt 0 ]] || die "--model-dir: no *.json in ${model_dir}"
  python3 "${lib}/a53_model.py" compare "${compare}" "${models[@]}" --ghz "${ghz}" --efficiency "${efficiency}" || exit 1
  exit 0
fi
command -v llvm-mca >/dev/null || { echo "a53-model: llvm-mca missing (apt-get install llvm)" >&2; exit 1; }
if [[ "${sanity}" -eq 1 ]]; then
  python3 "${lib}/a53_model.py" sanity --iterations "${iterations}" || exit 1
  exit 0
fi
command -v qemu-aarch64 >/dev/null || { echo "a53-model: qemu-aarch64 missing (apt-get install qemu-user)" >&2; exit 1; }

bin="${build_dir}/zotrain"
if [[ "${build}" -eq 1 || ! -x "${bin}" ]]; then
  echo "a53-model: building ${bin} (preset aarch64, -j1)" >&2
  (cd "${repo}" && cmake --preset aarch64 >/dev/null && nice cmake --build --preset aarch64 -j1 --target zotrain >/dev/null) ||
    { echo "a53-model: build failed" >&2; exit 1; }
fi
sysroot="$(sed -n 's/^ZT_SYSROOT:PATH=//p' "${build_dir}/CMakeCache.txt" 2>/dev/null || true)"
sysroot="${sysroot:-/opt/zotrain-cross/arm64}"
qemu=(qemu-aarch64 -cpu cortex-a53 -L "${sysroot}")
cache="${build_dir}/a53-model-cache.tsv"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
work="${keep:-${tmp}}"
mkdir -p "${work}"
nm_tool=aarch64-linux-gnu-nm
command -v "${nm_tool}" >/dev/null || nm_tool=nm
"${nm_tool}" "${bin}" > "${tmp}/nm.txt" || { echo "a53-model: ${nm_tool} ${bin} failed" >&2; exit 1; }
python3 "${lib}/a53_model.py" markers "${tmp}/nm.txt" > "${work}/markers.tsv" || exit 1
[[ -s "${work}/markers.tsv" ]] || { echo "a53-model: no phase markers found in ${bin}" >&2; exit 1; }
default_isa="$("${qemu[@]}" "${bin}" --version | sed -n 's/.*(kernels: \(.*\)).*/\1/p')"
echo "a53-model: ${bin}, qemu -cpu cortex-a53, kernel path ${default_isa:-?}, $(llvm-mca --version | sed -n 's/.*LLVM version \([0-9.]*\).*/LLVM \1/p')" >&2

# model PRECISION METHOD BATCH: one qemu run, reduced by awk, analysed by the helper.
jsons=()
model() {
  local precision="$1" method="$2" batch="$3"
  local tag="${precision}-${method}-${batch}" t0=${SECONDS}
  echo "a53-model: running ${precision} ${method} batch ${batch} under qemu ..." >&2
  env OMP_NUM_THREADS=1 "${qemu[@]}" -d in_asm,exec,nochain -D /dev/stderr \
      "${bin}" bench --run-steps 2 --precision "${precision}" --method "${method}" \
      --batch "${batch}" --threads 1 ${bench_extra[@]+"${bench_extra[@]}"} 2>&1 >/dev/null |
    LC_ALL=C awk -v markers="${work}/markers.tsv" -f "${lib}/a53_trace.awk" > "${work}/${tag}.tsv"
  local status=("${PIPESTATUS[@]}")
  [[ "${status[0]}" -eq 0 && "${status[1]}" -eq 0 ]] ||
    { echo "a53-model: qemu/awk failed for ${tag} (${status[*]})" >&2; exit 1; }
  python3 "${lib}/a53_model.py" analyze "${work}/${tag}.tsv" "${work}/${tag}.json" \
      --precision "${precision}" --method "${method}" --batch "${batch}" --coverage "${coverage}" \
      --iterations "${iterations}" --cache "${cache}" --top "${top}" ||
    { echo "a53-model: analysis failed for ${tag}" >&2; exit 1; }
  echo "a53-model: ${tag} done in $((SECONDS - t0)) s" >&2
  jsons+=("${work}/${tag}.json")
}

for precision in ${precisions//,/ }; do
  if [[ "${precision}" == fp32 ]]; then b="${fp32_batch}"; else b="${int8_batch}"; fi
  for method in ${methods//,/ }; do model "${precision}" "${method}" "${b}"; done
done
# Equal batch: each precision also at the other's batch.
if [[ "${equal}" -eq 1 && ",${precisions}," == *",fp32,"* && ",${precisions}," == *",int8,"* &&
      "${fp32_batch}" -ne "${int8_batch}" ]]; then
  for method in ${methods//,/ }; do model int8 "${method}" "${fp32_batch}"; done
  for method in ${methods//,/ }; do model fp32 "${method}" "${int8_batch}"; done
fi

echo "Predicted Cortex-A53 cycles: qemu-aarch64 -cpu cortex-a53 block counts x llvm-mca -mcpu=cortex-a53" \
     "(iterations ${iterations}, coverage ${coverage}); kernel path ${default_isa:-?}; 1 thread; synthetic LeNet-5."
echo
python3 "${lib}/a53_model.py" report --top "${top}" "${jsons[@]}" || exit 1
echo
python3 "${lib}/a53_model.py" sanity --iterations "${iterations}" || exit 1
