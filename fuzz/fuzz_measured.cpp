// Measured-run JSON (validation/README.md, dtsim-measured-run/1): parse, then predict the run.
#include "core/error.hpp"
#include "fuzz/fuzz_util.hpp"
#include "study/validate.hpp"

using namespace dtsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = fuzz::json_of(data, size);
  if (!j) return 0;
  try {
    MeasuredRun r = parse_measured_run(*j, "fuzz.json");
    ValidationOptions opt;
    opt.compute_model = "roofline";
    summarize({validate_run(r, opt)});
  } catch (const InputError&) {
  }
  return 0;
}
