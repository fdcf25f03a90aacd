// Cluster spec (docs/cluster-format.md): parse, then price a small model's iteration and an
// all-reduce on it, so that accepted constants are also used.
#include <algorithm>

#include "core/error.hpp"
#include "fuzz/fuzz_util.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"

using namespace dtsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Graph model = load_model("alexnet");
  auto j = fuzz::json_of(data, size);
  if (!j) return 0;
  try {
    ClusterSpec c = parse_cluster(*j, "fuzz.json");
    TrainingConfig cfg;
    cfg.gpus = std::min<int64_t>(c.capacity_gpus(), 1 + static_cast<int64_t>(size % 64));
    cfg.batch_per_gpu = 8;
    cfg.compute_model = "roofline";
    predict(model, c, cfg);
    auto algo = make_collective_algorithm("auto");
    algo->time_s(CollectiveOp::AllReduce, static_cast<double>(size) * 1e6, place(c, cfg.gpus), c);
  } catch (const InputError&) {
  }
  return 0;
}
