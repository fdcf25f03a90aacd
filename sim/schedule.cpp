#include "sim/schedule.hpp"

#include <algorithm>

#include "compute/kernel_key.hpp"

namespace dtsim {

std::string framework_kernel_key(const KernelDesc& k) {
  std::string key = predictor_key(k);
  // FP16 kernels share the bf16 predictors, and PyTorch runs the same ops for both, except batchnorm:
  // PyTorch runs bf16 batchnorm with its own kernels but fp16 batchnorm with cuDNN's, the kernels the
  // harness measured (torch.profiler, resnet50 b64 on one H100: 15.0 ms against 9.7 ms per step,
  // validation/data/h100-sxm/kernels_beyond/amp_kernels_resnet50_b64.json). Its own key keeps the
  // bf16 ratios off it.
  if (k.kind == KernelKind::BatchNorm && k.math == MathMode::FP16) key.replace(key.rfind("/bf16"), 5, "/fp16");
  if (k.kind == KernelKind::Eltwise && *k.variant) key += std::string("/") + k.variant;
  // PyTorch's native pooling is faster than cuDNN's on some windows and several times slower on others
  // (validation/data/h100-sxm/op_times: average 2x2/s2 backward 4.2x, max 3x3/s2/p1 backward 0.8x).
  if (k.kind == KernelKind::Pool && k.shape[4] == k.shape[5])
    key += "/k" + std::to_string(k.shape[4]) + "s" + std::to_string(k.shape[6]) + "p" + std::to_string(k.shape[7]);
  return key;
}

double framework_table_value(const KernelDesc& k, const std::map<std::string, double>& table, double fallback) {
  if (table.empty()) return fallback;
  // The most specific key first, then with its trailing parts dropped one by one, down to kind/pass.
  std::string key = framework_kernel_key(k);
  for (;;) {
    if (auto it = table.find(key); it != table.end()) return it->second;
    const size_t slash = key.rfind('/');
    if (slash == std::string::npos || std::count(key.begin(), key.end(), '/') < 2) return fallback;
    key.resize(slash);
  }
}

double framework_host_cost_s(const KernelDesc& k, const std::map<std::string, double>* table, double fallback_s) {
  return table ? framework_table_value(k, *table, fallback_s) : fallback_s;
}

ScheduleOptions schedule_options(const FrameworkSpec& f, bool overlap, bool record_kernels) {
  ScheduleOptions opt;
  opt.overlap = overlap;
  opt.first_bucket_bytes = f.first_bucket_bytes;
  opt.bucket_bytes = f.bucket_bytes;
  opt.launch_overhead_s = f.launch_overhead_s;
  opt.host_cost_s = &f.host_cost_s;
  opt.ddp_gradient_copy = f.ddp_gradient_copy;
  opt.iteration_overhead_s = f.iteration_overhead_s;
  opt.record_kernels = record_kernels;
  return opt;
}

std::vector<std::vector<std::pair<int, int64_t>>> assign_buckets(const Graph& g, int64_t first_cap, int64_t cap, int64_t bytes_per_param) {
  std::vector<std::vector<std::pair<int, int64_t>>> buckets(1);
  int64_t filled = 0, limit = first_cap;
  for (int i = static_cast<int>(g.layers.size()) - 1; i >= 0; --i) {
    const Layer& l = g.layers[i];
    // model.parameters() lists weight then bias; reversed, the bias comes first.
    for (int64_t n : {l.bias_params(), l.weight_params()}) {
      if (n == 0) continue;
      buckets.back().push_back({i, n * bytes_per_param});
      filled += n * bytes_per_param;
      if (filled >= limit) {
        buckets.emplace_back();
        filled = 0;
        limit = cap;
      }
    }
  }
  if (buckets.back().empty()) buckets.pop_back();
  return buckets;
}

IterationTimeline simulate_iteration(const Graph& g, const IterationKernels& k, const ComputeModel& compute,
                                     const std::function<double(double)>& allreduce_s, const ScheduleOptions& opt) {
  IterationTimeline t;
  const size_t L = g.layers.size();
  t.layers.assign(L, {});
  for (size_t i = 0; i < L; ++i) t.layers[i].grad_bytes = g.layers[i].params() * opt.grad_bytes_per_param;
  std::vector<double> grad_ready(L, 0.0);

  // Kernel times first, in three batches: predictors infer many kernels at once.
  std::vector<KernelTime> fwd_t, bwd_t, upd_t;
  compute.times(k.forward, fwd_t);
  compute.times(k.backward, bwd_t);
  compute.times(k.update, upd_t);
  // DDP's gradient copy into its bucket (and the 1/world scale), one kernel per layer with
  // parameters: two read-write passes over the FP32 gradient. Priced as one list too.
  std::vector<KernelDesc> copies;
  std::vector<int> copy_of(L, -1);
  std::vector<KernelTime> copy_t;
  if (opt.ddp_gradient_copy) {
    for (size_t i = 0; i < L; ++i) {
      const int64_t p = g.layers[i].params();
      if (p <= 0) continue;
      KernelDesc copy{KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, static_cast<int>(i), {}, "ddp_gradient_copy", 0, 0};
      copy.shape[0] = copy.shape[1] = 2 * p;
      set_cost(copy);
      copy_of[i] = static_cast<int>(copies.size());
      copies.push_back(copy);
    }
    compute.times(copies, copy_t);
  }

  double host = opt.iteration_overhead_s;  // host time before the first launch
  double gpu_free = 0;
  // A kernel starts when the stream is free, the host has issued it, and whatever it waits on
  // (`not_before`, the last all-reduce for the optimizer) is done. The stream's idle gap is split
  // into communication the GPU waits for and time the host is behind.
  auto issue = [&](const KernelDesc& kd, const KernelTime& kt, double not_before) {
    const double host_s = framework_host_cost_s(kd, opt.host_cost_s, opt.launch_overhead_s);
    host += host_s;
    double start = std::max({gpu_free, host, not_before});
    double comm_wait = std::max(0.0, not_before - std::max(gpu_free, host));
    t.exposed_comm_s += comm_wait;
    t.host_idle_s += (start - gpu_free) - comm_wait;
    double end = start + kt.seconds;
    gpu_free = end;
    t.compute_s += kt.seconds;
    (kt.memory_bound ? t.memory_bound_s : t.compute_bound_s) += kt.seconds;
    KindPricing& priced = t.pricing[static_cast<int>(kd.kind)];
    (kt.source == TimeSource::Mlp ? priced.mlp_s : priced.roofline_s) += kt.seconds;
    if (!kt.in_range) priced.extrapolated_s += kt.seconds, t.extrapolated_s += kt.seconds;
    if (opt.record_kernels) t.kernels.push_back({kd.layer, kd.kind, kd.pass, host, start, end, host_s});
    return std::make_pair(kt.seconds, end);
  };

  for (size_t i = 0; i < k.forward.size(); ++i) t.layers[k.forward[i].layer].fwd_s += issue(k.forward[i], fwd_t[i], 0).first;
  t.forward_end_s = gpu_free;
  for (size_t i = 0; i < k.backward.size(); ++i) {
    const KernelDesc& kd = k.backward[i];
    auto [dur, end] = issue(kd, bwd_t[i], 0);
    t.layers[kd.layer].bwd_s += dur;
    grad_ready[kd.layer] = end;  // a layer's last backward kernel produces its parameter gradients
    const bool layer_done = i + 1 == k.backward.size() || k.backward[i + 1].layer != kd.layer;
    if (opt.ddp_gradient_copy && layer_done && copy_of[kd.layer] >= 0) {
      const int c = copy_of[kd.layer];
      auto [cdur, cend] = issue(copies[c], copy_t[c], 0);
      t.layers[kd.layer].bwd_s += cdur;
      grad_ready[kd.layer] = cend;
    }
  }
  t.backward_end_s = gpu_free;

  // Gradient buckets on the communication stream, in bucket order.
  double comm_free = 0;
  for (const auto& b : assign_buckets(g, opt.first_bucket_bytes, opt.bucket_bytes, opt.grad_bytes_per_param)) {
    GradientBucket gb;
    for (const auto& [layer, bytes] : b) {
      gb.bytes += bytes;
      gb.tensors++;
      gb.ready_s = std::max(gb.ready_s, grad_ready[layer]);
    }
    double ready = opt.overlap ? gb.ready_s : t.backward_end_s;
    gb.start_s = std::max(ready, comm_free);
    double dur = allreduce_s(static_cast<double>(gb.bytes));
    gb.end_s = gb.start_s + dur;
    comm_free = gb.end_s;
    t.comm_s += dur;
    t.buckets.push_back(gb);
  }

  // The optimizer waits for the last all-reduce.
  for (size_t i = 0; i < k.update.size(); ++i) {
    if (i == k.update_host_sync_after && i > 0) host = std::max(host, gpu_free);  // GradScaler's found_inf.item()
    t.optimizer_s += issue(k.update[i], upd_t[i], comm_free).first;
  }
  if (comm_free > gpu_free) {  // a model without parameters to update still waits for its all-reduce
    t.exposed_comm_s += comm_free - gpu_free;
    gpu_free = comm_free;
  }
  t.iteration_s = std::max(gpu_free, host);
  return t;
}

}  // namespace dtsim
