#pragma once
// What predictions share: the kernel-time model of each GPU, each model's lowered kernels, and each
// step's first phase (sim/schedule.hpp StepBeforeCollectives), remembered for the predictions that
// ask again. A sweep's network what-ifs and GPU counts, plan's search and predict's own 1-GPU baseline
// and bottleneck what-ifs differ only in their collectives, and share the rest through one of these.
// A prediction's numbers are the same with a fresh one or a shared one; sharing only saves the work.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "sim/run_spec.hpp"
#include "sim/schedule.hpp"
#include "network/cluster.hpp"
#include "compute/compute_model.hpp"

namespace dtsim {

// The kernel-time model predict uses on cluster c: `name` (auto, mlp, roofline) as c's framework
// sees it (kernels it implements itself scaled by their measured ratios).
std::unique_ptr<ComputeModel> cluster_compute_model(const std::string& name, const ClusterSpec& c);

class StepPricing {
 public:
  using ComputeFactory = std::function<std::unique_ptr<ComputeModel>(const ClusterSpec&)>;
  // compute_model: the kernel-time model's name (TrainingSettings::compute_model: auto, mlp, roofline);
  // `make`, where given, builds each GPU's model instead of cluster_compute_model (tests count calls).
  explicit StepPricing(std::string compute_model, ComputeFactory make = {}) : compute_model_(std::move(compute_model)), make_(std::move(make)) {}
  StepPricing(const StepPricing&) = delete;
  StepPricing& operator=(const StepPricing&) = delete;

  const std::string& compute_model_name() const { return compute_model_; }
  // The kernel-time model of c's GPU as c's framework sees it (cluster_compute_model): one per GPU
  // and framework, whatever else of the cluster differs.
  std::shared_ptr<const ComputeModel> compute(const ClusterSpec& c);
  // The model's kernels at `batch` (lower_iteration). Graphs are told apart by address (and name and
  // size, as a guard): every graph given must outlive this object.
  const IterationKernels& kernels(const Graph& g, int64_t batch, Precision precision, const StepMode& mode);
  // The step's first phase on c (its GPU, its framework's host costs and buckets) at `batch`; the
  // kernels' spans recorded where `record_kernels`. The graph must outlive this object.
  const StepBeforeCollectives& before_collectives(const Graph& g, const ClusterSpec& c, int64_t batch, Precision precision,
                                                  const StepMode& mode, bool record_kernels);

 private:
  // Everything of a GPU spec and a framework's kernel tables that a kernel's time can depend on.
  using ComputeKey = std::tuple<std::string, std::vector<double>>;
  using KernelsKey = std::tuple<const Graph*, std::string, size_t, int64_t, int, int, int, int, bool>;
  static KernelsKey kernels_key(const Graph& g, int64_t batch, Precision precision, const StepMode& mode);
  using PhaseKey = std::tuple<KernelsKey, const ComputeModel*, std::vector<double>, bool>;
  static ComputeKey compute_key(const ClusterSpec& c);

  std::string compute_model_;
  ComputeFactory make_;
  std::mutex mu_;
  std::map<ComputeKey, std::shared_ptr<const ComputeModel>> computes_;
  std::map<KernelsKey, IterationKernels> kernels_;
  std::map<PhaseKey, StepBeforeCollectives> phases_;
};

}  // namespace dtsim
