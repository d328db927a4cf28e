#!/usr/bin/env bash
# Builds and runs the whole test suite: the host build (Release, -march=native) with ctest, then
# the aarch64 and armhf cross builds with ctest under qemu (each build directory's suite includes
# package.deb, which builds and checks the .deb).
#   scripts/test.sh               host, aarch64 on cortex-a53, armhf on cortex-a7
#   scripts/test.sh --host        host only
#   scripts/test.sh --cpu-matrix  host, aarch64 on cortex-a53, -a72, -a76, armhf on cortex-a7, max
# (qemu-arm 7.2 has no cortex-a53 model; `max` is an ARMv8 core in AArch32 state, which is how a
# Cortex-A53 runs a 32-bit OS)
# One build directory per architecture: another emulated CPU is a reconfigure (-DZT_QEMU_CPU),
# which rebuilds nothing (ctest re-lists the GoogleTest cases under the new emulator,
# tests/CMakeLists.txt); the build directory is set back to the default CPU afterwards.
# The armhf runs leave out the long whole-training tests (see below; they run on host and aarch64).
# Prints one line per run, then one closing line "tests: N passed, M failed, K skipped" over all
# runs (skipped: kernel paths the CPU lacks, e.g. NEON on x86, dot product on cortex-a53).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo}"
jobs="$(nproc)"
mode=default
case "${1:-}" in
  "") ;;
  --host) mode=host ;;
  --cpu-matrix) mode=matrix ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (expected --host or --cpu-matrix)" >&2; exit 2 ;;
esac
# Default CPU first: it is the one the build directory is left configured for.
declare -A cpus=([aarch64]="cortex-a53" [armhf]="cortex-a7")
if [[ "${mode}" == matrix ]]; then
  cpus=([aarch64]="cortex-a53 cortex-a72 cortex-a76" [armhf]="cortex-a7 max")
fi

passed=0
failed=0
skipped=0
summary=()
run_ctest() {  # name preset [ctest args...]
  local name="$1" preset="$2" log="build/$1-ctest.log" rc=0 start=${SECONDS}
  shift 2
  ctest --preset "${preset}" -j "${jobs}" --timeout 900 "$@" 2>&1 | tee "${log}" || rc=$?
  local line p=0 f=1 s=0
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "${log}" | tail -n 1 || true)"
  if [[ -n "${line}" ]]; then
    local total
    f="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"${line}")"
    total="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"${line}")"
    s="$(grep -c '(Skipped)$' "${log}" || true)"
    p=$((total - f - s))
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  skipped=$((skipped + s))
  summary+=("$(printf '%-22s %4d passed, %d failed, %3d skipped  (%d s)' "${name}:" "${p}" "${f}" "${s}" $((SECONDS - start)))")
  return "${rc}"
}

status=0
echo "== host build =="
cmake --preset host -DZT_WERROR=ON >/dev/null
cmake --build --preset host -j "${jobs}"
run_ctest host host || status=1

if [[ "${mode}" != host ]]; then
  for arch in aarch64 armhf; do
    first=1
    for cpu in ${cpus[${arch}]}; do
      if [[ "${first}" -eq 1 ]]; then
        echo "== ${arch} cross build, tests under qemu -cpu ${cpu} =="
      else
        echo "== ${arch}: the same build, tests under qemu -cpu ${cpu} =="
      fi
      # The host binary lets the cross tests check that int8 weights are bit-identical across
      # architectures (tests/cli/host_vs_target.cmake).
      cmake --preset "${arch}" -DZT_WERROR=ON "-DZT_HOST_ZOTRAIN=${repo}/build/host/zotrain" \
            "-DZT_QEMU_CPU=${cpu}" >/dev/null
      cmake --build --preset "${arch}" -j "${jobs}"
      # armhf leaves out the long whole-training tests (PointNet's lean plans and resume, the
      # one-epoch end-to-end runs: 1-2 min each under qemu-arm): they test the trainers, not
      # the architecture, and run on the host and on aarch64.
      skip='^$'
      [[ "${arch}" == armhf ]] && skip='^(LeanPlan\.|EndToEnd\.|Methods/ResumeTest\.PointNet)'
      if [[ "${first}" -eq 1 ]]; then
        run_ctest "${arch}-${cpu}" "${arch}" -E "${skip}" || status=1
      else  # the package does not depend on the emulated CPU
        run_ctest "${arch}-${cpu}" "${arch}" -E "${skip}|^package\.deb\$" || status=1
      fi
      first=0
    done
    default_cpu="${cpus[${arch}]%% *}"
    if [[ "${cpu}" != "${default_cpu}" ]]; then
      cmake --preset "${arch}" "-DZT_QEMU_CPU=${default_cpu}" >/dev/null
    fi
  done
fi

printf '%s\n' "${summary[@]}"
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "${status}"
