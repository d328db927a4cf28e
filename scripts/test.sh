#!/usr/bin/env bash
# Builds and runs the whole test suite: the host build (Release, -march=native) with ctest, then
# the aarch64 and armhf cross builds with ctest under qemu (each build directory's suite includes
# package.deb, which builds and checks the .deb).
#   scripts/test.sh               host, aarch64 on cortex-a53, armhf on cortex-a7
#   scripts/test.sh --host        host only
#   scripts/test.sh --cpu-matrix  host, aarch64 on cortex-a53, -a72, -a76, armhf on cortex-a7, max
#   scripts/test.sh --no-sanitize (with any of the above) leaves out the two sanitizer stages
# After the host stage come two sanitizer stages (clang; docs/developer.md, "Sanitizers"):
# `sanitize`, the host suite under AddressSanitizer + UndefinedBehaviorSanitizer (leak checks on,
# any finding fails its test; the fuzz harnesses too), and `tsan`, the threaded kernels, trainers,
# batch prefetch and the 2-thread digest runs under ThreadSanitizer with LLVM's Archer tool.
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
sanitize=1
for arg in "$@"; do
  case "${arg}" in
    --host) mode=host ;;
    --cpu-matrix) mode=matrix ;;
    --no-sanitize) sanitize=0 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '${arg}' (expected --host, --cpu-matrix or --no-sanitize)" >&2
       exit 2 ;;
  esac
done
# Default CPU first: it is the one the build directory is left configured for.
declare -A cpus=([aarch64]="cortex-a53" [armhf]="cortex-a7")
if [[ "${mode}" == matrix ]]; then
  cpus=([aarch64]="cortex-a53 cortex-a72 cortex-a76" [armhf]="cortex-a7 max")
fi

passed=0
failed=0
skipped=0
summary=()
failures=()  # "stage: test name" of every failed test, repeated at the very end of the output
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
  # ctest's own list ("The following tests FAILED:", one "<n> - <name> (<why>)" per line), so
  # that a CI log cut to its last lines still names what failed and how.
  local t
  while IFS= read -r t; do
    failures+=("${name}: ${t}")
  done < <(sed -n '/^The following tests FAILED:/,/^Errors while running/p' "${log}" |
           sed -nE 's/^[[:space:]]+([0-9]+ - .*)$/\1/p')
  return "${rc}"
}

status=0
echo "== host build =="
cmake --preset host -DZT_WERROR=ON >/dev/null
cmake --build --preset host -j "${jobs}"
run_ctest host host || status=1

if [[ "${sanitize}" -eq 1 ]]; then
  # ASan + UBSan over the whole host suite except the tests below, which run unsanitized in the
  # host stage above: the slowest whole-training tests, which would take the stage past its CI
  # budget (the README commands and the sweep script, 2-3 min each in Release, the reproduce
  # scripts' smoke run, over 10 min under ASan on a loaded 2-core machine, and tail-average's,
  # 2 min under ASan for the 2 s it takes in Release; PointNet
  # stop-and-resume and the partition sweep, 1-1.5 min each; the int8 lean-tail and small-N
  # lean-plan comparisons, the int8 one-epoch runs and int8 Poor Man's Training's 80 steps
  # that must lower a batch's loss, 1-2.5 min each under ASan); the two peak-RSS
  # tests (memory.*), which measure the process's resident memory and so ASan's shadow memory
  # and quarantine, not zotrain's; package.deb (packaging, not code); and faults.sigkill_resume,
  # whose aimed kills trace the run with strace, under which LeakSanitizer cannot run.
  echo "== sanitize build (clang, AddressSanitizer + UndefinedBehaviorSanitizer) =="
  cmake --preset sanitize >/dev/null
  cmake --build --preset sanitize -j "${jobs}"
  san_skip='^(readme\.commands|scripts\.sweep|scripts\.reproduce_smoke|scripts\.tail_average|Methods/ResumeTest\.PointNet.*|Experiment\.PartitionAloneSweepsEveryC'
  san_skip+='|Int8LeanTail\.SameWeightsAsWholeBatch(Forward|Backward)|LeanPlan\.SameWeightsAsWholeBatchPlanSmallN'
  san_skip+='|EndToEnd\.Int8(FullBp|ElasticZoCls1)OneEpoch|Int8Pmt\.LowersTheLossOfABatch'
  san_skip+='|memory\..*|package\.deb|faults\.sigkill_resume)$'
  run_ctest sanitize sanitize -E "${san_skip}" || status=1
  # TSan (slow: 5-15x) on the threaded code only: each OpenMP kernel family's thread-count test
  # (1-3 threads) on the portable path, the requantisation, int8 element-wise and batch-norm
  # code, the trainers' thread-count determinism and ZO-step tests, and the digest runs (2
  # threads, batch prefetch on its own thread, LeNet-5 and PointNet, every method; under clang
  # only the int8 ones run, the FP32 ones report skipped), cli.two_step_run (FP32, every core),
  # PointNet's FP32 steps and 2-thread lean plan (batch-norm and point-stack loops), three
  # experiment runs (prefetch thread, evaluation) and an int8 stop-and-resume.
  echo "== tsan build (clang, ThreadSanitizer + Archer) =="
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "${jobs}"
  tsan_tests='/[A-Za-z0-9]+\.(BitIdenticalForAnyThreadCount|ThreadCountIndependent|ThreadCountDoesNotChangeBits)/portable'
  tsan_tests+='|/[A-Za-z0-9]+\.BitExactAgainstReferenceWithGuardsAndThreads/portable|^QuantS8/.*/portable'
  tsan_tests+='|^ElementwiseS8/.*/portable|^QuantMaxAbs\.|^BatchNormLayer\.|^Determinism\.|Int8Determinism\.'
  tsan_tests+='|^Int8Trainer\.|^ZoStep\.|EveryMethod\.|^Spsa\.|^EstimatorQueries\.|^digest\.|^cli\.two_step_run$'
  tsan_tests+='|^PointNet\.Fp32TrainerStepsForEveryPartition$|^LeanPlan\.SameWeightsAsWholeBatchPlanAtN1024$'
  tsan_tests+='|^Experiment\.(StepRecordsAndStartEvaluation|RunFolderIsSelfDescribing|ValidationSplitIsTheHeldOutTail)$'
  tsan_tests+='|^Methods/ResumeTest\.Int8StopAndResumeGivesTheSameWeights/"full_zo"$'
  run_ctest tsan tsan -R "${tsan_tests}" || status=1
