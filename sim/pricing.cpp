#include "sim/pricing.hpp"

#include <optional>

#include "sim/blocks.hpp"
#include "sim/compiled_pool.hpp"
#include "sim/multi_tensor.hpp"

namespace dtsim {

namespace {

// The compute model as the cluster's framework sees it: kernels the framework implements itself run
// their measured time ratio longer (FrameworkSpec::kernel_time_factors).
class FrameworkKernels : public ComputeModel {
 public:
  FrameworkKernels(std::unique_ptr<ComputeModel> inner, const FrameworkSpec& fw, const GpuSpec& gpu)
      : inner_(std::move(inner)), fw_(fw), gpu_(gpu), memory_bandwidth_Bps_(gpu.memory_bandwidth_Bps) {}
  std::string name() const override { return inner_->name(); }
  std::string note() const override {
    if (fw_.kernel_time_factors.empty()) return inner_->note();
    return inner_->note() + "; " + fw_.name + "'s own kernels: " + std::to_string(fw_.kernel_time_factors.size()) + " kinds scaled by measured ratios";
  }
  KernelTime time(const KernelDesc& k) const override {
    if (auto t = update_time(k)) return *t;
    if (auto t = compiled_pool_time(fw_.compiled_pooling, k, gpu_)) return *t;
    KernelTime t = inner_->time(k);
    t.seconds *= factor(k);
    return t;
  }
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override {
    inner_->times(ks, out);
    for (size_t i = 0; i < ks.size(); ++i) {
      if (auto t = update_time(ks[i])) out[i] = *t;
      else if (auto p = compiled_pool_time(fw_.compiled_pooling, ks[i], gpu_)) out[i] = *p;
      else out[i].seconds *= factor(ks[i]);
    }
  }

 private:
  // The most specific key first (sim/schedule.hpp): an elementwise kernel's variant and a pooling
  // window have keys of their own, as PyTorch runs its own kernels for them. channels_last kernels
  // read their own table.
  double factor(const KernelDesc& k) const {
    const auto& table = k.format == MemoryFormat::ChannelsLast ? fw_.channels_last_kernel_time_factors : fw_.kernel_time_factors;
    return framework_table_value(k, table, 1.0);
  }
  // An optimizer update kernel alone (one layer's parameters as one tensor). A framework that runs
  // the optimizer as multi-tensor passes prices them (sim/multi_tensor.hpp); the schedule prices a
  // whole step's launches together (update_kernel_times). Otherwise an Adam update is the SGD update
  // of the same parameters, which a measured predictor (and the framework's factor) prices, scaled
  // by the fused kernels' bytes (28 against 20 per parameter): both stream the same tensors, so
  // Adam costs what SGD costs times its extra traffic, never less.
  std::optional<KernelTime> update_time(const KernelDesc& k) const {
    if (k.kind != KernelKind::SgdUpdate && k.kind != KernelKind::AdamUpdate) return std::nullopt;
    const std::string name = update_optimizer_name(k);
    if (runs_multi_tensor(fw_.multi_tensor_optimizer, name)) {
      KernelTime t;
      t.seconds = multi_tensor_step_s(fw_.multi_tensor_optimizer, name, {k.shape[0]}, memory_bandwidth_Bps_);
      t.memory_bound = true;
      return t;
    }
    if (k.kind != KernelKind::AdamUpdate) return std::nullopt;
    KernelDesc sgd = k;
    sgd.kind = KernelKind::SgdUpdate;
    sgd.variant = "";
    set_cost(sgd);
    KernelTime t = inner_->time(sgd);
    t.seconds *= factor(sgd) * k.bytes / sgd.bytes;
    return t;
  }
  std::unique_ptr<ComputeModel> inner_;
  FrameworkSpec fw_;
  GpuSpec gpu_;
  double memory_bandwidth_Bps_;
};

}  // namespace

std::unique_ptr<ComputeModel> cluster_compute_model(const std::string& name, const ClusterSpec& c) {
  auto m = make_compute_model(name, c.gpu);
  // Always wrapped: Adam's updates are priced from SGD's even without a framework's tables.
  return std::make_unique<FrameworkKernels>(std::move(m), c.framework, c.gpu);
}


StepPricing::ComputeKey StepPricing::compute_key(const ClusterSpec& c) {
  const GpuSpec& g = c.gpu;
  const FrameworkSpec& f = c.framework;
  std::vector<double> v(g.peak_flops.begin(), g.peak_flops.end());
  for (bool n : g.native) v.push_back(n);
  v.insert(v.end(), {g.memory_bandwidth_Bps, g.memory_bytes, static_cast<double>(g.sm_count), g.sm_clock_Hz, g.l2_cache_bytes,
                     g.compute_efficiency, g.memory_efficiency, g.kernel_overhead_s});
  v.insert(v.end(), g.compute_efficiency_by_math.begin(), g.compute_efficiency_by_math.end());
  // The framework's kernel tables, by name and size (a pricing serves the clusters of one profile).
  v.insert(v.end(), {static_cast<double>(f.kernel_time_factors.size()), static_cast<double>(f.channels_last_kernel_time_factors.size()),
                     f.multi_tensor_optimizer.launch_s, f.multi_tensor_optimizer.bandwidth_fraction, f.compiled_pooling.bandwidth_fraction});
  return {g.name + "|" + f.name, std::move(v)};
}

std::shared_ptr<const ComputeModel> StepPricing::compute(const ClusterSpec& c) {
  ComputeKey key = compute_key(c);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = computes_.find(key); it != computes_.end()) return it->second;
  }
  std::shared_ptr<const ComputeModel> m =
      std::make_shared<RememberingComputeModel>(make_ ? make_(c) : cluster_compute_model(compute_model_, c), 4);
  std::lock_guard<std::mutex> lock(mu_);
  return computes_.emplace(std::move(key), std::move(m)).first->second;
}

