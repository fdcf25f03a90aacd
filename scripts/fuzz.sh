#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang into build-fuzz/ and runs each on its committed
# corpus. Usage:
#   bash scripts/fuzz.sh smoke            # every target, -runs=2000 over the corpus (CI)
#   bash scripts/fuzz.sh run SECONDS [T]  # fuzz each target (or only T) for SECONDS, new inputs in
#                                         # build-fuzz/corpus/<target>, crashes in build-fuzz/crashes/
#   bash scripts/fuzz.sh merge [T]        # add to fuzz/corpus/<target> the inputs of
#                                         # build-fuzz/corpus/<target> that reach new edges
# Installs what it needs from Debian's packages first, as scripts/setup.sh does (only what is
# missing): clang and libclang-rt-dev (compiler-rt: libclang_rt.fuzzer and the sanitizer runtimes,
# for the default clang, 14 on bookworm) plus the libraries the fuzzed library links; not g++,
# Catch2, Google Benchmark, LibTorch or gnuplot, which the fuzz build does not use.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install_packages.sh
install_missing fuzz cmake make pkg-config clang libclang-rt-dev libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev libonnx-dev libprotobuf-dev zlib1g-dev

mode="${1:-smoke}"
targets=(model cluster sweep measured onnx)
[ "$mode" = run ] && [ -n "${3:-}" ] && targets=("$3")
[ "$mode" = merge ] && [ -n "${2:-}" ] && targets=("$2")
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DDTSIM_FUZZ=ON \
  -DDTSIM_BUILD_TESTS=OFF -DDTSIM_BUILD_BENCH=OFF -DDTSIM_BUILD_HARNESS=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  dict=(); [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  if [ "$mode" = smoke ]; then
    echo "fuzz: $t (smoke, 2000 runs)"
    # New inputs go to a scratch folder (the first one given), never into the committed corpus.
    rm -rf "build-fuzz/smoke/$t" && mkdir -p "build-fuzz/smoke/$t"
    build-fuzz/fuzz/fuzz_$t -runs=2000 -max_len=65536 -rss_limit_mb=4096 -timeout=20 "${dict[@]}" \
      -artifact_prefix=build-fuzz/crashes/$t- "build-fuzz/smoke/$t" "fuzz/corpus/$t"
  elif [ "$mode" = merge ]; then
    # Adds only inputs that reach new edges (-use_counters=0: edges, not hit-count buckets), and
    # of those a greedy minimal set (-set_cover_merge=1, -merge=1's smaller variant): a few hundred
    # files per target.
    echo "fuzz: merging build-fuzz/corpus/$t into fuzz/corpus/$t"
    build-fuzz/fuzz/fuzz_$t -set_cover_merge=1 -use_counters=0 -max_len=65536 -rss_limit_mb=4096 -timeout=20 \
      "fuzz/corpus/$t" "build-fuzz/corpus/$t"
  else
    mkdir -p "build-fuzz/corpus/$t"
    echo "fuzz: $t for ${2:?seconds} s"
    build-fuzz/fuzz/fuzz_$t -max_total_time="$2" -max_len=65536 -rss_limit_mb=4096 -timeout=20 "${dict[@]}" \
      -artifact_prefix=build-fuzz/crashes/$t- -print_final_stats=1 "build-fuzz/corpus/$t" "fuzz/corpus/$t"
  fi
done
