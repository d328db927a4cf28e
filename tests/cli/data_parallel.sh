#!/usr/bin/env bash
# Data-parallel runs under mpirun (docs/design.md §15), on this machine's cores:
# 1. LeNet-5 and PointNet, FP32 and int8, Full BP / Full ZO / ElasticZO C = L−1 and L−2: the
#    weights after the run are bit-identical for 1 (no mpirun), 2 and 3 ranks; summary.json
#    reports the ranks, the sharded layers and the bytes received per step; rank 0 alone writes;
# 2. a run started on 3 ranks, stopped at a checkpoint and resumed on 2, ends with the
#    single-process weights;
# 3. a rank killed mid-run ends the job with a non-zero exit and a message, and the last
#    checkpoint resumes (on one process) to the uninterrupted weights.
# Usage: data_parallel.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/data_parallel"
fresh_dir "${out}"
command -v mpirun > /dev/null || { echo "mpirun not found (openmpi-bin)"; exit 77; }
# Open MPI refuses root unless told (CI runs as root); oversubscribe: 3 ranks on 2 cores.
if [[ "$(id -u)" -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpi() { local n="$1"; shift; mpirun --oversubscribe --bind-to none -np "${n}" "$@"; }
digest_of() { json_field "$1/summary.json" 's["weights_digest"]'; }

synthetic="${out}/synthetic"
"${zotrain}" --make-synthetic-modelnet "${synthetic}" --synthetic-classes 10 --synthetic-train 3 \
  --synthetic-test 1 --synthetic-seed 3 > /dev/null 2>&1 || fail "writing the synthetic point clouds"

# case_args MODEL PRECISION METHOD: the settings of one case (as tests/cli/digest_cases.cmake).
case_args() {
  local model="$1" precision="$2" method="$3"
  args=(--config "${repo}/tests/fixtures/digest/${model}.json" --set "model.precision=${precision}"
        --set train.threads=1 --no-progress)
  [[ ${precision} == int8 ]] && args+=(--set optimizer.name=sgd)
  case "${method}" in
    cls1) args+=(--set method.name=elastic_zo --set method.partition=zo-feat-cls1) ;;
    cls2) args+=(--set method.name=elastic_zo --set method.partition=zo-feat-cls2) ;;
    *) args+=(--set "method.name=${method}") ;;
  esac
  if [[ ${model} == pointnet ]]; then
    args+=(--set "data.root=${synthetic}" --set train.batch_size=12)
  else
    args+=(--set "data.root=${repo}/data/mnist-subset" --set train.max_steps=4)
  fi
}

# --- 1. Bit-identical for 1, 2 and 3 ranks.
cases=0
for model in lenet5 pointnet; do
  for precision in fp32 int8; do
    for method in full_bp full_zo cls1 cls2; do
      name="${model}.${precision}.${method}"
      case_args "${model}" "${precision}" "${method}"
      "${zotrain}" "${args[@]}" --output-dir "${out}/${name}.1" > /dev/null 2> "${out}/${name}.1.log" ||
        fail "${name}: the single-process run failed: $(tail -3 "${out}/${name}.1.log")"
      ref="$(digest_of "${out}/${name}.1")"
      line="${name}: ${ref:0:12}"
      for n in 2 3; do
        dir="${out}/${name}.${n}"
        mpi "${n}" "${zotrain}" "${args[@]}" --output-dir "${dir}" > "${dir}.out" 2> "${dir}.log" ||
          fail "${name}: mpirun -np ${n} exited $?: $(tail -5 "${dir}.log")"
        got="$(digest_of "${dir}")"
        [[ "${got}" == "${ref}" ]] || fail "${name}: ${n} ranks end with weights ${got}, one process ${ref}"
        read -r ranks sharded total < <(json_field "${dir}/summary.json" \
          '"%d %d %g" % (s["parallel"]["ranks"], s["parallel"]["rank_layers"]["sharded"], s["parallel"]["bytes_received_per_step"]["total"])')
        [[ ${ranks} -eq ${n} ]] || fail "${name}: summary.json parallel.ranks ${ranks}, ran ${n}"
        # LeNet-5's probes shard every layer before the backprop segment (PointNet's BatchNorm
        # keeps its runs whole on every rank, docs/design.md §15).
        if [[ ${model} == lenet5 && ${method} != full_bp ]]; then
          (( sharded > 0 )) || fail "${name}: ${n} ranks shard no layer"
          [[ ${total} != 0 ]] || fail "${name}: ${n} ranks exchange no bytes"
        fi
        # One writer: rank 0's result lines once on stdout, its start-up line once on stderr.
        [[ $(grep -c "test accuracy" "${dir}.out") -eq 1 ]] ||
          fail "${name}: ${n} ranks printed the result $(grep -c "test accuracy" "${dir}.out") times"
        [[ $(grep -c "C = " "${dir}.log") -eq 1 ]] ||
          fail "${name}: ${n} ranks logged the start-up line $(grep -c "C = " "${dir}.log") times"
        line+=", ${n} ranks: same (${sharded} layers sharded, ${total} B/step)"
      done
      echo "${line}"
      cases=$(( cases + 1 ))
    done
  done
