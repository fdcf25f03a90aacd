#pragma once
// One prediction: a model, a cluster and a training configuration in; iteration time, its
// breakdown, throughput, weak-scaling efficiency and the bottleneck out.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "model/kernels.hpp"
#include "model/schedule.hpp"
#include "model/strategy.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "roofline/compute_model.hpp"

namespace dtsim {

struct TrainingConfig {
  int64_t gpus = 1;
  int64_t batch_per_gpu = 1;
  Precision precision = Precision::FP32;
  std::string algo = "auto";  // NCCL's own choice per bucket (network/impl/nccl.hpp)
  std::string compute_model = "auto";
  // A kernel-time model built once for many predictions on one cluster (run_sweep shares a
  // RememberingComputeModel across GPU counts); when null, predict builds one from compute_model.
  std::shared_ptr<const ComputeModel> compute;
  std::optional<bool> overlap;  // the framework's setting unless given
  bool record_kernels = false;
  std::string strategy = "dp";  // one of strategy_names() (model/strategy.hpp)
  StrategyParams strategy_params;
};

struct Prediction {
  std::string model, cluster, gpu, precision, algo, compute_model;
  std::string compute_note;  // what the kernel times come from, in one line
  int64_t gpus = 0, nodes = 0, batch_per_gpu = 0;
  bool overlap = true;
  double iteration_s = 0;
  double throughput_samples_per_s = 0;
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, host_idle_s = 0, optimizer_s = 0;
  double single_gpu_iteration_s = 0;
  double scaling_efficiency = 1;  // t(1 GPU) / t(P GPUs) at equal batch per GPU
  std::string bottleneck;         // compute, memory, communication or host
  std::string comm_bottleneck;    // the link that limits all-reduce bandwidth
  int64_t grad_bytes = 0;
  std::vector<std::string> layer_names;
  IterationTimeline timeline;
  // The training strategy and what it changed; for `dp` its numbers are the fields above.
  StrategyOutcome strategy;
};

// Checks the configuration (InputError naming the flag) and predicts it.
Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg);

// The kernel-time model predict uses on cluster c: `name` (auto, mlp, roofline) as c's framework
// sees it (kernels it implements itself scaled by their measured ratios).
std::unique_ptr<ComputeModel> cluster_compute_model(const std::string& name, const ClusterSpec& c);

// One GPU's step at `batch` samples, without communication (a strategy's local step, a grid column).
IterationTimeline single_gpu_step(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, int64_t batch);

// Largest batch per GPU accepted; beyond it the question is not a training configuration.
constexpr int64_t kMaxBatchPerGpu = 1 << 20;

}  // namespace dtsim
