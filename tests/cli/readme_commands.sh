#!/usr/bin/env bash
# Runs the README's commands, so the README cannot rot. Every ```sh block whose fence says
# `readme-test` runs whole, and one that says `readme-test-last` runs its last `&&` command
# (the rest installs and builds), in a scratch directory laid out like the checkout (configs/,
# scripts/ and data/mnist-subset linked, the built zotrain at build/host/zotrain). The blocks run
# one after another as one session: what a block exports (the README's own `export PATH=...`)
# holds for the blocks after it; nothing is put on PATH here. A ```sh block that runs
# zotrain on a shipped config must carry one of these, or `readme-skip` (then the README says
# why next to it); otherwise the test fails and names the line.
#   readme_commands.sh README BIN_DIR SOURCE_DIR
set -euo pipefail
readme="$1" bin_dir="$2" src="$3"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/data" "${work}/build/host"
ln -s "${src}/configs" "${work}/configs"
ln -s "${src}/scripts" "${work}/scripts"
ln -s "${src}/data/mnist-subset" "${work}/data/mnist-subset"
ln -s "${bin_dir}/zotrain" "${work}/build/host/zotrain"
# The README's sweep takes core-share locks in the temporary directory: this test's own, so a
# sweep running elsewhere on the machine does not hold it back (tests/cli/sweep.sh).
mkdir -p "${work}/tmp"
export TMPDIR="${work}/tmp"

: > "${work}/session.env"

# Splits the README into block files <n>.<mode>.<line>.sh, mode = test | last | skip | none.
awk -v dir="${work}" '
  /^```sh/ { n++; mode = "none"
             if ($0 ~ /readme-test-last/) mode = "last"
             else if ($0 ~ /readme-test/) mode = "test"
             else if ($0 ~ /readme-skip/) mode = "skip"
             file = sprintf("%s/%03d.%s.%d.sh", dir, n, mode, NR); inside = 1; next }
  /^```/ { inside = 0; next }
  inside { print > file }' "${readme}"

ran=0 failed=0
for f in "${work}"/*.sh; do
  base="$(basename "${f}")"
  mode="$(cut -d. -f2 <<<"${base}")" line="$(cut -d. -f3 <<<"${base}")"
  case "${mode}" in
    none)
      if grep -q 'configs/' "${f}" && grep -q 'zotrain' "${f}"; then
        echo "README line ${line}: a block runs zotrain on a shipped config but is not marked" \
             "readme-test, readme-test-last or readme-skip" >&2
        failed=$((failed + 1))
      fi
      continue ;;
    skip) continue ;;
    last) script="$(sed 's/.*&& //' "${f}" | tail -n 1)" ;;
    test) script="$(cat "${f}")" ;;
  esac
  echo "---- README line ${line}:"
  echo "${script}"
  t0="$(date +%s%N)"
  # The session: the environment the blocks before exported, then this block, then its exports.
  if (cd "${work}" && bash -euo pipefail -c "source '${work}/session.env'; ${script}
export -p > '${work}/session.env'"); then
    ran=$((ran + 1))
    # The time per block: what a user copying it waits (the closing notes quote these).
    echo "---- README line ${line}: done in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  else
    echo "README line ${line}: the block failed" >&2
    failed=$((failed + 1))
  fi
done
echo "README blocks run: ${ran}, failed or unmarked: ${failed}"
[[ "${ran}" -gt 0 && "${failed}" -eq 0 ]]
