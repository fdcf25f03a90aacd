#include "report/trace.hpp"

#include <algorithm>
#include <limits>

#include "core/output.hpp"
#include "core/precision.hpp"

namespace dtsim {

namespace {
constexpr int kPid = 1;
constexpr double kUs = 1e6;  // trace times are microseconds

Json span(const std::string& name, const char* cat, int tid, double start_s, double end_s, Json args = Json::object()) {
  Json e = {{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", kPid}, {"tid", tid}, {"ts", start_s * kUs}, {"dur", std::max(0.0, end_s - start_s) * kUs}};
  if (!args.empty()) e["args"] = std::move(args);
  return e;
}

Json meta(const char* what, int tid, Json args) {
  Json e = {{"name", what}, {"ph", "M"}, {"pid", kPid}, {"args", std::move(args)}};
  if (tid) e["tid"] = tid;
  return e;
}
}  // namespace

Json chrome_trace(const Prediction& p, double iteration_overhead_s) {
  const IterationTimeline& t = p.timeline;
  Json ev = Json::array();
  ev.push_back(meta("process_name", 0,
                    {{"name", "dtsim: " + p.model + " on " + p.cluster + ", " + std::to_string(p.gpus) + " GPU(s), batch " +
                                  std::to_string(p.batch_per_gpu) + " per GPU, " + p.precision}}));
  const std::pair<int, const char*> tracks[] = {
      {kTraceHost, "host (kernel launches)"}, {kTraceCompute, "compute stream"}, {kTraceComm, "communication stream (all-reduce)"}, {kTraceBuckets, "gradient buckets"}};
  for (const auto& [tid, name] : tracks) {
    ev.push_back(meta("thread_name", tid, {{"name", name}}));
    ev.push_back(meta("thread_sort_index", tid, {{"sort_index", tid}}));
  }

  // Host: the per-iteration cost, then one span per launch ending when the kernel is issued.
  if (iteration_overhead_s > 0) ev.push_back(span("iteration overhead", "host", kTraceHost, 0, iteration_overhead_s));
  auto kernel_name = [&](const KernelSpan& k) {
    std::string layer = k.layer >= 0 && static_cast<size_t>(k.layer) < p.layer_names.size() ? p.layer_names[k.layer] : "optimizer";
    return layer + " " + kind_name(k.kind) + " " + pass_name(k.pass);
  };
  for (const KernelSpan& k : t.kernels)
    ev.push_back(span("launch " + kernel_name(k), "host", kTraceHost, k.issue_s - k.host_s, k.issue_s));

  // Compute stream: the iteration contains the phases, each phase its kernels.
  ev.push_back(span("iteration", "phase", kTraceCompute, 0, p.iteration_s,
                    {{"iteration_s", p.iteration_s}, {"compute_s", p.compute_s}, {"exposed_comm_s", p.exposed_comm_s}, {"host_idle_s", p.host_idle_s}}));
  const double inf = std::numeric_limits<double>::infinity();
  double fwd0 = inf, bwd0 = inf, upd0 = inf, upd1 = 0;
  for (const KernelSpan& k : t.kernels) {
    if (k.pass == Pass::Fwd) fwd0 = std::min(fwd0, k.start_s);
    else if (k.pass == Pass::Update) upd0 = std::min(upd0, k.start_s), upd1 = std::max(upd1, k.end_s);
    else bwd0 = std::min(bwd0, k.start_s);
  }
  if (fwd0 < inf) ev.push_back(span("forward", "phase", kTraceCompute, fwd0, t.forward_end_s));
  if (bwd0 < inf) ev.push_back(span("backward", "phase", kTraceCompute, bwd0, t.backward_end_s));
  double last_comm = t.buckets.empty() ? 0 : t.buckets.back().end_s;
  double wait_end = std::min(last_comm, upd0 < inf ? upd0 : p.iteration_s);
  if (wait_end > t.backward_end_s) ev.push_back(span("waiting for all-reduce", "exposed_comm", kTraceCompute, t.backward_end_s, wait_end));
  if (upd0 < inf) ev.push_back(span("optimizer", "phase", kTraceCompute, upd0, upd1));
  for (const KernelSpan& k : t.kernels)
    ev.push_back(span(kernel_name(k), "kernel", kTraceCompute, k.start_s, k.end_s,
                      {{"kind", kind_name(k.kind)}, {"pass", pass_name(k.pass)}, {"math", math_name(k.math)},
                       {"variant", k.variant}, {"issued_us", k.issue_s * kUs}}));

  // Communication stream and the buckets waiting for it.
  for (size_t i = 0; i < t.buckets.size(); ++i) {
    const GradientBucket& b = t.buckets[i];
    const std::string name = "bucket " + std::to_string(i) + " (" + fmt_count(static_cast<double>(b.bytes)) + "B)";
    Json args = {{"bytes", b.bytes}, {"tensors", b.tensors}, {"ready_us", b.ready_s * kUs}};
    ev.push_back(span(p.algo + " all-reduce " + name, "allreduce", kTraceComm, b.start_s, b.end_s, args));
    ev.push_back(span(name + (b.start_s > b.ready_s ? " waiting" : " ready"), "bucket", kTraceBuckets, b.ready_s, b.start_s, args));
  }
  return Json{{"traceEvents", std::move(ev)},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"generator", "dtsim predict --trace"}, {"model", p.model}, {"cluster", p.cluster}, {"gpus", p.gpus}, {"batch_per_gpu", p.batch_per_gpu},
                {"iteration_s", p.iteration_s}}}};
}

}  // namespace dtsim
