#!/usr/bin/env bash
# Fuzzes zotrain's readers of outside bytes with libFuzzer (docs/developer.md, "Fuzzing"): the
# config and --set parser, the IDX readers (plain and gzip), the HDF5 point-cloud loader and the
# safetensors checkpoint reader, each under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Usage: scripts/fuzz.sh [SECONDS] [options]
#   SECONDS           how long each harness runs (default 600), one harness after another
#   --only LIST       comma-separated subset of config,idx,modelnet40,checkpoint (default all)
#   --jobs N          N fuzzing processes per harness at once (libFuzzer -fork=N; default 1)
#   --keep-going      do not stop a harness at its first finding: fork mode (-fork=N with crashes,
#                     timeouts and out-of-memory ignored), every finding kept, full SECONDS run
#   --no-build        use the existing build/fuzz as it is
#   -h, --help        this text
# Configures and builds build/fuzz (clang, -DZT_SANITIZE=ON -DZT_FUZZ=ON, no GoogleTest suite),
# then runs each fuzz_<reader> on its working corpus build/fuzz/corpus-work/<reader> (seeded from
# tests/fuzz/corpus/<reader> on the first run and kept, so later runs continue from what earlier
# ones found; the committed corpus is never written to), with tests/fuzz/<reader>.dict.
# Prints per harness: executions, exec/s, corpus size (inputs, bytes), new inputs, findings.
# Findings (crash-*, leak-*, timeout-*, oom-* inputs) are written to build/fuzz/findings/<reader>/;
# replay one with build/fuzz/tests/fuzz/fuzz_<reader> FILE, and once the bug is fixed, add it to
# tests/fuzz/regressions/<reader>/ (ctest fuzz.<reader>.regressions replays them).
# Logs: build/fuzz/logs/<reader>.log. Exit code 1 when any harness found something.
# Needs clang and libclang-rt-dev (libFuzzer), as scripts/install-deps.sh installs them.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo}"

seconds=600
only="config,idx,modelnet40,checkpoint"
jobs=1
build=1
keep_going=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --no-build) build=0 ;;
    --keep-going) keep_going=1 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) seconds="$1" ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ "${seconds}" =~ ^[0-9]+$ && "${jobs}" =~ ^[0-9]+$ && "${jobs}" -ge 1 ]]; then
  echo "fuzz.sh: SECONDS and --jobs must be whole numbers (--jobs at least 1)" >&2
  exit 2
fi

out="build/fuzz"
if [[ "${build}" == 1 ]]; then
  CC=clang CXX=clang++ cmake -S . -B "${out}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DZT_SANITIZE=ON -DZT_FUZZ=ON -DZT_BUILD_TESTS=OFF >/dev/null
  IFS=, read -r -a readers <<<"${only}"
  cmake --build "${out}" --target "${readers[@]/#/fuzz_}"
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "${out}/logs"
status=0
rows=()
IFS=, read -r -a readers <<<"${only}"
for reader in "${readers[@]}"; do
  harness="${out}/tests/fuzz/fuzz_${reader}"
  [[ -x "${harness}" ]] || { echo "fuzz.sh: no ${harness} (unknown reader '${reader}'?)" >&2; exit 2; }
  work="${out}/corpus-work/${reader}"
  findings="${out}/findings/${reader}"
  log="${out}/logs/${reader}.log"
  mkdir -p "${work}" "${findings}"
  cp -n tests/fuzz/corpus/"${reader}"/* "${work}/"
  before="$(find "${work}" -type f | wc -l)"
  args=(-max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="${findings}/" -dict="tests/fuzz/${reader}.dict")
  if [[ "${jobs}" -gt 1 || "${keep_going}" == 1 ]]; then
    args+=(-fork="${jobs}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  found_before="$(find "${findings}" -type f | wc -l)"
  echo "== ${reader}: ${seconds} s, ${jobs} process(es), corpus ${work} (${before} inputs), log ${log}"
  rc=0
  "${harness}" "${args[@]}" "${work}" >"${log}" 2>&1 || rc=$?
  found="$(( $(find "${findings}" -type f | wc -l) - found_before ))"
  execs="$({ grep -oE 'stat::number_of_executed_units: [0-9]+' "${log}" || true; } |
           awk '{s += $2} END {print s + 0}')"
  if [[ "${execs}" == 0 ]]; then  # -fork prints no final stats: the last status line's count
    execs="$({ grep -oE '^#[0-9]+' "${log}" || true; } | tail -n 1 | tr -d '#')"
  fi
  rate="$(( ${execs:-0} / (seconds > 0 ? seconds : 1) ))"
  after="$(find "${work}" -type f | wc -l)"
  bytes="$(du -sb "${work}" | cut -f1)"
  verdict="none"
  if [[ "${rc}" != 0 || "${found}" -gt 0 ]]; then
    verdict="${found} input(s) in ${findings} (exit code ${rc}; see ${log})"
    status=1
  fi
  rows+=("$(printf '%-11s %12s %8s %8s %10s %6s  %s' "${reader}" "${execs:-0}" "${rate}" \
            "${after}" "${bytes}" "$((after - before))" "${verdict}")")
done

printf '\n%-11s %12s %8s %8s %10s %6s  %s\n' harness executions exec/s inputs bytes new findings
printf '%s\n' "${rows[@]}"
exit "${status}"
