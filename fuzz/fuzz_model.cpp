// Model JSON (docs/model-format.md): parse, infer shapes, then predict one small configuration so
// that sizes that pass the parser are also multiplied out by the kernel lowering.
#include "core/error.hpp"
#include "fuzz/fuzz_util.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"
#include "network/cluster.hpp"

using namespace dtsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ClusterSpec cluster = load_cluster("h100-sxm");
  auto j = fuzz::json_of(data, size);
  if (!j) return 0;
  try {
    Graph g = parse_model(*j, "fuzz.json");
    TrainingConfig cfg;
    cfg.gpus = 16;
    cfg.batch_per_gpu = 1 + static_cast<int64_t>(size % 1024);
    cfg.compute_model = size % 2 ? "roofline" : "auto";
    predict(g, cluster, cfg);
  } catch (const InputError&) {
  }
  return 0;
}
