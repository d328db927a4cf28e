#!/usr/bin/env bash
# Checkpoints that do not fit, or lie, are refused by --resume and by --init-from (and those that
# lie about their weights or run state by `zotrain eval`) with exit 2 and an error naming the
# file and what is wrong, and nothing is written: --resume leaves the run directory byte for byte
# as it was, --init-from creates no output directory. The cases: a PointNet checkpoint for a
# LeNet-5 run, an int8 one for an FP32 run (--resume only: --init-from converts between
# precisions by design), another checkpoint format (a later zotrain), a truncated file, a header
# length past the end, data_offsets past the end, two tensors' data_offsets overlapping, a shape
# and a dtype that do not match the byte count, a metadata number that is not one, an int8 weight
# of −128 (outside the int8 range); headers whose byte counts add up but whose meaning does not
# (a transposed shape, FP32 and int8, a tensor missing, an unknown one), a NaN weight, a negative
# or infinite BatchNorm statistic (eval of a PointNet checkpoint), run-state
# metadata contradicting itself or the run; and for --resume a truncated or missing optimizer
# file, an infinite Adam moment, and the optimizer file of another run at the same step.
# Usage: checkpoint_refusal.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/checkpoint-refusal"
fresh_dir "${out}"
quiet=(--no-progress -q --set train.threads=1)

# The sources: a LeNet-5 FP32 run stopped after 2 steps (Adam: with optimizer.safetensors), an
# int8 one, and a PointNet one on a small synthetic set.
lenet=(--config "${repo}/tests/fixtures/tiny.json" --set data.test_limit=32)
"${zotrain}" "${lenet[@]}" --set train.max_steps=2 "${quiet[@]}" --output-dir "${out}/lenet" \
  > /dev/null 2> "${out}/lenet.log" || fail "the LeNet-5 run failed: $(tail -3 "${out}/lenet.log")"
"${zotrain}" --config "${repo}/tests/fixtures/int8.json" --set train.batch_size=32 --set data.test_limit=32 \
  --set train.max_steps=1 "${quiet[@]}" --output-dir "${out}/int8" > /dev/null 2> "${out}/int8.log" ||
  fail "the int8 run failed: $(tail -3 "${out}/int8.log")"
"${zotrain}" --make-synthetic-modelnet "${out}/points" --synthetic-classes 10 --synthetic-train 1 \
  --synthetic-test 2 > /dev/null 2>&1 || fail "make-synthetic-modelnet failed"
"${zotrain}" --config "${repo}/configs/pointnet-synthetic.json" --set "data.root=${out}/points" \
  --set data.points=32 --set train.batch_size=8 --set train.max_steps=1 "${quiet[@]}" \
  --output-dir "${out}/pointnet" > /dev/null 2> "${out}/pointnet.log" ||
  fail "the PointNet run failed: $(tail -3 "${out}/pointnet.log")"

# forge SRC DST HOW: a copy of a safetensors file, altered (tests/cli/forge_safetensors.py).
forge() { /usr/bin/python3 "${repo}/tests/cli/forge_safetensors.py" "$@" || fail "forge $*"; }
snapshot() { (cd "$1" && find . -type f -exec sha256sum {} + | sort); }
resumes=0 inits=0 evals=0

# refuse_resume CASE PATTERN FILE: FILE is the checkpoint.safetensors of a copy of the LeNet-5 run.
# An optional 4th argument names the file the error must name (default: the checkpoint).
refuse_resume() {
  local name="$1" pattern="$2" src="$3" dir="${out}/resume-$1"
  cp -a "${out}/lenet" "${dir}"
  [[ "${src}" == - ]] || cp "${src}" "${dir}/checkpoint.safetensors"
  [[ -z "${5:-}" ]] || eval "$5"  # a further change to the copy
  local named="${dir}/${4:-checkpoint.safetensors}" before code
  before="$(snapshot "${dir}")"
  set +e; "${zotrain}" --resume "${dir}" --no-progress > /dev/null 2> "${dir}.log"; code=$?; set -e
  [[ ${code} -eq 2 ]] || fail "--resume ${name}: exit ${code}, expected 2: $(tail -3 "${dir}.log")"
  grep -qF "${named}" "${dir}.log" || fail "--resume ${name}: the error does not name ${named}: $(cat "${dir}.log")"
  grep -qE "${pattern}" "${dir}.log" || fail "--resume ${name}: the error does not say '${pattern}': $(cat "${dir}.log")"
  [[ "$(snapshot "${dir}")" == "${before}" ]] || fail "--resume ${name}: the run directory changed"
  echo "--resume ${name}: $(grep -o 'error .*' "${dir}.log" | head -1)"
  resumes=$(( resumes + 1 ))
}

