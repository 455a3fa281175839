#!/usr/bin/env bash
# Installs the Debian packages clustersim needs, only those missing. Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential cmake
  clang libclang-rt-dev llvm  # scripts/sanitize.sh: ASan + UBSan + libFuzzer, llvm-symbolizer
  libboost-graph-dev libboost-program-options-dev
  libeigen3-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  zlib1g-dev
  python3 python3-matplotlib
  python3-dev pybind11-dev python3-pytest python3-pandas  # the clustersim Python package
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
