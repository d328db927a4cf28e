#!/usr/bin/env bash
# Builds and runs the whole test suite: the host build (Release, -march=native) with ctest,
# then the aarch64 cross build with ctest under qemu-aarch64 (-cpu cortex-a53).
#   scripts/test.sh            host + aarch64
#   scripts/test.sh --host     host only
# Prints one closing line "tests: N passed, M failed, K skipped" (skipped: kernel paths the
# CPU lacks, e.g. NEON on x86).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo}"
jobs="$(nproc)"
host_only=0
[[ "${1:-}" == "--host" ]] && host_only=1

passed=0
failed=0
skipped=0
run_ctest() {  # preset
  local log="build/$1-ctest.log" rc=0
  ctest --preset "$1" -j "${jobs}" --timeout 900 2>&1 | tee "${log}" || rc=$?
  local line
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "${log}" | tail -n 1 || true)"
  if [[ -n "${line}" ]]; then
    local total fail
    fail="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"${line}")"
    total="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"${line}")"
    local skip
    skip="$(grep -c '(Skipped)$' "${log}" || true)"
    passed=$((passed + total - fail - skip))
    failed=$((failed + fail))
    skipped=$((skipped + skip))
  else
    failed=$((failed + 1))
  fi
  return "${rc}"
}

status=0
echo "== host build =="
cmake --preset host -DZT_WERROR=ON >/dev/null
cmake --build --preset host -j "${jobs}"
run_ctest host || status=1

if [[ "${host_only}" -eq 0 ]]; then
  echo "== aarch64 cross build, tests under qemu-aarch64 -cpu cortex-a53 =="
  # The host binary lets the aarch64 tests check that int8 weights are bit-identical across
  # architectures (tests/cli/same_weights.cmake).
  cmake --preset aarch64 -DZT_WERROR=ON "-DZT_HOST_ZOTRAIN=${repo}/build/host/zotrain" >/dev/null
  cmake --build --preset aarch64 -j "${jobs}"
  run_ctest aarch64 || status=1
fi

echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "${status}"
