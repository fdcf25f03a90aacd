#!/usr/bin/env bash
# Installs whatever dtsim needs from Debian's packages (only what is missing, so a second run
# installs nothing), then configures and builds into build/. Safe to run again at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make g++ pkg-config libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev catch2 libbenchmark-dev libtorch-dev gnuplot-nox libonnx-dev libprotobuf-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
