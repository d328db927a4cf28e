#!/usr/bin/env bash
# Installs zotrain's build dependencies from Debian 12 packages (idempotent).
#   scripts/install-deps.sh            host build: compiler, CMake, CLI11, spdlog/fmt,
#                                      nlohmann-json, GoogleTest, OpenMP, zlib, HDF5
#   scripts/install-deps.sh --cross    also the aarch64 cross compiler, qemu-user and the
#                                      arm64 libraries (Debian multiarch) for cross tests
# Runs apt-get as root, or through sudo when started as another user.
set -euo pipefail

cross=0
for arg in "$@"; do
  case "${arg}" in
    --cross) cross=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument '${arg}' (expected --cross)" >&2; exit 2 ;;
  esac
done

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

host_pkgs=(build-essential cmake ninja-build pkg-config libcli11-dev libspdlog-dev libfmt-dev
           nlohmann-json3-dev libgtest-dev zlib1g-dev libomp-dev libhdf5-dev)
# libgomp1/libstdc++6/libc6:arm64 are the runtime qemu loads (-L /, see toolchains/).
# HDF5: libhdf5-dev is not multi-arch (libhdf5-dev and libhdf5-dev:arm64 conflict, and the latter
# needs hdf5-helpers:arm64), so the cross build links the arm64 runtime library
# libhdf5-103-1:arm64 with the host package's headers (see CMakeLists.txt).
cross_pkgs=(g++-aarch64-linux-gnu qemu-user libspdlog-dev:arm64 libfmt-dev:arm64
            libgtest-dev:arm64 zlib1g-dev:arm64 libhdf5-103-1:arm64 libgomp1:arm64
            libstdc++6:arm64 libc6:arm64)

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
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: adding the arm64 architecture (Debian multiarch)"
    as_root dpkg --add-architecture arm64
    missing+=(force-update)
  fi
  for p in "${cross_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
fi

if [[ "${#missing[@]}" -eq 0 ]]; then
  echo "install-deps: everything is installed"
  exit 0
fi
pkgs=()
for p in "${missing[@]}"; do [[ "${p}" == force-update ]] || pkgs+=("${p}"); done
echo "install-deps: installing ${pkgs[*]:-(package lists only)}"
as_root apt-get update -qq
if [[ "${#pkgs[@]}" -gt 0 ]]; then
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
echo "install-deps: done"
