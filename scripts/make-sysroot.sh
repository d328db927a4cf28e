#!/usr/bin/env bash
# Builds the target sysroot that a cross build compiles, links and (under qemu -L) runs against.
#   scripts/make-sysroot.sh ARCH [--refresh]
#     ARCH       arm64 (aarch64) or armhf (armv7-a hard-float)
#     --refresh  rebuild even when the recipe is unchanged, to pick up newer package versions
# The sysroot is ${ZT_CROSS_ROOT:-/opt/zotrain-cross}/ARCH: the target libraries the build needs
# (zlib, fmt, spdlog, GoogleTest, HDF5, CLI11, nlohmann-json, and the C/C++ run-time libraries
# the tests run with) with their dependencies, extracted from ARCH's own package index by
# `mmdebstrap --variant=extract`. Nothing is installed through the host's dpkg and no foreign
# architecture is added to it, so the host's `apt-get update` never sees an ARCH index and the
# host's installed versions do not constrain the target's (Debian multiarch would need every
# Multi-Arch: same package at exactly the host's version).
#
# Package sources: the host's own mirror entries for its release (ZT_SYSROOT_SOURCES, one
# "deb URI SUITE COMPONENTS" line per suite, replaces them). mmdebstrap keeps its apt state
# (lists, cache) under the new root; its index download runs through scripts/lib/
# sysroot-update.sh, which retries transient errors and, for a suite whose index still fails
# (e.g. a security mirror in mid-sync), warns and builds from the other suites.
# The host's Acquire settings (proxies, validity checks) are passed on.
#
# Also written: <root>/var/lib/zotrain/shlibs (the packages' shlibs control files, from which a
# cross build computes its .deb's Depends: cmake/deb_depends.cmake), .../packages (name=version of
# every package extracted) and .../recipe (what was asked for; written last, so a sysroot
# without it is incomplete). A build goes to <root>.new and replaces <root> only when complete.
# Runs as root, or through sudo when started as another user.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/apt.sh
. "${here}/lib/apt.sh"

arch=""
refresh=0
for arg in "$@"; do
  case "${arg}" in
    arm64|armhf) arch="${arg}" ;;
    --refresh) refresh=1 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "make-sysroot: unknown argument '${arg}' (expected arm64, armhf or --refresh)" >&2
       exit 2 ;;
  esac
done
if [[ -z "${arch}" ]]; then
  echo "make-sysroot: which architecture? (expected arm64 or armhf)" >&2
  exit 2
fi
for tool in mmdebstrap dpkg-deb; do
  if ! command -v "${tool}" >/dev/null; then
    echo "make-sysroot: ${tool} is not installed (scripts/install-deps.sh --cross installs it)" >&2
    exit 2
  fi
done

root="${ZT_CROSS_ROOT:-/opt/zotrain-cross}/${arch}"
# What the cross build finds in the sysroot (CMakeLists.txt's find_package calls) and what the
# tests load at run time; apt adds every dependency. libopenmpi-dev: data-parallel runs
# (docs/design.md §15); the binary links libmpi, and mpirun on the board comes from openmpi-bin.
packages=(libc6 libstdc++6 libgomp1 zlib1g-dev libfmt-dev libspdlog-dev libgtest-dev libhdf5-dev
          libcli11-dev nlohmann-json3-dev libopenmpi-dev)

# ---- package sources -------------------------------------------------------------------------
# The host's release and its -updates and -security suites, at the host's mirror URIs: what
# `apt-get update --print-uris` would fetch, asked with an empty lists directory so that it
# lists every configured suite and changes nothing.
codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
if [[ -z "${codename}" ]]; then
  echo "make-sysroot: /etc/os-release names no VERSION_CODENAME; set ZT_SYSROOT_SOURCES" >&2
  exit 2
fi
host_sources() {
  local empty
  empty="$(mktemp -d)"
  mkdir -p "${empty}/partial"
  apt-get update --print-uris -o "Dir::State::Lists=${empty}" 2>/dev/null |
    sed -E -n "s#^'(.*)/dists/(${codename}(-updates|-security)?)/InRelease'.*#deb \1 \2 main#p" |
    sort -u
  rm -rf "${empty}"
}
if [[ -n "${ZT_SYSROOT_SOURCES:-}" ]]; then
  sources="${ZT_SYSROOT_SOURCES}"
