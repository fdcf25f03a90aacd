#include "report/plan_report.hpp"

#include <cstdio>
#include <iterator>
#include <map>
#include <sstream>

#include "core/output.hpp"
#include "report/report.hpp"

namespace dtsim {

namespace {

Json config_json(const PlanConfig& c) {
  return Json{{"cluster", c.cluster},
              {"gpu", c.gpu},
              {"gpus", c.gpus},
              {"nodes", c.nodes},
              {"batch_per_gpu", c.batch_per_gpu},
              {"global_batch", c.global_batch},
              {"steps_per_epoch", c.steps_per_epoch},
              {"precision", c.precision},
              {"memory_format", memory_format_name(c.mode.memory_format)},
              {"optimizer", optimizer_name(c.mode.optimizer)},
              {"execution", execution_name(c.mode.execution)},
              {"strategy", c.strategy},
              {"algo", c.algo},
              {"nic_Gbps", c.nic_Gbps},
              {"bucket_mb", c.bucket_mb},
              {"what_if", c.what_if.to_json()},
              {"iteration_s", c.iteration_s},
              {"time_to_train_s", c.time_to_train_s},
              {"steps", c.steps},
              {"gpu_hours", c.gpu_hours},
              {"price_per_gpu_hour", c.price_per_gpu_hour},
              {"cost", c.cost},
              {"bottleneck", c.bottleneck},
              {"comm_bottleneck", c.comm_bottleneck},
              {"host_idle_share", c.host_idle_share},
              {"scaling_efficiency", c.scaling_efficiency}};
}

std::string mode_cell(const StepMode& m) {
  return std::string(memory_format_name(m.memory_format)) + "/" + optimizer_name(m.optimizer) + "/" + execution_name(m.execution);
}

std::vector<std::string> cells(const PlanConfig& c, bool human) {
  return {c.cluster,
          std::to_string(c.gpus),
          std::to_string(c.nodes),
          std::to_string(c.batch_per_gpu),
          std::to_string(c.global_batch),
          std::to_string(c.steps_per_epoch),
          c.precision,
          mode_cell(c.mode),
          c.strategy,
          c.algo,
          fmt_number(c.nic_Gbps),
          fmt_number(c.bucket_mb),
          human ? fmt_time(c.iteration_s) : fmt_sig(c.iteration_s, 17),
          human ? fmt_sig(c.time_to_train_s / 3600, 4) : fmt_sig(c.time_to_train_s, 17),
          human ? fmt_sig(c.cost, 4) : fmt_sig(c.cost, 17)};
}

std::vector<std::string> header(bool human) {
  return {"cluster",  "gpus", "nodes",    "batch_per_gpu", "global_batch", "steps_per_epoch", "precision", "mode", "strategy", "algo",
          "nic_Gbps", "bucket_mb", human ? "iteration" : "iteration_s", human ? "time_to_train_h" : "time_to_train_s", "cost"};
}

// What holds a reported configuration's step back, in the verdict's words.
std::string held_back(const PlanConfig& c) {
  std::string s = "each step is " + c.bottleneck + "-bound";
  if (c.bottleneck == "communication" && c.comm_bottleneck != "none") s += " (limited by the " + c.comm_bottleneck + ")";
  if (c.bottleneck == "host")
    s += ": the GPU waits for the host " + fmt_sig(100 * c.host_idle_share, 3) +
         "% of the step, so a faster GPU would not train faster; the host's launch rate sets a floor on every step";
  if (c.gpus > 1) s += "; weak-scaling efficiency " + fmt_sig(100 * c.scaling_efficiency, 3) + "%";
  return s;
}

// A global batch this large is not a plain training run: ImageNet-scale SGD keeps its accuracy up to
// about 8K samples (Goyal et al., 2017) and with layer-wise adaptive rates (LARS) to 32K (You, Gitman
// and Ginsburg, 2017); beyond, the epochs to reach the same accuracy grow, which the plan does not model.
constexpr int64_t kCommonGlobalBatch = 32768;

std::vector<std::string> warnings(const PlanSpec& s, const PlanResult& r) {
  std::vector<std::string> w;
  for (const auto* c : {r.fastest ? &*r.fastest : nullptr, r.cheapest ? &*r.cheapest : nullptr}) {
    if (!c) continue;
    const bool large = c->global_batch > kCommonGlobalBatch;
    const std::string which = c == &*r.fastest ? "the fastest" : "the cheapest";
    if (large && !s.max_global_batch)
      w.push_back(which + " configuration's global batch is " + std::to_string(c->global_batch) + " samples (" + std::to_string(c->steps_per_epoch) +
                  " steps an epoch): beyond about " + std::to_string(kCommonGlobalBatch) +
                  " a run needs large-batch methods (LARS) and more epochs to reach the same accuracy, which this plan does not price; "
                  "bound it with --max-global-batch");
    if (c == &*r.fastest && r.fastest_ties > 0)
      w.push_back(std::to_string(r.fastest_ties) + (r.fastest_ties == 1 ? " other configuration trains" : " other configurations train") +
                  " exactly as fast as the fastest: the same number of steps (" + std::to_string(c->steps_per_epoch) + " an epoch) at the same step time");
  }
  if (r.cheapest && r.cheapest_ties > 0)
    w.push_back(std::to_string(r.cheapest_ties) + (r.cheapest_ties == 1 ? " other configuration costs" : " other configurations cost") +
                " exactly what the cheapest costs");
  return w;
}

}  // namespace

std::string plan_text(const PlanSpec& s, const PlanResult& r) {
  std::ostringstream o;
  std::string modes;
  for (const StepMode& m : s.modes) modes += (modes.empty() ? "" : "; ") + step_mode_text(m);
  o << "plan for " << s.model << " (" << modes << "): " << r.evaluated << " configurations, " << r.feasible << " feasible (" << r.priced
    << " priced; skipped: " << r.over_capacity << " beyond the cluster, " << r.partial_node << " on a partial node (--partial-nodes searches them), "
    << r.over_global_batch << " over the global-batch limit, " << r.out_of_memory << " out of GPU memory; " << r.over_deadline
    << " over the deadline, " << r.over_budget << " over the budget)\n";
  if (!r.fastest) return o.str() + "No configuration is feasible.\n";
  auto table = [&](const std::vector<PlanConfig>& cs) {
    Table t{header(true), {}};
    for (const auto& c : cs) t.rows.push_back(cells(c, true));
    return t.to_text();
  };
  o << "\nFastest: " << held_back(*r.fastest) << "\n" << table({*r.fastest});
  o << "\nCheapest: " << held_back(*r.cheapest) << "\n" << table({*r.cheapest});
  for (const std::string& w : warnings(s, r)) o << "\nNote: " << w << "\n";
  o << "\nPareto front: time to train against cost (" << r.pareto.size() << " configurations)\n" << table(r.pareto);
  o << "\nTop " << r.top.size() << " by " << (r.objective == "time" ? "time to train" : "cost") << "\n" << table(r.top);
  return o.str();
}

std::string plan_csv(const PlanResult& r) {
  Table t{header(false), {}};
  t.header.insert(t.header.begin(), "set");
  t.header.push_back("bottleneck");
  auto add = [&](const std::string& set, const PlanConfig& c) {
    auto row = cells(c, false);
    row.insert(row.begin(), set);
    row.push_back(c.bottleneck);
    t.rows.push_back(row);
  };
  if (r.fastest) add("fastest", *r.fastest);
  if (r.cheapest) add("cheapest", *r.cheapest);
  for (const auto& c : r.pareto) add("pareto", c);
  for (const auto& c : r.top) add("top_" + r.objective, c);
  return t.to_csv();
}

std::string plan_json(const PlanSpec& s, const PlanResult& r) {
  Json modes = Json::array();
  for (const StepMode& m : s.modes)
    modes.push_back({{"memory_format", memory_format_name(m.memory_format)}, {"optimizer", optimizer_name(m.optimizer)}, {"execution", execution_name(m.execution)}});
  Json j{{"model", s.model},
         {"modes", modes},
         {"evaluated", r.evaluated},
         {"priced", r.priced},
         {"feasible", r.feasible},
         {"skipped", Json{{"over_capacity", r.over_capacity},
                          {"partial_node", r.partial_node},
                          {"over_global_batch", r.over_global_batch},
                          {"out_of_memory", r.out_of_memory},
                          {"over_deadline", r.over_deadline},
                          {"over_budget", r.over_budget}}},
         {"objective", r.objective},
         {"fastest_ties", r.fastest_ties},
         {"cheapest_ties", r.cheapest_ties},
         {"notes", warnings(s, r)}};
  Json front = Json::array(), top = Json::array();
  for (const auto& c : r.pareto) front.push_back(config_json(c));
  for (const auto& c : r.top) top.push_back(config_json(c));
  j["pareto"] = front;
  j["fastest"] = r.fastest ? config_json(*r.fastest) : Json(nullptr);
  j["cheapest"] = r.cheapest ? config_json(*r.cheapest) : Json(nullptr);
  j["top"] = top;
  if (!r.note.empty()) j["note"] = r.note;
  return j.dump(2) + "\n";  // as every command's JSON (cli's dump)
}

namespace {
std::string num(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}
}  // namespace

Plot plan_front_plot(const PlanSpec& s, const PlanResult& r, const std::string& flag, const std::string& path) {
  Plot plot(flag, path, 1000, 640);
  std::string d = "# time_to_train_h cost\n";
  for (const auto& c : r.pareto) d += num(c.time_to_train_s / 3600) + " " + num(c.cost) + "\n";
  std::vector<PlotFile> files{{"front.dat", d}};
  // The front's points by cluster, each cluster in a colour of its own.
  std::vector<std::string> clusters;
  std::map<std::string, std::string> by_cluster;
  for (const auto& c : r.pareto) {
    if (!by_cluster.count(c.cluster)) clusters.push_back(c.cluster);
    by_cluster[c.cluster] += num(c.time_to_train_s / 3600) + " " + num(c.cost) + "\n";
  }
  std::string points;
  static const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  for (size_t i = 0; i < clusters.size(); ++i) {
    const std::string file = "cluster" + std::to_string(i) + ".dat";
    files.push_back({file, by_cluster[clusters[i]]});
    points += ", " + gp_quote(file) + " using 1:2 with points pt 7 ps 1.1 lc rgb '" + colours[i % std::size(colours)] + "' title " + gp_quote(clusters[i]);
  }
  // A price is in the unit of the clusters' price_per_gpu_hour (or of --price-per-gpu-hour): dtsim
  // keeps no currency, the shipped presets' are US dollars (their price_source).
  const std::string unit = s.price_per_gpu_hour ? "--price-per-gpu-hour's currency" : "the clusters' price_per_gpu_hour currency (US$ for the shipped presets)";
  std::ostringstream gp;
  gp << "set title " << gp_quote(s.model + ": the fastest and the cheapest ways to train (" + std::to_string(r.feasible) + " feasible of " +
                                 std::to_string(r.evaluated) + " configurations)")
     << "\nset xlabel 'time to train (h)'\nset ylabel " << gp_quote("cost, in " + unit) << "\nset grid\nset logscale x\nset key top right\n";
  if (r.fastest) {
    files.push_back({"ends.dat", num(r.fastest->time_to_train_s / 3600) + " " + num(r.fastest->cost) + "\n" + num(r.cheapest->time_to_train_s / 3600) +
                                     " " + num(r.cheapest->cost) + "\n"});
    auto label = [&](const PlanConfig& c, const char* what) {
      return std::string(what) + ": " + c.cluster + ", " + std::to_string(c.gpus) + " GPUs, batch " + std::to_string(c.batch_per_gpu) + ", " + c.precision;
    };
    gp << "set label 1 " << gp_quote(label(*r.fastest, "fastest")) << " at " << num(r.fastest->time_to_train_s / 3600) << "," << num(r.fastest->cost)
       << " offset 2,0 font ',9'\n";
    gp << "set label 2 " << gp_quote(label(*r.cheapest, "cheapest")) << " at " << num(r.cheapest->time_to_train_s / 3600) << ","
       << num(r.cheapest->cost) << " right offset -1,-1 font ',9'\n";
    gp << "plot 'front.dat' using 1:2 with lines lc rgb 'gray40' title 'Pareto front'" << points
       << ", 'ends.dat' using 1:2 with points pt 6 ps 2.5 lc rgb 'red' title 'fastest, cheapest'\n";
  } else {
    gp << "set label 1 'no feasible configuration' at graph 0.5,0.5 center\nplot [1:10] [0:1] NaN notitle\n";
  }
  plot.render(gp.str(), files);
  return plot;
}

}  // namespace dtsim
