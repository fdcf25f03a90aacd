#include "report/study_plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "core/output.hpp"
#include "study/verdict.hpp"

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

const KindStyle& kind_style(KernelKind k) {
  // gnuplot's automatic colours count every plotted item, the roof lines included, and repeat after
  // eight: two kinds could share one. Each kind has its own colour and point shape instead.
  static const KindStyle styles[] = {
      {"#1f77b4", 7},   // conv2d: filled circle
      {"#ff7f0e", 5},   // gemm: filled square
      {"#2ca02c", 9},   // batchnorm: filled triangle
      {"#d62728", 11},  // activation: filled triangle down
      {"#9467bd", 13},  // pool: filled diamond
      {"#8c564b", 15},  // add: filled pentagon
      {"#e377c2", 6},   // concat: open circle
      {"#7f7f7f", 4},   // dropout: open square
      {"#bcbd22", 8},   // softmax_ce: open triangle
      {"#17becf", 10},  // sgd_update: open triangle down
      {"#000080", 3},   // eltwise: star
      {"#808000", 1},   // adam_update: plus
      {"#ff1493", 12},  // layernorm: open diamond
      {"#006400", 2},   // attention: cross
      {"#b8860b", 14},  // embedding: open pentagon
  };
  static_assert(std::size(styles) == kKernelKinds, "one style per kernel kind");
  const size_t i = static_cast<size_t>(k);
  return styles[i < std::size(styles) ? i : 0];
}

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
     << "set xlabel 'GPUs' offset 0,0.3\nset grid\nset key outside bottom center horizontal maxrows 4 font ',8' height 1.5\n"
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
  // The efficiency axis spans the efficiencies drawn: series that all sit near 99% would merge into
  // one line on a 0-100% axis. It reaches down to the 90% and 75% marks only where a series does.
  double eff_lo = 100, eff_hi = 100;
  for (const auto& r : res.rows)
    if (std::isfinite(r.p.scaling_efficiency)) {
      eff_lo = std::min(eff_lo, 100 * r.p.scaling_efficiency);
      eff_hi = std::max(eff_hi, 100 * r.p.scaling_efficiency);
    }
  const double pad = std::max(0.5, 0.08 * (eff_hi - eff_lo));
  const double y_lo = std::max(0.0, std::floor(eff_lo - pad)), y_hi = std::ceil(eff_hi + pad);
  std::string marks;
  if (y_lo < 90) marks += ", 90 with lines dt 2 lc rgb 'gray40' title '90%'";
  if (y_lo < 75) marks += ", 75 with lines dt 3 lc rgb 'gray40' title '75%'";
  gp << "set title 'Weak-scaling efficiency t(1 GPU) / t(P GPUs)'\nset ylabel 'efficiency (%)'\nunset logscale y\nset format y '%g'\n"
     << "set yrange [" << num(y_lo) << ":" << num(y_hi) << "]\n"
     << "plot " << lines(3) << marks << "\n"
     << "unset multiplot\n";
  plot.render(gp.str(), files);
  return plot;
}