StepPricing::KernelsKey StepPricing::kernels_key(const Graph& g, int64_t batch, Precision precision, const StepMode& mode) {
  return {&g, g.name, g.layers.size(), batch, static_cast<int>(precision), static_cast<int>(mode.memory_format), static_cast<int>(mode.optimizer),
          static_cast<int>(mode.execution), mode.activation_checkpointing};
}

const IterationKernels& StepPricing::kernels(const Graph& g, int64_t batch, Precision precision, const StepMode& mode) {
  const KernelsKey key = kernels_key(g, batch, precision, mode);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  }
  IterationKernels k = lower_iteration(g, batch, precision, mode);
  if (mode.activation_checkpointing) add_recompute(g, k);
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.emplace(key, std::move(k)).first->second;
}

const StepBeforeCollectives& StepPricing::before_collectives(const Graph& g, const ClusterSpec& c, int64_t batch, Precision precision,
                                                             const StepMode& mode, bool record_kernels) {
  const std::shared_ptr<const ComputeModel> model = compute(c);
  const FrameworkSpec& f = c.framework;
  // What of the cluster the first phase reads beyond its GPU: the host's costs (scaled alike by a
  // launch-cost what-if) and DDP's buckets.
  const PhaseKey key{kernels_key(g, batch, precision, mode),
                     model.get(),
                     {f.launch_overhead_s, f.iteration_overhead_s, f.host_cost_scale, static_cast<double>(f.first_bucket_bytes),
                      static_cast<double>(f.bucket_bytes)},
                     record_kernels};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = phases_.find(key); it != phases_.end()) return it->second;
  }
  const IterationKernels& k = kernels(g, batch, precision, mode);
  StepBeforeCollectives s = step_before_collectives(g, k, *model, schedule_options(c, true, record_kernels, mode.execution));
  std::lock_guard<std::mutex> lock(mu_);
  return phases_.emplace(key, std::move(s)).first->second;
}

}  // namespace dtsim
