#!/usr/bin/env bash
# Installs whatever dtsim needs from Debian's packages (only what is missing, so a second run
# installs nothing), then configures and builds into build/. Safe to run again at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install_packages.sh
install_missing setup cmake make g++ pkg-config python3 libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev catch2 libbenchmark-dev libtorch-dev gnuplot-nox libonnx-dev libprotobuf-dev zlib1g-dev

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