# refuse_init CASE PATTERN FILE: a fresh LeNet-5 run started from FILE.
refuse_init() {
  local name="$1" pattern="$2" src="$3" dir="${out}/init-$1" code
  set +e; "${zotrain}" "${lenet[@]}" --init-from "${src}" --no-progress --output-dir "${dir}" \
    > /dev/null 2> "${dir}.log"; code=$?; set -e
  [[ ${code} -eq 2 ]] || fail "--init-from ${name}: exit ${code}, expected 2: $(tail -3 "${dir}.log")"
  grep -qF "${src}" "${dir}.log" || fail "--init-from ${name}: the error does not name ${src}: $(cat "${dir}.log")"
  grep -qE "${pattern}" "${dir}.log" || fail "--init-from ${name}: the error does not say '${pattern}': $(cat "${dir}.log")"
  [[ ! -e "${dir}" ]] || fail "--init-from ${name}: ${dir} was created"
  echo "--init-from ${name}: $(grep -o 'error .*' "${dir}.log" | head -1)"
  inits=$(( inits + 1 ))
}

# refuse_eval CASE PATTERN FILE: `zotrain eval FILE` (the config it carries).
refuse_eval() {
  local name="$1" pattern="$2" src="$3" log="${out}/eval-$1.log" code
  set +e; "${zotrain}" eval "${src}" > "${out}/eval-$1.out" 2> "${log}"; code=$?; set -e
  [[ ${code} -eq 2 ]] || fail "eval ${name}: exit ${code}, expected 2: $(tail -3 "${log}") $(cat "${out}/eval-$1.out")"
  grep -qF "${src}" "${log}" || fail "eval ${name}: the error does not name ${src}: $(cat "${log}")"
  grep -qE "${pattern}" "${log}" || fail "eval ${name}: the error does not say '${pattern}': $(cat "${log}")"
  [[ ! -s "${out}/eval-$1.out" ]] || fail "eval ${name}: printed a result: $(cat "${out}/eval-$1.out")"
  echo "eval ${name}: $(grep -o 'error .*' "${log}" | head -1)"
  evals=$(( evals + 1 ))
}

good="${out}/lenet/checkpoint.safetensors"
refuse_resume pointnet "different model.*pointnet fp32.*this run is lenet5 fp32" "${out}/pointnet/checkpoint.safetensors"
refuse_init pointnet "tensor '.*' is F32 \[[0-9, ]+\]; the model expects F32 \[[0-9, ]+\]|has no tensor" "${out}/pointnet/checkpoint.safetensors"
refuse_resume int8 "different model.*lenet5 int8.*this run is lenet5 fp32" "${out}/int8/checkpoint.safetensors"

forge "${good}" "${out}/version.safetensors" 'meta:format=zotrain-checkpoint-9' 'meta:zotrain_version=9.0.0'
refuse_resume version "format 'zotrain-checkpoint-9' \(written by zotrain 9.0.0\) is not the format" "${out}/version.safetensors"
refuse_init version "format 'zotrain-checkpoint-9' \(written by zotrain 9.0.0\) is not the format" "${out}/version.safetensors"

forge "${good}" "${out}/truncated.safetensors" truncate:1000
forge "${good}" "${out}/header-length.safetensors" header-length:past-end
forge "${good}" "${out}/offsets.safetensors" offsets:past-end
forge "${good}" "${out}/overlap.safetensors" offsets:overlap
forge "${good}" "${out}/shape.safetensors" shape:wrong
forge "${good}" "${out}/dtype.safetensors" dtype:I8
forge "${good}" "${out}/metadata.safetensors" 'meta:epoch=two'
for c in "truncated|reach past the [0-9]+ bytes of data" "header-length|header length [0-9]+ exceeds the file" \
         "offsets|reach past the [0-9]+ bytes of data" "overlap|overlap \(data_offsets" \
         "shape|F32 \[[0-9, ]+\] is [0-9]+ bytes, but its data_offsets span" "dtype|I8 \[[0-9, ]+\] is [0-9]+ bytes, but its data_offsets span"; do
  refuse_resume "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
  refuse_init "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
done
refuse_resume metadata "metadata .epoch. is .two., not a count" "${out}/metadata.safetensors"

# An int8 weight of −128: --init-from (int8 into this FP32 run) names the tensor.
forge "${out}/int8/checkpoint.safetensors" "${out}/int8-min.safetensors" int8-min
refuse_init int8-min "tensor '.*' holds −128 at element 2; int8 values must be in \[−127, 127\]" "${out}/int8-min.safetensors"

