#!/usr/bin/env bash
# Guest instructions executed by ONE training step per method under qemu-aarch64, on the
# trainers' default kernel path (the fastest available: neon on a Cortex-A53) and on the
# portable path (ZT_ISA=portable), so a board speed-up can be estimated without a board.
# Timings under qemu mean nothing; instruction counts do (roughly: a NEON instruction does up
# to 4 FP32 / 16 int8 lanes of work, and the A53 issues about one NEON instruction per cycle).
#
# How: `zotrain bench --run-steps 2` runs exactly two steps of one method on synthetic LeNet-5
# input, 1 thread, calling the empty function zt_bench_step_boundary before each step and after
# the last. qemu-user 7.2 logs every translated block's guest instructions (-d in_asm) and, with
# chaining off (-d nochain), every execution of a block with its function's name (-d exec); awk
# sums the instruction counts of the blocks executed between the 2nd and 3rd boundary: the
# second step (start-up, set-up and the first step's warm-up left out). Debian 12 ships neither
# qemu's TCG plugins (libinsn.so) nor qemu-plugin.h to build one, so `-plugin` is not an option.
# A block that exits early (a fault, an exclusive-access retry) is counted whole; --singlestep
# makes every block one instruction (exact, slower) to check that this does not matter.
#
# Batch 8 by default (every executed block is one log line; at batch 32 a run takes
# several minutes per method on a busy 2-core machine). A step's count is a fixed part (the ZO
# perturbation passes, ~7 M instructions for Cls1 on the portable path) plus a part
# proportional to the batch, so compare methods at the batch you will train with.
#
# Usage: scripts/count-insns.sh [--build-dir DIR] [--cpu cortex-a53] [--batch B]
#          [--methods full_bp,full_zo,cls1,cls2] [--precisions fp32,int8] [--singlestep] [--build]
# Prints a table: precision, method, batch, insns on the default path, insns on portable, and
# portable / default (the estimated speed-up if every instruction cost the same).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${repo}/build/aarch64"
cpu=cortex-a53
batch=8
methods="full_bp,full_zo,cls1,cls2"
precisions="fp32,int8"
singlestep=0
build=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --methods) methods="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --singlestep) singlestep=1; shift ;;
    --build) build=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "count-insns: unknown option $1" >&2; exit 2 ;;
  esac
done
bin="${build_dir}/zotrain"
if [[ "${build}" -eq 1 || ! -x "${bin}" ]]; then
  (cd "${repo}" && cmake --preset aarch64 >/dev/null && nice cmake --build --preset aarch64 -j2 --target zotrain >/dev/null)
fi
command -v qemu-aarch64 >/dev/null || { echo "count-insns: qemu-aarch64 missing (apt-get install qemu-user)" >&2; exit 1; }
# The target's libraries: the build directory's sysroot (toolchains/debian-sysroot.cmake).
sysroot="$(sed -n 's/^ZT_SYSROOT:PATH=//p' "${build_dir}/CMakeCache.txt" 2>/dev/null)"
sysroot="${sysroot:-/opt/zotrain-cross/arm64}"
qemu=(qemu-aarch64 -cpu "${cpu}" -L "${sysroot}")

# count ISA PRECISION METHOD → guest instructions of the second of two training steps
count() {
  local isa="$1" precision="$2" method="$3"
  local args=(bench --run-steps 2 --precision "${precision}" --method "${method}" --batch "${batch}" --threads 1)
  local extra=()
  [[ "${singlestep}" -eq 1 ]] && extra=(-singlestep)  # one instruction per block
  env ZT_ISA="${isa}" OMP_NUM_THREADS=1 "${qemu[@]}" "${extra[@]}" -d in_asm,exec,nochain -D /dev/stderr \
      "${bin}" "${args[@]}" 2>&1 >/dev/null | LC_ALL=C awk '
    # "IN: <symbol>" starts a translated block; its lines "0x<pc>:  <encoding>  <insn>" follow.
    /^IN:/ { in_tb = 1; first = ""; next }
    in_tb && /^0x[0-9a-f]+:/ { a = substr($1, 3, length($1) - 3); if (first == "") { first = a; n[a] = 0 } n[first]++; next }
    in_tb { in_tb = 0 }
    # "Trace <cpu>: <host> [<cs_base>/<pc>/<flags>/<cflags>] <symbol>": one execution of the
    # block at pc. zotrain calls zt_bench_step_boundary before each step and after the last:
    # segment 0 is start-up, segment k step k.
    /^Trace / {
      if ($5 == "zt_bench_step_boundary") { ++seg; next }
      split($4, f, "/"); pc = f[2]; sub(/^0+/, "", pc); insns[seg] += n[pc]
    }
    END { if (seg != 3) { print "count-insns: expected 3 step boundaries, saw " seg > "/dev/stderr"; exit 1 }
          printf "%.0f\n", insns[2] }'
  local status=("${PIPESTATUS[@]}")
  [[ "${status[0]}" -eq 0 && "${status[1]}" -eq 0 ]] ||
    { echo "count-insns: zotrain ${args[*]} (ZT_ISA=${isa}) failed (${status[*]})" >&2; exit 1; }
}

# The default path's name as the binary reports it under this CPU (e.g. "neon").
default_isa="$("${qemu[@]}" "${bin}" --version | sed -n 's/.*(kernels: \(.*\)).*/\1/p')"
[[ -n "${default_isa}" ]] || { echo "count-insns: cannot read the default kernel path from --version" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
mode="in_asm+exec block counts"
[[ "${singlestep}" -eq 1 ]] && mode="-singlestep: one instruction per block"
echo "guest instructions of one training step: qemu-aarch64 -cpu ${cpu}, 1 thread, batch ${batch}, synthetic LeNet-5 (${mode})"
printf '%-5s %-8s %6s %16s %16s %9s\n' prec method batch "insns ${default_isa}" "insns portable" "port/${default_isa}"
for precision in ${precisions//,/ }; do
  for method in ${methods//,/ }; do
    # The two paths run side by side (one per core); each writes its count to a file.
    count "${default_isa}" "${precision}" "${method}" > "${tmp}/best" &
    best_pid=$!
    count portable "${precision}" "${method}" > "${tmp}/portable" &
    port_pid=$!
    wait "${best_pid}" && wait "${port_pid}" || { echo "count-insns: ${precision} ${method} failed" >&2; exit 1; }
    best="$(cat "${tmp}/best")" port="$(cat "${tmp}/portable")"
    printf '%-5s %-8s %6d %16d %16d %8.2fx\n' "${precision}" "${method}" "${batch}" "${best}" "${port}" \
      "$(awk -v a="${port}" -v b="${best}" 'BEGIN { print (b > 0 ? a / b : 0) }')"
  done
done
