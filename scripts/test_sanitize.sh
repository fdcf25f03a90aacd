#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, built into build-asan/
# (Release optimisation plus -g; no LibTorch trainer, which no test runs). Any sanitizer report
# aborts the test that triggered it. Run scripts/setup.sh first (it installs the packages).
# Usage: bash scripts/test_sanitize.sh [ctest arguments, e.g. -R cli]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DDTSIM_SANITIZE=address,undefined -DDTSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$(nproc)" --target dtsim dtsim_tests
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" "$@"
