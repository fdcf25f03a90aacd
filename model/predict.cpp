#include "model/predict.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace dtsim {

static IterationTimeline run_schedule(const Graph& g, const IterationKernels& k, const ClusterSpec& c, const TrainingConfig& cfg,
                                      const ComputeModel& compute, const CollectiveAlgorithm& algo, const Placement& place) {
  ScheduleOptions opt;
  opt.overlap = cfg.overlap.value_or(c.framework.overlap);
  opt.first_bucket_bytes = c.framework.first_bucket_bytes;
  opt.bucket_bytes = c.framework.bucket_bytes;
  opt.launch_overhead_s = c.framework.launch_overhead_s;
  opt.iteration_overhead_s = c.framework.iteration_overhead_s;
  opt.record_kernels = cfg.record_kernels;
  auto allreduce = [&](double bytes) { return algo.time_s(CollectiveOp::AllReduce, bytes, place, c); };
  return simulate_iteration(g, k, compute, allreduce, opt);
}

Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  if (cfg.batch_per_gpu < 1 || cfg.batch_per_gpu > kMaxBatchPerGpu)
    throw InputError("--batch-per-gpu", "must be in [1, " + std::to_string(kMaxBatchPerGpu) + "], got " + std::to_string(cfg.batch_per_gpu));
  const Placement where = place(c, cfg.gpus);
  auto compute = make_compute_model(cfg.compute_model, c.gpu);
  auto algo = make_collective_algorithm(cfg.algo);
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
  p.scaling_efficiency = p.single_gpu_iteration_s / t.iteration_s;
  p.comm_bottleneck = comm_bottleneck(where, c);

  // The verdict: whichever share of the iteration is largest.
  const std::pair<double, const char*> shares[] = {
      {t.compute_bound_s, "compute"}, {t.memory_bound_s, "memory"}, {t.exposed_comm_s, "communication"}, {t.host_idle_s, "host"}};
  p.bottleneck = std::max_element(std::begin(shares), std::end(shares), [](auto& a, auto& b) { return a.first < b.first; })->second;
  return p;
}

}  // namespace dtsim
