#!/usr/bin/env bash
# Installs zotrain's build dependencies from Debian 12 packages (idempotent).
#   scripts/install-deps.sh            host build: compiler, CMake, CLI11, spdlog/fmt,
#                                      nlohmann-json, GoogleTest, OpenMP, zlib, HDF5, Open MPI; clang and
#                                      its sanitizer run-times for the sanitizer builds
#   scripts/install-deps.sh --cross    also what the whole test suite needs: the aarch64 and armhf
#                                      cross compilers, qemu-user and mmdebstrap, the arm64 and
#                                      armhf sysroots in /opt/zotrain-cross/<arch>
#                                      (scripts/make-sysroot.sh), python3-torch and -h5py (64-bit)
# Only host packages go through the host's dpkg: no foreign architecture is added, so the
# host's `apt-get update` never fetches an arm64 or armhf index.
# apt-get waits up to 10 minutes for the dpkg lock and retries transient mirror errors
# (scripts/lib/apt.sh). Runs apt-get as root, or through sudo when started as another user.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/apt.sh
. "${here}/lib/apt.sh"

cross=0
for arg in "$@"; do
  case "${arg}" in
    --cross) cross=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument '${arg}' (expected --cross)" >&2; exit 2 ;;
  esac
done

# dpkg-dev (dpkg-shlibdeps) and file: CPack's .deb Depends (cmake/Packaging.cmake); jq: the README's
# sweep example (tests/cli/readme_commands.sh runs it); parallel: scripts/sweep;
# python3-matplotlib: the figures of scripts/reproduce/. clang, libclang-rt-dev (the sanitizer
# run-times, only recommended by clang), llvm (llvm-symbolizer, for the reports' stack traces) and
# libomp-dev (LLVM's OpenMP, with the Archer tool): the sanitizer stages of scripts/test.sh.
# strace: the kills tests/cli/kill_resume.sh aims at a checkpoint write. libopenmpi-dev and
# openmpi-bin (mpirun): data-parallel runs over several processes or boards (docs/design.md §15).
host_pkgs=(build-essential cmake ninja-build pkg-config libcli11-dev libspdlog-dev libfmt-dev
           nlohmann-json3-dev libgtest-dev zlib1g-dev libomp-dev libhdf5-dev dpkg-dev file jq
           parallel python3-matplotlib clang libclang-rt-dev llvm strace libopenmpi-dev openmpi-bin)
# The target libraries are not here: they go into the sysroots (scripts/make-sysroot.sh).
cross_pkgs=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user mmdebstrap)
# The checkpoint round trip with PyTorch (tests/python/torch_interop.py; also bench/'s reference);
# python3-h5py: its PointNet cases read the point clouds (scripts/zotrain_torch.py).
# Debian builds it for 64-bit architectures only; where it has no candidate that test skips.
if [[ "$(dpkg --print-architecture)" == amd64 || "$(dpkg --print-architecture)" == arm64 ]]; then
  cross_pkgs+=(python3-torch python3-h5py)
fi

installed() {  # for the host architecture or "all"
  dpkg-query -W -f='${db:Status-Abbrev} ${Architecture}\n' "$1" 2>/dev/null |
    grep -Eq "^ii +($(dpkg --print-architecture)|all)\$"
}

missing=()
for p in "${host_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
if [[ "${cross}" -eq 1 ]]; then
  for p in "${cross_pkgs[@]}"; do installed "${p}" || missing+=("${p}"); done
fi

if [[ "${#missing[@]}" -eq 0 ]]; then
  echo "install-deps: every host package is installed"
else
  echo "install-deps: installing ${missing[*]}"
  # A mirror in mid-sync (or a stale proxy) can fail one index while the others are fine; after
  # the retries, carry on with what apt got and let the install say what it really lacks.
  apt_retry install-deps as_root apt-get "${ZT_APT_OPTS[@]}" update -qq ||
    echo "install-deps: warning: apt-get update kept failing; continuing with the indexes it got" >&2
  apt_retry install-deps as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get "${ZT_APT_OPTS[@]}" install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ "${cross}" -eq 1 ]]; then
  # Earlier versions of this script added arm64 and armhf to the host's dpkg (multiarch). An
  # architecture with nothing installed is removed again, so the host's `apt-get update` stops
  # fetching its index; one that still has packages is left alone, with a note.
  for a in $(dpkg --print-foreign-architectures); do
    [[ "${a}" == arm64 || "${a}" == armhf ]] || continue
    if dpkg-query -W -f='${db:Status-Abbrev} ${Architecture}\n' 2>/dev/null | grep -q "^ii  *${a}\$"; then
      echo "install-deps: note: the host has ${a} packages installed (Debian multiarch); the" \
           "cross builds do not use them (they use /opt/zotrain-cross/${a})" >&2
    else
      echo "install-deps: removing the unused foreign architecture ${a} from the host's dpkg"
      as_root dpkg --remove-architecture "${a}"
    fi
  done
  bash "${here}/make-sysroot.sh" arm64
  bash "${here}/make-sysroot.sh" armhf
fi
echo "install-deps: done"
