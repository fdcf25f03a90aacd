// Sweep files (docs/scaling-study.md): parse; run the sweep when it is small.
#include "core/error.hpp"
#include "fuzz/fuzz_util.hpp"
#include "study/study.hpp"

using namespace dtsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = fuzz::json_of(data, size);
  if (!j) return 0;
  try {
    SweepSpec s = parse_sweep(*j, "fuzz.json");
    if (sweep_size(s) <= 8) run_sweep(s);
  } catch (const InputError&) {
  }
  return 0;
}
