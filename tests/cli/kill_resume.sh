#!/usr/bin/env bash
# Kill -9 at random moments, resume, repeat: a run killed anywhere (start-up, mid-step, while
# writing a checkpoint) leaves a checkpoint that the next --resume accepts, loses at most one
# checkpoint interval, and finishes with the uninterrupted run's weights_digest. LeNet-5 FP32
# (ElasticZO, Adam: checkpoint + optimizer file) and int8 (ElasticZO-INT8), short epochs with a
# checkpoint every 2 epochs. Delays come from bash's RANDOM seeded with SEED (reproducible delays;
# what they hit depends on the machine's speed). With strace installed, one kill in four is aimed
# at a random fsync or rename of the run instead (strace -e inject=...:signal=SIGKILL): those are
# the steps of a checkpoint write. After each kill: the checkpoint's header and data offsets are
# sound, its optimizer file is of the same step, no more than one interval of logged steps is
# lost; at the end: the weights digest, every step and epoch logged once, no temporary file left.
# A run that finishes before its kill is compared with the reference, and the next one starts
# afresh, until KILLS kills have landed. With strace, two more kills in sequence hit the commit
# window of a checkpoint write (commit_window below).
# Usage: kill_resume.sh ZOTRAIN REPO OUTDIR [KILLS (default 50)] [SEED (default 1)]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zotrain="$1" repo="$2" out="$3/kill-resume" kills_wanted="${4:-50}" seed="${5:-1}"
fresh_dir "${out}"
RANDOM="${seed}"
have_strace=0
command -v strace > /dev/null && have_strace=1

steps_per_epoch=3 ckpt_epochs=2
interval=$(( steps_per_epoch * ckpt_epochs ))  # steps between checkpoints
common=(--set data.train_limit=$(( 32 * steps_per_epoch )) --set data.test_limit=32
        --set train.batch_size=32 --set train.epochs=40 --set train.log_every=1
        --set output.checkpoint_every=${ckpt_epochs} --set train.threads=1 --no-progress -q)

# What a kill left: the checkpoint whole and its optimizer file of its step, the JSON files whole;
# prints "CHECKPOINT_STEP LAST_LOGGED_STEP WRITING" (tests/cli/check_run_dir.py).
inspect() { /usr/bin/python3 "${repo}/tests/cli/check_run_dir.py" "$1"; }

total_kills=0 total_resumes=0 total_fresh=0 total_writing=0 total_aimed=0 total_rounds=0
run_case() {  # run_case NAME KILLS CONFIG ARGS...
  local name="$1" budget="$2" config="$3"; shift 3
  local args=(--config "${config}" "${common[@]}" "$@")
  local ref="${out}/${name}-reference" dir="${out}/${name}"
  local start end
  start=$(date +%s%N)
  "${zotrain}" "${args[@]}" --output-dir "${ref}" > /dev/null 2> "${ref}.log" ||
    fail "${name}: the uninterrupted run failed: $(tail -3 "${ref}.log")"
  end=$(date +%s%N)
  local digest max_ms
  digest="$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_digest"])' "${ref}/summary.json")"
  max_ms=$(( (end - start) / 2000000 + 20 ))  # delays up to half the uninterrupted run
  local kills=0 resumes=0 fresh=0 writing=0 aimed=0 rounds=0 attempt=0 rc delay how partial=- lost=0
  while :; do
    attempt=$(( attempt + 1 ))
    local cmd=("${zotrain}")
    if [[ -f "${dir}/checkpoint.safetensors" ]]; then
      cmd+=(--resume "${dir}" --no-progress -q); resumes=$(( resumes + 1 )); how=resume
    else
      cmd+=("${args[@]}" --output-dir "${dir}" --overwrite); fresh=$(( fresh + 1 )); how=fresh
    fi
    if (( kills >= budget )); then  # enough: let it finish
      "${cmd[@]}" > /dev/null 2> "${dir}.log" || fail "${name}: the last ${how} failed: $(tail -3 "${dir}.log")"
      finished "${dir}" "${digest}" "${name}: after ${kills} kills"
      rounds=$(( rounds + 1 ))
      break
    fi
    set +e
    if (( have_strace && RANDOM % 4 == 0 )); then  # aimed at a step of a file write
      local call=fsync n=$(( RANDOM % 60 + 1 ))
      (( RANDOM % 2 )) && call=rename n=$(( RANDOM % 30 + 1 ))
      { strace -f -qq -o /dev/null -e trace="${call}" -e inject="${call}:signal=SIGKILL:when=${n}" \
          "${cmd[@]}" > /dev/null 2> "${dir}.log"; } 2> /dev/null  # (no "Killed" from bash)
      rc=$?
      [[ ${rc} -eq 137 ]] && aimed=$(( aimed + 1 ))
    else
      delay=$(( RANDOM % max_ms ))
      "${cmd[@]}" > /dev/null 2> "${dir}.log" &
      local pid=$!
      sleep "$(printf '%d.%03d' $(( delay / 1000 )) $(( delay % 1000 )))"
      kill -KILL "${pid}" 2> /dev/null
      wait "${pid}" 2> /dev/null
      rc=$?
    fi
    set -e
    if [[ ${rc} -eq 0 ]]; then  # finished before the kill: check it, start another
      finished "${dir}" "${digest}" "${name}: round $(( rounds + 1 ))"
      rounds=$(( rounds + 1 ))
      rm -rf "${dir}"
      partial=-
      continue
    fi
    [[ ${rc} -eq 137 ]] || fail "${name}: attempt ${attempt} (${how}) exited ${rc}: $(tail -3 "${dir}.log")"
    kills=$(( kills + 1 ))
    local state ckpt last w
    state="$(inspect "${dir}")" || fail "${name}: after kill ${kills}: the run directory is unsound (above)"
    read -r ckpt last w <<< "${state}"
    [[ "${w}" != - && "${w}" != "${partial}" ]] && writing=$(( writing + 1 ))
    partial="${w}"
    (( last - ckpt > lost )) && lost=$(( last - ckpt ))
    (( last - ckpt <= interval )) ||
      fail "${name}: kill ${kills}: the checkpoint is of step ${ckpt}, ${last} steps were logged (interval ${interval})"
  done
  echo "${name}: ${kills} kills (${aimed} aimed at an fsync or rename, ${writing} during a checkpoint write)," \
       "${resumes} resumes, ${fresh} fresh starts, at most ${lost} of ${interval} steps lost," \
       "${rounds} finished runs with the uninterrupted weights"
  total_kills=$(( total_kills + kills )) total_resumes=$(( total_resumes + resumes ))
  total_fresh=$(( total_fresh + fresh )) total_writing=$(( total_writing + writing ))
  total_aimed=$(( total_aimed + aimed )) total_rounds=$(( total_rounds + rounds ))
}

