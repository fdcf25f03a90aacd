#include "model/predict.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "model/strategies/data_parallel.hpp"

namespace dtsim {

static IterationTimeline run_schedule(const Graph& g, const IterationKernels& k, const ClusterSpec& c, const TrainingConfig& cfg,
                                      const ComputeModel& compute, const CollectiveAlgorithm& algo, const Placement& place) {
  ScheduleOptions opt;
  opt.overlap = cfg.overlap.value_or(c.framework.overlap);
  opt.first_bucket_bytes = c.framework.first_bucket_bytes;
  opt.bucket_bytes = c.framework.bucket_bytes;
  opt.launch_overhead_s = c.framework.launch_overhead_s;
  opt.host_cost_s = &c.framework.host_cost_s;
  opt.ddp_gradient_copy = c.framework.ddp_gradient_copy;
  opt.iteration_overhead_s = c.framework.iteration_overhead_s;
  opt.record_kernels = cfg.record_kernels;
  auto allreduce = [&](double bytes) { return algo.time_s(CollectiveOp::AllReduce, bytes, place, c); };
  return simulate_iteration(g, k, compute, allreduce, opt);
}

// A strategy parameter given to a strategy that does not read it is a mistake worth naming.
static void check_strategy_params(const std::string& strategy, const StrategyParams& sp) {
  const bool easgd = strategy == "easgd-sync" || strategy == "easgd-async" || strategy == "measgd-async" || strategy == "hogwild-easgd";
  const std::pair<bool, std::pair<const char*, bool>> uses[] = {
      {sp.global_skip != 0, {"--global-skip", strategy == "daso"}}, {sp.batches_to_wait != -1, {"--batches-to-wait", strategy == "daso"}},
      {sp.tau != 0, {"--tau", easgd || strategy == "local-sgd"}},                              {sp.servers != 0, {"--servers", strategy == "ps"}},
      {sp.pr != 0, {"--pr", strategy == "grid"}},                   {sp.pc != 0, {"--pc", strategy == "grid"}},
      {sp.domain, {"--domain", strategy == "grid"}}};
  for (const auto& [given, flag] : uses)
    if (given && !flag.second) throw InputError(flag.first, "does not apply to --strategy " + strategy);
}

namespace {

// The compute model as the cluster's framework sees it: kernels the framework implements itself run
// their measured time ratio longer (FrameworkSpec::kernel_time_factors).
class FrameworkKernels : public ComputeModel {
 public:
  FrameworkKernels(std::unique_ptr<ComputeModel> inner, const FrameworkSpec& fw) : inner_(std::move(inner)), fw_(fw) {}
  std::string name() const override { return inner_->name(); }
  std::string note() const override {
    return inner_->note() + "; " + fw_.name + "'s own kernels: " + std::to_string(fw_.kernel_time_factors.size()) + " kinds scaled by measured ratios";
  }
  KernelTime time(const KernelDesc& k) const override {
    KernelTime t = inner_->time(k);
    t.seconds *= factor(k);
    return t;
  }
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override {
    inner_->times(ks, out);
    for (size_t i = 0; i < ks.size(); ++i) out[i].seconds *= factor(ks[i]);
  }

 private:
  // The most specific key first (model/schedule.hpp): an elementwise kernel's variant and a pooling
  // window have keys of their own, as PyTorch runs its own kernels for them.
  double factor(const KernelDesc& k) const { return framework_table_value(k, fw_.kernel_time_factors, 1.0); }
  std::unique_ptr<ComputeModel> inner_;
  FrameworkSpec fw_;
};

}  // namespace

std::unique_ptr<ComputeModel> cluster_compute_model(const std::string& name, const ClusterSpec& c) {
  auto m = make_compute_model(name, c.gpu);
  if (c.framework.kernel_time_factors.empty()) return m;
  return std::make_unique<FrameworkKernels>(std::move(m), c.framework);
}

IterationTimeline single_gpu_step(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, int64_t batch) {
  auto compute = cluster_compute_model(cfg.compute_model, c);
  auto algo = make_collective_algorithm(cfg.algo);
  TrainingConfig one = cfg;
  one.record_kernels = false;
  return run_schedule(g, lower_iteration(g, batch, cfg.precision), c, one, *compute, *algo, place(c, 1));
}

Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  if (cfg.batch_per_gpu < 1 || cfg.batch_per_gpu > kMaxBatchPerGpu)
    throw InputError("--batch-per-gpu", "must be in [1, " + std::to_string(kMaxBatchPerGpu) + "], got " + std::to_string(cfg.batch_per_gpu));
  const Placement where = place(c, cfg.gpus);
  // One model for the step and its 1-GPU baseline, which share their kernels: priced once.
  std::shared_ptr<const ComputeModel> compute = cfg.compute;
  if (!compute) compute = std::make_shared<RememberingComputeModel>(cluster_compute_model(cfg.compute_model, c), 4);
  auto algo = make_collective_algorithm(cfg.algo);
  auto strategy = make_strategy(cfg.strategy);
  check_strategy_params(strategy->name(), cfg.strategy_params);
  const IterationKernels kernels = lower_iteration(g, cfg.batch_per_gpu, cfg.precision);

