#include "report/roofline_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "report/report.hpp"
#include "compute/compute_model.hpp"

namespace dtsim {

RooflineReport roofline_report(const Graph& g, const ClusterSpec& c, int64_t batch, Precision p, const std::string& compute_model,
                               const StepMode& mode) {
  RooflineReport r;
  r.model = g.name;
  r.gpu = c.gpu.name;
  r.gpu_basis = c.gpu.basis;
  r.gpu_basis_note = c.gpu.basis_note;
  r.precision = precision_name(p);
  r.mode = mode;
  r.batch_per_gpu = batch;
  r.peak_flops = c.gpu.peak_flops;
  r.memory_bandwidth_Bps = c.gpu.memory_bandwidth_Bps;
  r.compute_efficiency = c.gpu.compute_efficiency;
  for (int m = 0; m < kMathModes; ++m) r.compute_efficiency_by_math[m] = c.gpu.compute_efficiency_for(static_cast<MathMode>(m));
  r.memory_efficiency = c.gpu.memory_efficiency;
  auto model = make_compute_model(compute_model, c.gpu);
  r.compute_model = model->name();
  const IterationKernels k = lower_iteration(g, batch, p, mode);
  for (const auto* list : {&k.forward, &k.backward, &k.update})
    for (const KernelDesc& kd : *list) {
      RooflinePoint pt;
      pt.layer = kd.layer >= 0 ? g.layers[kd.layer].name : "optimizer";
      pt.kind = kd.kind;
      pt.pass = kd.pass;
      pt.math = kd.math;
      pt.flops = kd.flops;
      pt.bytes = kd.bytes;
      pt.intensity = kd.bytes > 0 ? kd.flops / kd.bytes : 0;
      KernelTime t = model->time(kd);
      pt.time_s = t.seconds;
      pt.attained_flops = t.seconds > 0 ? kd.flops / t.seconds : 0;
      pt.memory_bound = t.memory_bound;
      pt.measured = t.source == TimeSource::Mlp;
      pt.in_range = t.in_range;
      r.total_s += t.seconds;
      r.points.push_back(std::move(pt));
    }
  return r;
}

double ridge_intensity(const RooflineReport& r, MathMode m) { return r.peak_flops[static_cast<int>(m)] / r.memory_bandwidth_Bps; }

Json roofline_json(const RooflineReport& r) {
  Json peaks = Json::object(), ridges = Json::object(), efficiency = Json::object();
  for (int m = 0; m < kMathModes; ++m) {
    const char* mode = math_name(static_cast<MathMode>(m));
    if (r.peak_flops[m] > 0) {
      peaks[mode] = r.peak_flops[m];
      ridges[mode] = ridge_intensity(r, static_cast<MathMode>(m));
      efficiency[mode] = r.compute_efficiency_by_math[m];
    } else {  // no such math on this GPU
      peaks[mode] = nullptr;
      ridges[mode] = nullptr;
      efficiency[mode] = nullptr;
    }
  }
  Json pts = Json::array();
  for (const auto& p : r.points)
    pts.push_back({{"layer", p.layer}, {"kind", kind_name(p.kind)}, {"pass", pass_name(p.pass)}, {"math", math_name(p.math)}, {"flops", p.flops},
                   {"bytes", p.bytes}, {"intensity_flops_per_byte", p.intensity}, {"time_s", p.time_s}, {"attained_flops_per_s", p.attained_flops},
                   {"bound", p.memory_bound ? "memory" : "compute"}, {"source", p.measured ? "mlp" : "roofline"}, {"in_range", p.in_range}});
  return Json{{"model", r.model},
              {"gpu", r.gpu},
              {"gpu_basis", r.gpu_basis},
              {"gpu_basis_note", r.gpu_basis_note},
              {"precision", r.precision},
              {"batch_per_gpu", r.batch_per_gpu},
              {"compute_model", r.compute_model},
              {"peak_flops_per_s", peaks},
              {"memory_bandwidth_Bps", r.memory_bandwidth_Bps},
              {"ridge_intensity_flops_per_byte", ridges},
              {"compute_efficiency", r.compute_efficiency},
              {"compute_efficiency_by_math", efficiency},
              {"memory_efficiency", r.memory_efficiency},
              {"kernel_time_s", r.total_s},
              {"kernels", pts}};
}

static std::string tflops(double x) { return fmt_sig(x / 1e12, 4); }

std::string roofline_text(const RooflineReport& r) {
  std::string s = r.model + " on " + r.gpu + ", batch " + std::to_string(r.batch_per_gpu) + " per GPU, " + r.precision + ", " + step_mode_text(r.mode) + ", compute model " + r.compute_model +
                  ": " + std::to_string(r.points.size()) + " kernels, " + fmt_time(r.total_s) + " of GPU time per iteration\n";
  s += "roofs: memory " + fmt_sig(r.memory_bandwidth_Bps / 1e9, 4) + " GB/s";
  for (int m = 0; m < kMathModes; ++m)
    s += "; " + std::string(math_name(static_cast<MathMode>(m))) +
         (r.peak_flops[m] > 0 ? " " + tflops(r.peak_flops[m]) + " TFLOP/s (ridge " + fmt_sig(ridge_intensity(r, static_cast<MathMode>(m)), 3) + " FLOP/B)"
                              : " none");
  s += "\ngpu numbers rest on: " + r.gpu_basis;
  s += "\n\n";
  // Per kind and pass.
  struct Agg {
    int count = 0, memory_bound = 0;
    double flops = 0, bytes = 0, time = 0;
  };
  std::map<std::pair<int, int>, Agg> by;
  for (const auto& p : r.points) {
    Agg& a = by[{static_cast<int>(p.kind), static_cast<int>(p.pass)}];
    a.count++;
    a.memory_bound += p.memory_bound;
    a.flops += p.flops;
    a.bytes += p.bytes;
    a.time += p.time_s;
  }
  std::vector<std::pair<std::pair<int, int>, Agg>> rows(by.begin(), by.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.time > b.second.time; });
  Table t{{"kind", "pass", "kernels", "time", "share", "FLOP/B", "TFLOP/s", "memory-bound"}, {}};
  for (const auto& [key, a] : rows) {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100 * a.time / r.total_s);
    t.rows.push_back({kind_name(static_cast<KernelKind>(key.first)), pass_name(static_cast<Pass>(key.second)), std::to_string(a.count), fmt_time(a.time),
                      share, fmt_sig(a.bytes > 0 ? a.flops / a.bytes : 0, 3), tflops(a.time > 0 ? a.flops / a.time : 0),
                      std::to_string(a.memory_bound) + "/" + std::to_string(a.count)});
  }
  s += t.to_text();
  // The longest kernels.
  std::vector<size_t> idx(r.points.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return r.points[a].time_s > r.points[b].time_s; });
  constexpr size_t kLongest = 20;
  Table k{{"layer", "kind", "pass", "math", "FLOP/B", "time", "TFLOP/s", "bound"}, {}};
  for (size_t i = 0; i < std::min(kLongest, idx.size()); ++i) {
    const auto& p = r.points[idx[i]];
    k.rows.push_back({p.layer, kind_name(p.kind), pass_name(p.pass), math_name(p.math), fmt_sig(p.intensity, 3), fmt_time(p.time_s), tflops(p.attained_flops),
                      p.memory_bound ? "memory" : "compute"});
  }
  s += "\nlongest kernels (all of them: --format csv or json)\n" + k.to_text();
  return s;
}

Table roofline_csv(const RooflineReport& r) {
  Table t{{"layer", "kind", "pass", "math", "flops", "bytes", "intensity_flops_per_byte", "time_s", "attained_flops_per_s", "bound"}, {}};
  for (const auto& p : r.points)
    t.rows.push_back({p.layer, kind_name(p.kind), pass_name(p.pass), math_name(p.math), fmt_number(std::round(p.flops)), fmt_number(std::round(p.bytes)), fmt_sig(p.intensity, 6),
                      fmt_sig(p.time_s, 6), fmt_sig(p.attained_flops, 6), p.memory_bound ? "memory" : "compute"});
  return t;
}

}  // namespace dtsim
