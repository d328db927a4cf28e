#!/usr/bin/env bash
# mmdebstrap setup hook of scripts/make-sysroot.sh: `apt-get update` of the sysroot's private apt
# state (mmdebstrap's own lists and cache under the new root, never the host's), in place of
# mmdebstrap's update step, which fails the whole build when any one index does.
#   sysroot-update.sh ROOT ARCH BASE_SUITE
# A transient mirror error is retried (scripts/lib/apt.sh). When an index still fails after that
# (typically a mirror in mid-sync: "File has unexpected size ... Mirror sync in progress?"),
# the suites that did arrive are used, with a warning that names the missing ones. This state
# holds one architecture, so another architecture's lagging index cannot affect it. Only a
# missing BASE_SUITE (e.g. bookworm) is an error: without it there is nothing to build from.
set -euo pipefail
root="$1" arch="$2" base="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=apt.sh
. "${here}/apt.sh"
export APT_CONFIG="${MMDEBSTRAP_APT_CONFIG:?run by mmdebstrap as a setup hook}"

ZT_APT_ATTEMPTS=3
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
if apt_retry "make-sysroot ${arch}" apt-get -q "${ZT_APT_OPTS[@]}" update 2>&1 | tee -a "${log}" >&2; then
  exit 0
fi
# apt's own words for what failed: each "Err:" line with its reason, and the "E:" summaries.
apt_errors() { grep -E -A1 '^(Err:|E:)' "${log}" | grep -v '^--$' | awk '!seen[$0]++' | sed 's/^/  /' >&2; }

# Which suites have a package index now, and which were asked for.
mapfile -t have < <(apt-get indextargets --format '$(RELEASE)' 'Identifier: Packages' | sort -u)
mapfile -t want < <(cat "${root}"/etc/apt/sources.list "${root}"/etc/apt/sources.list.d/*.list 2>/dev/null |
                      sed -n 's/^deb \+\(\[[^]]*\] \+\)\?[^ ]\+ \+\([^ ]\+\) .*/\2/p' | sort -u)
missing=()
for s in "${want[@]}"; do
  [[ " ${have[*]} " == *" ${s} "* ]] || missing+=("${s}")
done
if [[ " ${have[*]} " != *" ${base} "* ]]; then
  echo "make-sysroot ${arch}: error: the ${arch} package index of ${base} could not be fetched;" \
       "cannot build the sysroot (apt said:)" >&2
  apt_errors
  exit 1
fi
echo "make-sysroot ${arch}: warning: the ${arch} index of ${missing[*]:-some suite} could not be" \
     "fetched (apt said below); building the ${arch} sysroot from ${have[*]} only, so its" \
     "packages may lag those suites' updates. Run scripts/make-sysroot.sh ${arch} --refresh later." >&2
apt_errors
# make-sysroot.sh notes this in the recipe, so that its next run tries the whole set again.
mkdir -p "${root}/var/lib/zotrain"
echo "${missing[*]:-unknown}" >"${root}/var/lib/zotrain/missing-suites"
exit 0