Plot breakdown_plot(const SweepResult& res, const std::string& path, const std::string& flag) {
  std::vector<const StudyRow*> rows;
  for (const auto& r : res.rows) rows.push_back(&r);
  std::string note;
  if (rows.size() > kMaxBreakdownBars) {
    // Every model, batch and what-if keeps its bars, at GPU counts spread evenly over those swept
    // (the smallest and the largest first), as many as the bars allow.
    std::set<int64_t> gpus;
    for (const StudyRow* r : rows) gpus.insert(r->p.gpus);
    const size_t groups = std::max<size_t>(1, rows.size() / std::max<size_t>(1, gpus.size()));
    const size_t keep_counts = std::max<size_t>(1, kMaxBreakdownBars / groups);
    const std::vector<int64_t> all(gpus.begin(), gpus.end());
    std::set<int64_t> pick;
    for (size_t i = 0; i < std::min(keep_counts, all.size()); ++i)
      pick.insert(keep_counts == 1 ? all.back() : all[(i * (all.size() - 1)) / std::max<size_t>(1, std::min(keep_counts, all.size()) - 1)]);
    std::vector<const StudyRow*> kept;
    for (const StudyRow* r : rows)
      if (pick.count(r->p.gpus) && kept.size() < kMaxBreakdownBars) kept.push_back(r);
    rows = kept;
    std::string counts;
    for (int64_t g : pick) counts += (counts.empty() ? "" : ", ") + std::to_string(g);
    note = " (at " + counts + " GPUs)";
  }
  const Varying v = varying(res);
  std::string d = "# label compute_pct optimizer_pct exposed_comm_pct host_idle_pct\n";
  std::vector<size_t> label_chars;
  for (const StudyRow* r : rows) {
    const Prediction& p = r->p;
    double it = p.iteration_s;
    std::string label;
    if (v.model || (!v.batch && !v.what_if)) label += p.model + " ";
    label += "b" + std::to_string(p.batch_per_gpu);
    if (v.what_if) label += " " + r->what_if.label();
    label += ", " + std::to_string(p.gpus) + " GPU" + (p.gpus == 1 ? "" : "s") + ": " + fmt_time(it) + (r->memory.fits ? "" : " NO FIT");
    label_chars.push_back(label.size());
    d += dq(label) + " " + num(100 * (p.compute_s - p.optimizer_s) / it) + " " + num(100 * p.optimizer_s / it) + " " + num(100 * p.exposed_comm_s / it) + " " +
         num(100 * p.host_idle_s / it) + "\n";
  }
  const int width = std::max<int>(900, 60 + 22 * static_cast<int>(rows.size()));
  // The picture is as tall as the bars' area and the longest rotated label below it, no taller: a
  // fixed height left a blank band under short labels and cut long ones.
  const double char_px_h = 0.7 * 8, label_px = (label_chars.empty() ? 0.0 : double(*std::max_element(label_chars.begin(), label_chars.end()))) * char_px_h * std::sin(50 * 3.14159265358979 / 180);
  const double bottom_px = label_px + 30, height = 380 + bottom_px;
  Plot plot(flag, path, width, static_cast<int>(height));
  // The x labels are rotated by 50 degrees and end at their bar, so each reaches left of it by
  // chars x char width x cos 50; the first bars' labels would run past the picture's left edge.
  // The left margin (in pixels; the bars fill the rest up to the right margin, bar i at
  // i + 0.6 of n + 0.2 bar widths) is the smallest that keeps every label inside, and at least
  // the room the y axis's tics and title need.
  const double n = static_cast<double>(rows.size()), right_px = 25, char_px = 0.7 * 8, reach = std::cos(50 * 3.14159265358979 / 180);
  double left_px = 95;
  for (size_t i = 0; i < label_chars.size(); ++i) {
    const double a = (i + 0.6) / (n + 0.2);  // where bar i sits, as a share of the plot's width
    left_px = std::max(left_px, (label_chars[i] * char_px * reach + 8 - a * (width - right_px)) / (1 - a));
  }
  std::ostringstream gp;
  gp << "set title " << gp_quote("Iteration breakdown: " + sweep_title(res) + note) << "\n"
     << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\nset boxwidth 0.8\n"
     << "set lmargin at screen " << num(left_px / width) << "\nset rmargin at screen " << num((width - right_px) / width) << "\n"
     << "set bmargin at screen " << num(bottom_px / height) << "\n"
     << "set xrange [-0.6:" << num(n - 0.4) << "]\n"
     << "set ylabel '% of the iteration'\nset yrange [0:100]\nset xtics rotate by 50 right font ',8' nomirror\nset key outside top center horizontal\n"
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
       << "att_" << mn << "(x) = x * bwa < " << num(pk * r.compute_efficiency_by_math[m]) << " ? x * bwa : " << num(pk * r.compute_efficiency_by_math[m]) << "\n";
    plots += "roof_" + mn + "(x) with lines lw 2 lc rgb 'black' dt " + std::to_string(1 + m) + " title " + gp_quote(mn + " roof (" + fmt_sig(pk, 4) + " TFLOP/s)") + ", ";
    plots += "att_" + mn + "(x) with lines lw 1 lc rgb 'gray50' dt " + std::to_string(1 + m) + " title " + gp_quote(mn + " attainable") + ", ";
  }
  for (const auto& [kind, data] : by_kind) {
    std::string file = std::string(kind_name(static_cast<KernelKind>(kind))) + ".dat";
    files.push_back({file, data});
    const KindStyle& st = kind_style(static_cast<KernelKind>(kind));
    plots += gp_quote(file) + " using 1:2 with points pt " + std::to_string(st.point_type) + " ps 0.8 lc rgb '" + st.colour + "' title " +
             gp_quote(kind_name(static_cast<KernelKind>(kind))) + ", ";
  }
  plots.resize(plots.size() - 2);
  gp << "plot " << plots << "\n";
  plot.render(gp.str(), files);
  return plot;
}

}  // namespace dtsim
