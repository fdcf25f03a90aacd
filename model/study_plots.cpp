#include "model/study_plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/output.hpp"
#include "model/verdict.hpp"

namespace dtsim {

namespace {

std::string num(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

// A string column for gnuplot's data files.
std::string dq(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? '\'' : c;
  return q + "\"";
}

// What distinguishes the series: only the parts that vary across the sweep.
struct Varying {
  bool model = false, batch = false, what_if = false;
};
Varying varying(const SweepResult& res) {
  std::set<std::string> models, whatifs;
  std::set<int64_t> batches;
  for (const auto& r : res.rows) {
    models.insert(r.p.model);
    whatifs.insert(r.what_if.label());
    batches.insert(r.p.batch_per_gpu);
  }
  return {models.size() > 1, batches.size() > 1, whatifs.size() > 1};
}

std::string series_title(const StudyRow& r, const Varying& v) {
  std::string t;
  auto add = [&](const std::string& s) { t += (t.empty() ? "" : ", ") + s; };
  if (v.model) add(r.p.model);
  if (v.batch) add("batch " + std::to_string(r.p.batch_per_gpu));
  if (v.what_if) add(r.what_if.label());
  return t.empty() ? r.p.model + ", batch " + std::to_string(r.p.batch_per_gpu) : t;
}

std::string sweep_title(const SweepResult& res) {
  std::set<std::string> models;
  for (const auto& r : res.rows) models.insert(r.p.model);
  std::string m;
  for (const auto& x : models) m += (m.empty() ? "" : ", ") + x;
  return m + " on " + res.cluster_name + " (" + res.gpu_name + "), " + res.precision + ", data parallel";
}

}  // namespace

Plot scaling_plot(const SweepResult& res, const std::string& path, const std::string& flag) {
  Plot plot(flag, path, 1400, 560);
  const auto series = sweep_series(res);
  const Varying v = varying(res);
  std::vector<PlotFile> files;
  int64_t lo = INT64_MAX, hi = 1;
  std::string nofit;
  for (size_t i = 0; i < series.size(); ++i) {
    std::string d = "# gpus throughput_samples_per_s efficiency_pct fits\n";
    for (size_t k : series[i].rows) {
      const StudyRow& r = res.rows[k];
      lo = std::min<int64_t>(lo, r.p.gpus);
      hi = std::max<int64_t>(hi, r.p.gpus);
      std::string line = num(r.p.gpus) + " " + num(r.p.throughput_samples_per_s) + " " + num(100 * r.p.scaling_efficiency) + " " +
                         (r.memory.fits ? "1" : "0") + "\n";
      d += line;
      if (!r.memory.fits) nofit += line;
    }
    files.push_back({"s" + std::to_string(i) + ".dat", d});
  }
  if (!nofit.empty()) files.push_back({"nofit.dat", nofit});
  std::ostringstream gp;
  gp << "set multiplot layout 1,2 title " << gp_quote(sweep_title(res)) << "\n"
     << "set logscale x 2\nset xrange [" << num(lo / 1.3) << ":" << num(hi * 1.3) << "]\n"
     << "set xlabel 'GPUs'\nset grid\nset key outside bottom center horizontal maxrows 4 font ',8'\n"
     << "set format x '%g'\n";
  // Models get a dash pattern each, so that colours (which repeat after eight) still tell lines apart.
  std::map<std::string, int> model_index;
  for (const auto& se : series) model_index.emplace(se.model, static_cast<int>(model_index.size()));
  auto lines = [&](int column) {
    std::string s;
    for (size_t i = 0; i < series.size(); ++i)
      s += std::string(i ? ", " : "") + "'s" + std::to_string(i) + ".dat' using 1:" + std::to_string(column) + " with linespoints pt 7 ps 0.6 dt " +
           std::to_string(1 + model_index[series[i].model] % 5) + " title " +
           gp_quote(series_title(res.rows[series[i].rows.front()], v));
    if (!nofit.empty())
      s += ", 'nofit.dat' using 1:" + std::to_string(column) + " with points pt 6 ps 2 lc rgb 'red' title 'does not fit in GPU memory'";
    return s;
  };
  gp << "set title 'Throughput'\nset ylabel 'samples/s'\nset logscale y\nset format y '%.0s%c'\n"
     << "plot " << lines(2) << "\n";
  gp << "set title 'Weak-scaling efficiency t(1 GPU) / t(P GPUs)'\nset ylabel 'efficiency (%)'\nunset logscale y\nset format y '%g'\n"
     << "set yrange [0:105]\n"
     << "plot " << lines(3) << ", 90 with lines dt 2 lc rgb 'gray40' title '90%', 75 with lines dt 3 lc rgb 'gray40' title '75%'\n"
     << "unset multiplot\n";
  plot.render(gp.str(), files);
  return plot;
}

Plot breakdown_plot(const SweepResult& res, const std::string& path, const std::string& flag) {
  std::vector<const StudyRow*> rows;
  for (const auto& r : res.rows) rows.push_back(&r);
  std::string note;
  if (rows.size() > kMaxBreakdownBars) {
    // The first what-if only, then GPU counts spread evenly over those swept.
    const std::string first = res.rows.front().what_if.label();
    std::vector<const StudyRow*> kept;
    std::set<int64_t> gpus;
    for (const StudyRow* r : rows)
      if (r->what_if.label() == first) {
        kept.push_back(r);
        gpus.insert(r->p.gpus);
      }
    size_t groups = std::max<size_t>(1, kept.size() / std::max<size_t>(1, gpus.size()));
    size_t keep_counts = std::max<size_t>(1, kMaxBreakdownBars / groups);
    std::vector<int64_t> all(gpus.begin(), gpus.end()), chosen;
    for (size_t i = 0; i < std::min(keep_counts, all.size()); ++i)
      chosen.push_back(all[keep_counts >= all.size() ? i : (i * (all.size() - 1)) / std::max<size_t>(1, keep_counts - 1)]);
    std::set<int64_t> pick(chosen.begin(), chosen.end());
    rows.clear();
    for (const StudyRow* r : kept)
      if (pick.count(r->p.gpus) && rows.size() < kMaxBreakdownBars) rows.push_back(r);
    note = " (a subset: " + first + ")";
  }
  const Varying v = varying(res);
  std::string d = "# label compute_pct optimizer_pct exposed_comm_pct host_idle_pct\n";
  for (const StudyRow* r : rows) {
    const Prediction& p = r->p;
    double it = p.iteration_s;
    std::string label;
    if (v.model || (!v.batch && !v.what_if)) label += p.model + " ";
    label += "b" + std::to_string(p.batch_per_gpu);
    if (v.what_if) label += " " + r->what_if.label();
    label += ", " + std::to_string(p.gpus) + " GPU" + (p.gpus == 1 ? "" : "s") + ": " + fmt_time(it) + (r->memory.fits ? "" : " NO FIT");
    d += dq(label) + " " + num(100 * (p.compute_s - p.optimizer_s) / it) + " " + num(100 * p.optimizer_s / it) + " " + num(100 * p.exposed_comm_s / it) + " " +
         num(100 * p.host_idle_s / it) + "\n";
  }
  Plot plot(flag, path, std::max<int>(900, 60 + 22 * static_cast<int>(rows.size())), 640);
  std::ostringstream gp;
  gp << "set title " << gp_quote("Iteration breakdown: " + sweep_title(res) + note) << "\n"
     << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\nset boxwidth 0.8\n"
     << "set lmargin 14\nset ylabel '% of the iteration'\nset yrange [0:100]\nset xtics rotate by 50 right font ',8' nomirror\nset key outside top center horizontal\n"
     << "set grid y\n"
     << "plot 'b.dat' using 2:xtic(1) title 'compute' lc rgb '#4c72b0', '' using 3 title 'optimizer' lc rgb '#8172b2', "
        "'' using 4 title 'exposed communication' lc rgb '#c44e52', '' using 5 title 'host-bound idle' lc rgb '#dd8452'\n";
  plot.render(gp.str(), {{"b.dat", d}});
  return plot;
}

Plot roofline_plot(const RooflineReport& r, const std::string& path, const std::string& flag) {
  Plot plot(flag, path, 1100, 720);
  std::map<int, std::string> by_kind;
  std::set<int> maths;
  double xmin = 1e300, xmax = 0, ymin = 1e300;
  int skipped = 0;
  for (const auto& p : r.points) {
    if (!(p.flops > 0 && p.bytes > 0 && p.attained_flops > 0)) {
      ++skipped;  // no arithmetic (concat, copies): nothing to place on a log axis
      continue;
    }
    by_kind[static_cast<int>(p.kind)] += num(p.intensity) + " " + num(p.attained_flops / 1e12) + "\n";
    maths.insert(static_cast<int>(p.math));
    xmin = std::min(xmin, p.intensity);
    xmax = std::max(xmax, p.intensity);
    ymin = std::min(ymin, p.attained_flops / 1e12);
  }
  double peak = 0;
  for (int m : maths) {
    peak = std::max(peak, r.peak_flops[m]);
    xmax = std::max(xmax, 4 * ridge_intensity(r, static_cast<MathMode>(m)));
  }
  if (by_kind.empty()) {
    xmin = 0.1;
    xmax = 1000;
    ymin = 0.01;
    peak = r.peak_flops[0];
  }
  std::vector<PlotFile> files;
  std::ostringstream gp;
  const double bw_t = r.memory_bandwidth_Bps / 1e12;  // TFLOP/s per FLOP/B
  gp << "set title " << gp_quote(r.model + " kernels on the " + r.gpu + " roofline, batch " + std::to_string(r.batch_per_gpu) + " per GPU, " + r.precision +
                                 " (" + std::to_string(r.points.size() - skipped) + " kernels" + (skipped ? "; " + std::to_string(skipped) + " without arithmetic not shown" : "") +
                                 ")")
     << "\nset logscale xy\nset format x '%g'\nset format y '%g'\nset grid\nset xlabel 'arithmetic intensity (FLOP per byte moved)'\nset ylabel 'attained TFLOP/s'\n"
     << "set xrange [" << num(xmin / 2) << ":" << num(xmax * 2) << "]\nset yrange [" << num(ymin / 3) << ":" << num(peak / 1e12 * 2) << "]\n"
     << "set key outside right top font ',9'\nset samples 400\nbw = " << num(bw_t) << "\nbwa = " << num(bw_t * r.memory_efficiency) << "\n";
  std::string plots;
  for (int m : maths) {
    std::string mn = math_name(static_cast<MathMode>(m));
    double pk = r.peak_flops[m] / 1e12;
    gp << "roof_" << mn << "(x) = x * bw < " << num(pk) << " ? x * bw : " << num(pk) << "\n"
       << "att_" << mn << "(x) = x * bwa < " << num(pk * r.compute_efficiency) << " ? x * bwa : " << num(pk * r.compute_efficiency) << "\n";
    plots += "roof_" + mn + "(x) with lines lw 2 lc rgb 'black' dt " + std::to_string(1 + m) + " title " + gp_quote(mn + " roof (" + fmt_sig(pk, 4) + " TFLOP/s)") + ", ";
    plots += "att_" + mn + "(x) with lines lw 1 lc rgb 'gray50' dt " + std::to_string(1 + m) + " title " + gp_quote(mn + " attainable") + ", ";
  }
  for (const auto& [kind, data] : by_kind) {
    std::string file = std::string(kind_name(static_cast<KernelKind>(kind))) + ".dat";
    files.push_back({file, data});
    plots += gp_quote(file) + " using 1:2 with points pt 7 ps 0.7 title " + gp_quote(kind_name(static_cast<KernelKind>(kind))) + ", ";
  }
  plots.resize(plots.size() - 2);
  gp << "plot " << plots << "\n";
  plot.render(gp.str(), files);
  return plot;
}

}  // namespace dtsim