done
echo "${cases} cases: the weights of 2 and 3 ranks equal one process's"

# --- 2. Started on 3 ranks, resumed on 2.
for precision in fp32 int8; do
  case_args lenet5 "${precision}" cls2
  ref_dir="${out}/resume-${precision}.ref"
  "${zotrain}" "${args[@]}" --set train.max_steps=6 --output-dir "${ref_dir}" > /dev/null 2>&1 ||
    fail "resume ${precision}: the reference run failed"
  dir="${out}/resume-${precision}"
  mpi 3 "${zotrain}" "${args[@]}" --set train.max_steps=3 --output-dir "${dir}" > /dev/null 2> "${dir}.log" ||
    fail "resume ${precision}: 3 ranks: exit $?: $(tail -5 "${dir}.log")"
  [[ -f "${dir}/checkpoint.safetensors" ]] || fail "resume ${precision}: 3 ranks left no checkpoint"
  mpi 2 "${zotrain}" --resume "${dir}" --set train.max_steps=6 --no-progress > /dev/null 2> "${dir}.log" ||
    fail "resume ${precision}: --resume on 2 ranks: exit $?: $(tail -5 "${dir}.log")"
  got="$(digest_of "${dir}")" ref="$(digest_of "${ref_dir}")"
  [[ "${got}" == "${ref}" ]] || fail "resume ${precision}: 3 then 2 ranks end with ${got}, one process ${ref}"
  echo "resume ${precision}: 3 steps on 3 ranks, 3 more on 2 ranks: the one-process weights"
done

# --- 3. A rank killed mid-run.
case_args lenet5 int8 cls2
args+=(--set train.max_steps=null --set train.epochs=40 --set data.train_limit=256
       --set output.checkpoint_every=1 --set train.log_every=1)
ref_dir="${out}/killed.ref"
"${zotrain}" "${args[@]}" --output-dir "${ref_dir}" > /dev/null 2>&1 || fail "killed: the reference run failed"
dir="${out}/killed"
mpi 2 "${zotrain}" "${args[@]}" --output-dir "${dir}" > /dev/null 2> "${dir}.log" &
job=$!
follower=""
for _ in $(seq 1 2000); do
  [[ -f "${dir}/checkpoint.safetensors" ]] && break
  sleep 0.01
done
[[ -f "${dir}/checkpoint.safetensors" ]] || fail "killed: no checkpoint within 20 s: $(tail -3 "${dir}.log")"
# The ranks are mpirun's children; kill the one that does not write (the last started).
follower="$(pgrep -P "$(pgrep -n -P "${job}" mpirun || echo "${job}")" -f -- "--output-dir ${dir}" | sort -n | tail -1)"
[[ -n "${follower}" ]] || fail "killed: no rank process found"
kill -KILL "${follower}"
rc=0
wait "${job}" || rc=$?
(( rc != 0 )) || fail "killed: the job exited 0 with a rank killed"
# mpirun's own report names the rank and the signal.
grep -qE "rank 1 .*(signal|Killed)" "${dir}.log" || fail "killed: no message names the dead rank: $(tail -5 "${dir}.log")"
pgrep -f -- "--output-dir ${dir}" > /dev/null && fail "killed: ranks left running"
"${zotrain}" --resume "${dir}" --no-progress -q > /dev/null 2> "${dir}.resume.log" ||
  fail "killed: --resume on one process failed: $(tail -3 "${dir}.resume.log")"
finished "${dir}" "$(digest_of "${ref_dir}")" "killed: resumed on one process"
echo "a rank killed: mpirun exited ${rc} ("$(grep -m1 -oE "process rank 1 .*" "${dir}.log")")," \
     "the checkpoint resumed to the uninterrupted weights"
echo "data-parallel: bit-identical"