else
  sources="$(host_sources)"
fi
if ! grep -q " ${codename} " <<<"${sources}"; then
  echo "make-sysroot: no package source for ${codename} (the host's apt sources name none;" \
       "set ZT_SYSROOT_SOURCES, e.g. 'deb URI ${codename} main')" >&2
  exit 2
fi
mapfile -t source_lines <<<"${sources}"

recipe="$(printf 'arch %s\npackages %s\n' "${arch}" "${packages[*]}"; printf '%s\n' "${source_lines[@]}")"
if [[ "${refresh}" -eq 0 && "$(cat "${root}/var/lib/zotrain/recipe" 2>/dev/null)" == "${recipe}" ]]; then
  echo "make-sysroot: ${root} is up to date (--refresh rebuilds it)"
  exit 0
fi

# ---- build -----------------------------------------------------------------------------------
new="${root}.new"
aptconf="$(mktemp)"
trap 'rm -f "${aptconf}"' EXIT
apt-config dump Acquire >"${aptconf}"
build() {
  as_root rm -rf "${new}"
  as_root mkdir -p "${new}"
  as_root mmdebstrap --variant=extract --architectures="${arch}" \
    --include="$(IFS=,; echo "${packages[*]}")" \
    --aptopt="${aptconf}" --aptopt='APT::Install-Recommends "false"' \
    --skip=update --setup-hook="bash '${here}/lib/sysroot-update.sh' \"\$1\" ${arch} ${codename}" \
    --skip=cleanup/apt/cache \
    "${codename}" "${new}" "${source_lines[@]}"
}
echo "make-sysroot: building the ${arch} sysroot ${root} from: ${source_lines[*]}"
apt_retry "make-sysroot ${arch}" build

# Control data the build needs later, then the downloaded archives are dropped.
as_root mkdir -p "${new}/var/lib/zotrain"
for deb in "${new}"/var/cache/apt/archives/*.deb; do
  as_root dpkg-deb --ctrl-tarfile "${deb}" | tar -xO ./shlibs 2>/dev/null || true
done | as_root tee "${new}/var/lib/zotrain/shlibs" >/dev/null
for deb in "${new}"/var/cache/apt/archives/*.deb; do
  dpkg-deb -f "${deb}" Package Version | paste -sd= | sed 's/^Package: //; s/=Version: /=/'
done | sort | as_root tee "${new}/var/lib/zotrain/packages" >/dev/null
as_root rm -rf "${new}"/var/cache/apt/archives/*.deb

# Absolute symlinks (e.g. usr/lib/<triplet>/libz.so -> /lib/<triplet>/libz.so.1.2.13) would resolve
# on the host; make them relative so they resolve inside the sysroot. (`symlinks -c` cannot do
# this from outside: it resolves targets against the host's root, where they dangle, and a
# chroot would need a binary of the target architecture.) mmdebstrap's /dev links stay.
while IFS= read -r link; do
  as_root ln -sfnr "${new}$(readlink "${link}")" "${link}"
done < <(find "${new}" -path "${new}/dev" -prune -o -type l -lname '/*' -print)

# A sysroot built without some suite's index (scripts/lib/sysroot-update.sh) records that in its
# recipe, so the next run does not find it up to date and tries the whole set again.
if [[ -f "${new}/var/lib/zotrain/missing-suites" ]]; then
  recipe+=$'\n'"built without: $(cat "${new}/var/lib/zotrain/missing-suites")"
fi
echo "${recipe}" | as_root tee "${new}/var/lib/zotrain/recipe" >/dev/null
as_root rm -rf "${root}.old"
if [[ -e "${root}" ]]; then as_root mv "${root}" "${root}.old"; fi
as_root mv "${new}" "${root}"
as_root rm -rf "${root}.old"
echo "make-sysroot: ${root} ready ($(wc -l <"${root}/var/lib/zotrain/packages") packages," \
     "$(du -sh "${root}" | cut -f1))"
