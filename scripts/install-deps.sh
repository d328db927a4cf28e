#!/usr/bin/env bash
# Installs zotrain's build dependencies from Debian 12 packages (idempotent).
#   scripts/install-deps.sh            host build: compiler, CMake, CLI11, spdlog/fmt,
#                                      nlohmann-json, GoogleTest, OpenMP, zlib, HDF5
#   scripts/install-deps.sh --cross    also the aarch64 and armhf cross compilers, qemu-user,
#                                      the arm64 libraries (Debian multiarch) and an armhf
#                                      sysroot in /opt/zotrain-cross/armhf, for cross tests
# Runs apt-get as root, or through sudo when started as another user.
set -euo pipefail

cross=0
for arg in "$@"; do
  case "${arg}" in
    --cross) cross=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument '${arg}' (expected --cross)" >&2; exit 2 ;;
  esac
done

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# dpkg-dev (dpkg-shlibdeps) and file: CPack's .deb Depends (cmake/Packaging.cmake).
host_pkgs=(build-essential cmake ninja-build pkg-config libcli11-dev libspdlog-dev libfmt-dev
           nlohmann-json3-dev libgtest-dev zlib1g-dev libomp-dev libhdf5-dev dpkg-dev file)
# libgomp1/libstdc++6/libc6:arm64 are the runtime qemu loads (-L /, see toolchains/).
# HDF5: libhdf5-dev is not multi-arch (libhdf5-dev and libhdf5-dev:arm64 conflict, and the latter
# needs hdf5-helpers:arm64), so the cross build links the arm64 runtime library
# libhdf5-103-1:arm64 with the host package's headers (see CMakeLists.txt).
cross_pkgs=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
            libspdlog-dev:arm64 libfmt-dev:arm64 libgtest-dev:arm64 zlib1g-dev:arm64
            libhdf5-103-1:arm64 libgomp1:arm64 libstdc++6:arm64 libc6:arm64)
# armhf is not installed through multiarch but unpacked into a sysroot (toolchains/armhf-*.cmake):
# besides the same HDF5 conflict, multiarch needs every Multi-Arch: same package (libssl3 under
# libhdf5-103-1, linux-libc-dev under the -dev packages) at exactly the host's version, so one
# host security update that the armhf index does not have yet makes the whole set uninstallable.
# The sysroot holds these packages and the run-time libraries they need, all taken from the armhf
# index as one consistent set; its ld.so and libc are what qemu-arm -L runs the tests with.
armhf_sysroot="${ZT_ARMHF_SYSROOT:-/opt/zotrain-cross/armhf}"
armhf_runtime=(libc6 libstdc++6 libgomp1 zlib1g libfmt9 libspdlog1.10 libhdf5-103-1)
armhf_dev=(zlib1g-dev libfmt-dev libspdlog-dev libgtest-dev libhdf5-dev)

# Installed for the host architecture (or arch "all") unless the name says :<arch>. (Plain
# `dpkg -s name` fails as ambiguous once the arm64 instance of a package is installed too.)
installed() {
  local name="${1%%:*}" arch="${1#*:}"
  [[ "${arch}" == "$1" ]] && arch="$(dpkg --print-architecture)"
  dpkg-query -W -f='${db:Status-Abbrev} ${Architecture}\n' "${name}" 2>/dev/null |
    grep -Eq "^ii +(${arch}|all)\$"
}

missing=()
for p in "${host_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
if [[ "${cross}" -eq 1 ]]; then
  # armhf: only its package index is needed (apt-get download), nothing is installed for it.
  for a in arm64 armhf; do
    if ! dpkg --print-foreign-architectures | grep -qx "${a}"; then
      echo "install-deps: adding the ${a} architecture (Debian multiarch)"
      as_root dpkg --add-architecture "${a}"
      missing+=(force-update)
    fi
  done
  for p in "${cross_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
fi

# A mirror that is mid-sync (or a stale proxy) makes apt-get update fail for one index while the
# others are fine; carry on with what it got, and let a later step fail if it really needs more.
apt_update() {
  as_root apt-get update -qq ||
    echo "install-deps: warning: apt-get update reported errors; continuing with the indexes it got" >&2
}

updated=0
if [[ "${#missing[@]}" -eq 0 ]]; then
  echo "install-deps: every package is installed"
else
  pkgs=()
  for p in "${missing[@]}"; do [[ "${p}" == force-update ]] || pkgs+=("${p}"); done
  echo "install-deps: installing ${pkgs[*]:-(package lists only)}"
  apt_update
  updated=1
  if [[ "${#pkgs[@]}" -gt 0 ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
  fi
fi

# The armhf sysroot: the packages above and the closure of the run-time packages' dependencies,
# at the armhf index's candidate versions, each unpacked with dpkg-deb -x. Absolute symlinks
# (e.g. libz.so -> /lib/...) are made relative so they resolve inside the sysroot. Each package's
# shlibs control file is kept in <sysroot>/var/lib/zotrain/shlibs (the .deb's Depends are computed
# from it, cmake/DebDepends.cmake). <sysroot>/var/lib/zotrain/packages lists name=version; the
# sysroot is rebuilt only when that list changes.
armhf_closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances --no-pre-depends "${armhf_runtime[@]/%/:armhf}" |
    grep -E '^[a-z0-9][^ ]*:armhf$' | sed 's/:armhf$//'
  printf '%s\n' "${armhf_dev[@]}"
}
armhf_wanted() {  # name=version lines, sorted
  local p v
  for p in $(armhf_closure | sort -u); do
    v="$(apt-cache policy "${p}:armhf" | sed -n 's/^ *Candidate: //p')"
    if [[ -z "${v}" || "${v}" == "(none)" ]]; then
      echo "install-deps: ${p}:armhf is not in the package index" >&2
      return 1
    fi
    echo "${p}=${v}"
  done
}
if [[ "${cross}" -eq 1 ]]; then
  if ! wanted="$(armhf_wanted)"; then
    if [[ "${updated}" -eq 0 ]]; then apt_update; updated=1; fi
    wanted="$(armhf_wanted)"
  fi
  if [[ "$(cat "${armhf_sysroot}/var/lib/zotrain/packages" 2>/dev/null)" != "${wanted}" ]]; then
    echo "install-deps: building the armhf sysroot ${armhf_sysroot} ($(wc -l <<<"${wanted}") packages)"
    tmp="$(mktemp -d)"
    chmod 777 "${tmp}"  # apt-get download fetches as the _apt user, which must write here
    mapfile -t specs < <(sed 's/=/:armhf=/' <<<"${wanted}")
    (cd "${tmp}" && as_root apt-get download -qq "${specs[@]}")
    as_root rm -rf "${armhf_sysroot}"
    as_root mkdir -p "${armhf_sysroot}/var/lib/zotrain"
    for deb in "${tmp}"/*.deb; do
      as_root dpkg-deb -x "${deb}" "${armhf_sysroot}"
      as_root dpkg-deb --ctrl-tarfile "${deb}" | tar -xO ./shlibs 2>/dev/null |
        as_root tee -a "${armhf_sysroot}/var/lib/zotrain/shlibs" >/dev/null || true
    done
    while IFS= read -r link; do
      target="$(readlink "${link}")"
      as_root ln -sfn "$(realpath -m --relative-to="$(dirname "${link}")" "${armhf_sysroot}${target}")" "${link}"
    done < <(find "${armhf_sysroot}" -type l -lname '/*')
    echo "${wanted}" | as_root tee "${armhf_sysroot}/var/lib/zotrain/packages" >/dev/null
    as_root rm -rf "${tmp}"
  fi
fi
echo "install-deps: done"
