#!/usr/bin/env bash
# What the binary tells a user around a run: the start-up line names method, precision, C and the
# ZO part (preset, estimator, perturbation, q); --dry-run says whether the predicted peak fits the
# 512 MB board or not (and summary.json records it); --init-from is logged and recorded in summary.json
# (run.init_from: path and weights digest, kept by --resume); -q quiets stderr only (the results stay on stdout);
# `zotrain eval --threads N` is accepted; `zotrain eval --validation` with another hold-out than
# the run's is refused (it would score samples the run trained on); a --set error names the --set.
# Usage: guardrails.sh ZOTRAIN REPO OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/guardrails"
fresh_dir "${out}"
tiny=(--config "${repo}/tests/fixtures/tiny.json" --set "data.root=${repo}/data/mnist-subset"
      --set data.test_limit=32 --set train.threads=1 --no-progress)

# 1. The start-up line and the dry run's fit to the board.
"${zotrain}" "${tiny[@]}" --set zo.preset=prge --set train.batch_size=8 --dry-run \
  --output-dir "${out}/dry" > "${out}/dry.out" 2> "${out}/dry.log" ||
  fail "the dry run failed: $(tail -3 "${out}/dry.log")"
grep -q "elastic_zo fp32 lenet5 on mnist" "${out}/dry.log" || fail "start-up line: $(cat "${out}/dry.log")"
grep -q "ZO: zo.preset prge, estimator two_sided, perturbation gaussian, q = 4" "${out}/dry.log" ||
  fail "the start-up line does not name the ZO part: $(cat "${out}/dry.log")"
grep -qE "predicted peak [0-9]+ MiB: fits a 512 MB Raspberry Pi Zero 2 W \(leaves [0-9]+ MiB" \
  "${out}/dry.log" || fail "the dry run does not say it fits the board: $(cat "${out}/dry.log")"
[[ $(json_field "${out}/dry/summary.json" "s['memory']['fits_512mb_board']") == True ]] ||
  fail "summary.json: memory.fits_512mb_board is not true"
# Full BP at batch 4096 keeps ~300 MiB of errors and activations: over the board's budget.
"${zotrain}" "${tiny[@]}" --set method.name=full_bp --set data.train_limit=null --set train.batch_size=4096 --dry-run \
  --output-dir "${out}/big" > /dev/null 2> "${out}/big.log" ||
  fail "the large dry run failed: $(tail -3 "${out}/big.log")"
grep -qE "predicted peak [0-9]+ MiB: does not fit a 512 MB Raspberry Pi Zero 2 W \([0-9]+ MiB over .*train.batch_size" \
  "${out}/big.log" || fail "the dry run does not say it does not fit: $(cat "${out}/big.log")"
[[ $(json_field "${out}/big/summary.json" "s['memory']['fits_512mb_board']") == False ]] ||
  fail "summary.json: memory.fits_512mb_board is not false for batch 4096"
echo "start-up line and board fit: ok"

# 2. -q keeps the results on stdout and the log off stderr.
"${zotrain}" "${tiny[@]}" --set train.max_steps=2 -q --output-dir "${out}/src" \
  > "${out}/src.out" 2> "${out}/src.log" || fail "the quiet run failed: $(tail -3 "${out}/src.log")"
grep -q "test accuracy" "${out}/src.out" || fail "-q hid the results on stdout: $(cat "${out}/src.out")"
! grep -q " info " "${out}/src.log" || fail "-q still logs info lines: $(cat "${out}/src.log")"
echo "-q: ok"

# 3. --init-from: logged and recorded with the source's weights digest.
digest=$(json_field "${out}/src/summary.json" "s['weights_digest']")
"${zotrain}" "${tiny[@]}" --set train.max_steps=1 --init-from "${out}/src" \
  --output-dir "${out}/init" > /dev/null 2> "${out}/init.log" ||
  fail "the --init-from run failed: $(tail -3 "${out}/init.log")"
grep -q "initialised parameters from .*checkpoint.safetensors (weights digest ${digest})" \
  "${out}/init.log" || fail "--init-from is not logged with the digest: $(cat "${out}/init.log")"
[[ $(json_field "${out}/init/summary.json" "s['run']['init_from']['weights_digest']") == "${digest}" ]] ||
  fail "summary.json: run.init_from.weights_digest is not the source's ${digest}"
json_field "${out}/init/summary.json" "s['run']['init_from']['path']" | grep -q "src/checkpoint.safetensors" ||
  fail "summary.json: run.init_from.path"
# Resuming the (finished) run keeps where its parameters came from.
"${zotrain}" --resume "${out}/init" --no-progress > /dev/null 2> "${out}/init-resume.log" ||
  fail "--resume of the --init-from run failed: $(tail -3 "${out}/init-resume.log")"
[[ $(json_field "${out}/init/summary.json" "s['run']['init_from']['weights_digest']") == "${digest}" ]] ||
  fail "summary.json after --resume: run.init_from is lost"
echo "--init-from: ok"

# 4. eval --threads, and eval --validation with another hold-out.
"${zotrain}" eval "${out}/src" --threads 1 > "${out}/eval.out" 2> "${out}/eval.log" ||
  fail "eval --threads 1 was refused: $(cat "${out}/eval.log")"
grep -q "test accuracy" "${out}/eval.out" || fail "eval --threads 1: $(cat "${out}/eval.out")"
set +e
"${zotrain}" eval "${out}/src" --validation --set data.validation=100 > /dev/null 2> "${out}/val.log"
code=$?
set -e
[[ ${code} -eq 2 ]] || fail "eval --validation with another data.validation: exit ${code}, expected 2"
grep -q "data.validation = 100 but the run trained with data.validation = null" "${out}/val.log" ||
  fail "eval --validation: $(cat "${out}/val.log")"
echo "eval: ok"

# 5. A --set error names the --set, not the config file.
set +e
"${zotrain}" "${tiny[@]}" --set model.precision=int8 --set zo.batched=true --dry-run \
  --output-dir "${out}/bad" > /dev/null 2> "${out}/bad.log"
code=$?
set -e
[[ ${code} -eq 2 ]] || fail "an incompatible --set: exit ${code}, expected 2"
grep -q "error --set zo.batched=true: zo.batched" "${out}/bad.log" ||
  fail "the error does not name the --set: $(cat "${out}/bad.log")"
[[ ! -e "${out}/bad" ]] || fail "the refused run wrote its directory"
echo "--set origin: ok"