  Prediction p;
  p.model = g.name;
  p.cluster = c.name;
  p.gpu = c.gpu.name;
  p.precision = precision_name(cfg.precision);
  p.algo = algo->name();
  p.compute_model = compute->name();
  p.compute_note = compute->note();
  p.gpus = where.gpus;
  p.nodes = where.nodes;
  p.batch_per_gpu = cfg.batch_per_gpu;
  p.overlap = cfg.overlap.value_or(c.framework.overlap);
  p.timeline = run_schedule(g, kernels, c, cfg, *compute, *algo, where);
  const IterationTimeline& t = p.timeline;
  p.iteration_s = t.iteration_s;
  p.throughput_samples_per_s = static_cast<double>(cfg.batch_per_gpu) * where.gpus / t.iteration_s;
  p.compute_s = t.compute_s;
  p.comm_s = t.comm_s;
  p.exposed_comm_s = t.exposed_comm_s;
  p.host_idle_s = t.host_idle_s;
  p.optimizer_s = t.optimizer_s;
  for (const auto& l : t.layers) p.grad_bytes += l.grad_bytes;
  for (const auto& l : g.layers) p.layer_names.push_back(l.name);

  if (where.gpus == 1) {
    p.single_gpu_iteration_s = t.iteration_s;
  } else {
    TrainingConfig one = cfg;
    one.record_kernels = false;
    p.single_gpu_iteration_s = run_schedule(g, kernels, c, one, *compute, *algo, place(c, 1)).iteration_s;
  }
  p.comm_bottleneck = comm_bottleneck(where, c);

  // The training strategy: `dp` is the step above; the others price their own step.
  if (strategy->name() == "dp") {
    p.strategy = outcome_from_timeline("dp", strategy->trade_off(), p.timeline);
    p.strategy.has_timeline = false;  // the same as p.timeline
    p.strategy.timeline = {};
  } else {
    auto simulate = [&](const std::function<double(double)>& bucket_s) {
      ScheduleOptions opt;
      opt.overlap = p.overlap;
      opt.first_bucket_bytes = c.framework.first_bucket_bytes;
      opt.bucket_bytes = c.framework.bucket_bytes;
      opt.launch_overhead_s = c.framework.launch_overhead_s;
      opt.host_cost_s = &c.framework.host_cost_s;
      opt.ddp_gradient_copy = c.framework.ddp_gradient_copy;
      opt.iteration_overhead_s = c.framework.iteration_overhead_s;
      opt.record_kernels = cfg.record_kernels;
      return simulate_iteration(g, kernels, *compute, bucket_s, opt);
    };
    TrainingConfig quiet = cfg;
    quiet.record_kernels = false;
    auto single = [&](int64_t batch) {
      if (batch == cfg.batch_per_gpu) return run_schedule(g, kernels, c, quiet, *compute, *algo, place(c, 1));
      return run_schedule(g, lower_iteration(g, batch, cfg.precision), c, quiet, *compute, *algo, place(c, 1));
    };
    StrategyContext ctx{g, c, where, cfg.batch_per_gpu, cfg.precision, *compute, *algo, cfg.strategy_params, simulate, single};
    p.strategy = strategy->predict(ctx);
    const StrategyOutcome& o = p.strategy;
    if (o.has_timeline) {
      p.timeline = o.timeline;
      p.host_idle_s = o.timeline.host_idle_s;
      p.optimizer_s = o.timeline.optimizer_s;
      p.strategy.timeline = {};  // kept once, in p.timeline
    } else {
      // No replayed step: the host-bound remainder is what compute and waiting do not explain.
      p.host_idle_s = std::max(0.0, o.step_s - o.compute_s - o.exposed_comm_s);
    }
    p.iteration_s = o.step_s;
    p.compute_s = o.compute_s;
    p.comm_s = o.comm_s;
    p.exposed_comm_s = o.exposed_comm_s;
    p.throughput_samples_per_s = static_cast<double>(cfg.batch_per_gpu) * where.gpus / o.step_s;
  }
  p.scaling_efficiency = p.single_gpu_iteration_s / p.iteration_s;

  // The verdict: whichever share of the iteration is largest.
  const IterationTimeline& t2 = p.timeline;
  const std::pair<double, const char*> shares[] = {
      {t2.compute_bound_s, "compute"}, {t2.memory_bound_s, "memory"}, {p.exposed_comm_s, "communication"}, {p.host_idle_s, "host"}};
  p.bottleneck = std::max_element(std::begin(shares), std::end(shares), [](auto& a, auto& b) { return a.first < b.first; })->second;
  return p;
}

}  // namespace dtsim