fi

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
      # one-epoch end-to-end runs, the partition sweep: 1-2 min each under qemu-arm, and the
      # trainer-arithmetic tests aarch64 leaves out too) and two experiment-bookkeeping runs
      # (the step records and the validation split, 25-30 s each; they run on aarch64): they test the trainers, not
      # the architecture, and run on the host and on aarch64. aarch64 leaves out the longest
      # of those that compare two plans or two runs of the same trainer (1-2 min each under
      # qemu, about 17 min of the stage's CPU time): the small-N and N = 1024 lean-plan
      # comparisons, the int8 lean-tail comparisons, the three PointNet stop-and-resume runs
      # (1.5 min for full_bp alone; the LeNet-5 ones, FP32 and int8, stay) and the partition sweep; the FP32 one-epoch runs (their weights'
      # closeness to the host's is fp32.close_to_host.*); node perturbation's step against
      # backprop (the trainer's arithmetic, 1,000 forward passes), int8 Poor Man's Training
      # lowering a batch's loss (1,400 forward passes, 2 min under qemu); and the peak-RSS printout
      # at N = 1024, which under qemu-user would measure the emulator too. They run on the
      # host. Of the FP32 plan comparisons that depend on the CPU's rounding, the one at the
      # real point count stays (SameWeightsWhenBackpropReachesTheStackAtN1024); its 18-run
      # small-N sibling (4 min under qemu) runs on the host and under the sanitizers.
      # Both leave out the run-level bookkeeping that is the same code on every architecture
      # (13-55 s each under qemu): the kill between the checkpoint files, the step records, the
      # validation split, the cached-direction run and its resume (its kernels are checked
      # per path), --init-from, refused checkpoints, eval, FP32 stop-and-resume for full_bp and full_zo (elastic_zo, which has both
      # parts, stays, as do the three int8 ones), and the int8 one-epoch runs, whose weights
      # are checked bit for bit against the host's (int8.same_weights_as_host.*).
      # Kernel-path cases that can only skip are not started (0.3 s each under qemu, 201 per
      # stage): avx512_vnni and avx2 on ARM, and neon_dot on a CPU without the dot product (all but
      # cortex-a76 of the CPUs above; the armhf build has no dot-product kernels).
      trainer_only='EstimatorInTrainer\.NodePerturbationStepsAlongTheGradient'
      trainer_only+='|Int8LeanTail\.SameWeightsAsWholeBatch(Forward|Backward)|Int8Pmt\.LowersTheLossOfABatch'
      run_level='Experiment\.(ResumeAfterAKillBetweenTheCheckpointFiles|StepRecordsAndStartEvaluation'
      run_level+='|ValidationSplitIsTheHeldOutTail|CachedDirectionRunsAndResumesWithTheRegeneratedRunsWeights'
      run_level+='|InitFromStartsFromTheCheckpointsWeights|RefusedCheckpointsLeaveNothingWritten'
      run_level+='|Eval(OnTheValidationSplit)?ReproducesTheRuns(Val)?Accuracy)'
      run_level+='|Methods/ResumeTest\.StopAndResumeGivesTheSameWeights/"(full_bp|full_zo)"'
      skip='^(LeanPlan\.SameWeightsAsWholeBatchPlan(SmallN|AtN1024)|Experiment\.PartitionAloneSweepsEveryC'
      skip+='|LeanPlan\.PeakRssOfOneStepAtBatch32|LeanPlan\.SameWeightsWhenBackpropReachesTheStack'
      skip+='|EndToEnd\..*|Methods/ResumeTest\.PointNetStopAndResumeGivesTheSameWeights/.*'
      skip+="|${trainer_only}|${run_level})\$"
      [[ "${arch}" == armhf ]] &&
        skip="^(LeanPlan\.|EndToEnd\.|Methods/ResumeTest\.PointNet|Experiment\.PartitionAloneSweepsEveryC|${trainer_only}"\
"|${run_level}\$)"
      never_runs='avx512_vnni|avx2'
      [[ "${arch}" == aarch64 && "${cpu}" == cortex-a76 ]] || never_runs+='|neon_dot'
      skip+="|/(${never_runs})( |\$)"
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
if [[ "${#failures[@]}" -gt 0 ]]; then
  echo "failed:"
  printf '  %s\n' "${failures[@]}"
fi
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "${status}"