# The kills a checkpoint write must survive in sequence, aimed with strace -P (which matches a
# rename by its source): after the second commit, before optimizer.safetensors.next is renamed
# into place; then, resumed from that, just before the next commit; then to the end.
commit_window() {
  local dir="${out}/commit-window" d step
  d="${dir}/run"
  mkdir -p "${dir}"
  { strace -f -qq -o /dev/null -P "${d}/optimizer.safetensors.next" -e trace=rename \
      -e inject=rename:signal=SIGKILL:when=2 "${zotrain}" --config "${repo}/tests/fixtures/tiny.json" \
      "${common[@]}" --output-dir "${d}" > /dev/null 2> "${dir}/1.log"; } 2> /dev/null &&
    fail "commit window: the first run was not killed"
  read -r step _ _ < <(inspect "${d}") || fail "commit window: unsound after the first kill"
  [[ -f "${d}/optimizer.safetensors.next" && "${step}" -eq $(( 2 * interval )) ]] ||
    fail "commit window: the first kill did not land between the commit and the rename"
  { strace -f -qq -o /dev/null -P "${d}/checkpoint.safetensors.tmp" -e trace=rename \
      -e inject=rename:signal=SIGKILL:when=1 "${zotrain}" --resume "${d}" --no-progress -q \
      > /dev/null 2> "${dir}/2.log"; } 2> /dev/null && fail "commit window: the resumed run was not killed"
  inspect "${d}" > /dev/null || fail "commit window: unsound after the second kill"
  "${zotrain}" --resume "${d}" --no-progress -q > /dev/null 2> "${dir}/3.log" ||
    fail "commit window: the last resume failed: $(tail -3 "${dir}/3.log")"
  finished "${d}" "$1" "commit window"
  echo "commit window: killed after a commit and again before the next one, resumed to the same weights"
  total_kills=$(( total_kills + 2 )) total_aimed=$(( total_aimed + 2 )) total_resumes=$(( total_resumes + 2 ))
  total_writing=$(( total_writing + 2 ))
}

(( have_strace )) || echo "kill-resume: strace not installed: every kill at a random moment"
fp32_kills=$(( (kills_wanted + 1) / 2 ))
run_case fp32 "${fp32_kills}" "${repo}/tests/fixtures/tiny.json" --set "data.root=${repo}/data/mnist-subset"
(( have_strace )) && commit_window "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_digest"])' "${out}/fp32-reference/summary.json")"
run_case int8 $(( kills_wanted - fp32_kills )) "${repo}/tests/fixtures/int8.json" \
  --set "data.root=${repo}/data/mnist-subset"
echo "kill-resume: ${total_kills} kills survived (${total_aimed} aimed, ${total_writing} during a checkpoint write)," \
     "${total_resumes} resumes, ${total_fresh} fresh starts, ${total_rounds} finished runs, all with the uninterrupted weights"