# Byte counts that add up, meanings that do not (LeNet-5: fc1.weight [120, 784], conv1.weight
# [6, 1, 5, 5]; 256 training samples / batch 32 = 8 steps per epoch, stopped at step 2).
forge "${good}" "${out}/transposed.safetensors" transpose:fc1.weight
forge "${good}" "${out}/nan.safetensors" nan:conv1.weight@7
forge "${good}" "${out}/missing.safetensors" drop:fc2.bias
forge "${good}" "${out}/unknown.safetensors" extra:fc4.weight
forge "${good}" "${out}/global-step.safetensors" meta:global_step=20
forge "${good}" "${out}/step-in-epoch.safetensors" meta:step_in_epoch=7 meta:global_step=7
for c in "transposed|tensor 'fc1.weight' is F32 \[784, 120\]; the model expects F32 \[120, 784\]" \
         "nan|tensor 'conv1.weight' holds nan at element 7 \[0, 0, 1, 2\]; checkpoint values must be finite" \
         "missing|checkpoint has no tensor 'fc2.bias'" \
         "unknown|tensor 'fc4.weight' is not a tensor of this model \(lenet5"; do
  refuse_resume "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
  refuse_init "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
  refuse_eval "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
done
# The run state (--init-from takes the weights alone, so only --resume and eval).
for c in "global-step|metadata 'global_step' 20 contradicts 'epoch' 0 and 'step_in_epoch' 2: at 8 steps per epoch" \
         "step-in-epoch|metadata 'epoch_acc' counts 2 steps of the open epoch, but 'step_in_epoch' is 7"; do
  refuse_resume "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
  refuse_eval "${c%%|*}" "${c#*|}" "${out}/${c%%|*}.safetensors"
done
# An int8 checkpoint with a transposed weight: converted by --init-from into this FP32 run, the
# dimensions are checked too.
forge "${out}/int8/checkpoint.safetensors" "${out}/int8-transposed.safetensors" transpose:fc1.weight
refuse_init int8-transposed "tensor 'fc1.weight' is I8 \[784, 120\]; the model expects I8 \[120, 784\]" "${out}/int8-transposed.safetensors"
refuse_eval int8-transposed "tensor 'fc1.weight' is I8 \[784, 120\]; the model expects I8 \[120, 784\]" "${out}/int8-transposed.safetensors"

# PointNet's BatchNorm statistics: a running variance below 0, an infinite running mean.
forge "${out}/pointnet/checkpoint.safetensors" "${out}/pointnet-var.safetensors" set:mlp2.bn.running_var@3=-0.5
forge "${out}/pointnet/checkpoint.safetensors" "${out}/pointnet-mean.safetensors" inf:mlp1.bn.running_mean@63
refuse_eval pointnet-var "tensor 'mlp2.bn.running_var' holds -0.5 at element 3 \[3\]; its values must be >= 0" "${out}/pointnet-var.safetensors"
refuse_eval pointnet-mean "tensor 'mlp1.bn.running_mean' holds inf at element 63 \[63\]; checkpoint values must be finite" "${out}/pointnet-mean.safetensors"

# The optimizer file: truncated, missing, an infinite Adam moment, another run's of the same step
# (a second LeNet-5 run with another seed, stopped at the same step 2).
forge "${out}/lenet/optimizer.safetensors" "${out}/optimizer-truncated.safetensors" truncate:100
refuse_resume optimizer-truncated "reach past the [0-9]+ bytes of data" - optimizer.safetensors \
  'cp "${out}/optimizer-truncated.safetensors" "${dir}/optimizer.safetensors"'
refuse_resume optimizer-missing "cannot open" - optimizer.safetensors 'rm "${dir}/optimizer.safetensors"'
forge "${out}/lenet/optimizer.safetensors" "${out}/optimizer-inf.safetensors" inf:optimizer.adam.v@0
refuse_resume optimizer-inf "tensor 'optimizer.adam.v' holds inf at element 0 \[0\]; checkpoint values must be finite" - \
  optimizer.safetensors 'cp "${out}/optimizer-inf.safetensors" "${dir}/optimizer.safetensors"'
"${zotrain}" "${lenet[@]}" --set train.max_steps=2 --set seed=2 "${quiet[@]}" --output-dir "${out}/lenet-seed2" \
  > /dev/null 2> "${out}/lenet-seed2.log" || fail "the second LeNet-5 run failed: $(tail -3 "${out}/lenet-seed2.log")"
refuse_resume optimizer-other-run "optimizer state of other weights \(weights digest [0-9a-f]{16}\), but .*checkpoint.safetensors holds weights digest [0-9a-f]{16} \(both of step 2" - \
  optimizer.safetensors 'cp "${out}/lenet-seed2/optimizer.safetensors" "${dir}/optimizer.safetensors"'

echo "checkpoint-refusal: $(( resumes + inits + evals )) refusals (${resumes} --resume, ${inits} --init-from, ${evals} eval), exit 2, nothing written"
