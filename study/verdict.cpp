#include "study/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/output.hpp"

namespace dtsim {

namespace {

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}

std::string pct0(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * x);
  return b;
}

std::string rate(double x) {
  char b[32];
  if (x >= 1e6) std::snprintf(b, sizeof b, "%.3gM", x / 1e6);
  else if (x >= 1e4) std::snprintf(b, sizeof b, "%.0f", x);
  else std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

std::string gpus_text(const Prediction& p) {
  std::string s = std::to_string(p.gpus) + (p.gpus == 1 ? " GPU" : " GPUs");
  if (p.nodes > 1) s += " (" + std::to_string(p.nodes) + " nodes)";
  return s;
}

std::string series_name(const StudyRow& r) {
  std::string s = r.p.model + ", batch " + std::to_string(r.p.batch_per_gpu) + " per GPU";
  if (!r.what_if.is_baseline() || !r.what_if.name.empty()) s += ", " + r.what_if.label();
  return s;
}

}  // namespace

IterationShares iteration_shares(const Prediction& p) {
  IterationShares s;
  s.compute_bound_s = p.timeline.compute_bound_s;
  s.memory_bound_s = p.timeline.memory_bound_s;
  s.exposed_comm_s = p.exposed_comm_s;
  s.host_idle_s = p.host_idle_s;
  s.iteration_s = p.iteration_s;
  s.bound = p.bottleneck;  // predict()'s bottleneck_rule: the largest part whose improvement shortens the iteration
  return s;
}

std::string short_verdict(const StudyRow& r) {
  IterationShares s = iteration_shares(r.p);
  double it = s.iteration_s;
  std::string v = s.bound + "-bound: " + pct0(s.compute_bound_s / it) + " arithmetic-limited kernels, " + pct0(s.memory_bound_s / it) +
                  " memory-bound kernels, " + pct0(s.exposed_comm_s / it) + " exposed communication, " + pct0(s.host_idle_s / it) +
                  " host-bound idle";
  if (!r.memory.fits) v += "; does not fit in GPU memory";
  return v;
}

static double param(const StrategyOutcome& o, const std::string& key, double fallback = 0) {
  for (const auto& [k, v] : o.parameters)
    if (k == key) return v;
  return fallback;
}

static const StrategyPhase* phase(const StrategyOutcome& o, const std::string& name) {
  for (const auto& ph : o.phases)
    if (ph.name == name) return &ph;
  return nullptr;
}

// "every step", "every 4 steps".
static std::string every(double steps) { return steps == 1 ? "every step" : "every " + fmt_sig(steps, 4) + " steps"; }

static bool data_parallel(const Prediction& p) { return p.strategy.name.empty() || p.strategy.name == "dp"; }

// What limits the communication (Prediction::comm_bottleneck), in words: the link with its rate, or
// why no link's bandwidth does.
static std::string limit_words(const StudyRow& r) {
  const Prediction& p = r.p;
  if (r.link_Bps > 0) return "the " + r.link + " limits it (twice its bandwidth shortens it)";
  if (p.comm_bottleneck == "per-step latency")
    return "twice the bandwidth of neither the " + r.link + " shortens it: it is per-step latency";
  return "neither twice the links' bandwidth nor half their latency shortens it (the " + p.comm_bottleneck + ")";
}

// The all-reduce in words: which collective, how many bytes in how many buckets, over which link, and
// how its time compares with moving the ring's bytes at the link's full rate. Only where that link's
// bandwidth is what limits it (Prediction::comm_bottleneck) is any of the time credited to its rate.
static std::string allreduce_words(const StudyRow& r) {
  const Prediction& p = r.p;
  std::string s = p.algo + " all-reduce of " + fmt_bytes(static_cast<double>(p.grad_bytes)) + " of gradients in " +
                  std::to_string(p.timeline.buckets.size()) + " bucket" + (p.timeline.buckets.size() == 1 ? "" : "s") + " over the " + r.link +
                  " takes " + fmt_time(p.comm_s);
  if (r.link_Bps > 0 && p.gpus > 1) {
    // nccl-tests' bus traffic: each GPU sends and receives 2(p-1)/p of the buffer.
    double floor_s = 2.0 * (p.gpus - 1) / p.gpus * static_cast<double>(p.grad_bytes) / r.link_Bps;
    s += " (" + fmt_time(floor_s) + " of it is moving 2(p-1)/p of the bytes at the link's full rate";
    if (p.comm_s > 2 * floor_s) s += "; the rest, " + fmt_time(p.comm_s - floor_s) + ", is per-step latency and reduction across " + std::to_string(p.gpus) + " GPUs";
    s += ")";
  } else if (p.gpus > 1) {
    s += " (" + std::string(p.comm_bottleneck == "per-step latency" ? "twice either link's bandwidth would not shorten it: per-step latency across " +
                                                                          std::to_string(p.gpus) + " GPUs"
                                                                    : "neither twice the links' bandwidth nor half their latency would shorten it") +
         ")";
  }
  return s;
}

// A strategy's communication per step in words, from what it reports (sim/strategies/): what moves,
// how often, how long it takes, how much of it the step waits for, and what limits it.
static std::string strategy_comm_words(const StudyRow& r) {
  const Prediction& p = r.p;
  const StrategyOutcome& o = p.strategy;
  const std::string bytes = fmt_bytes(static_cast<double>(p.grad_bytes));
  const std::string nodes = std::to_string(p.nodes) + (p.nodes == 1 ? " node" : " nodes");
  const size_t nb = p.timeline.buckets.size();
  const std::string buckets = std::to_string(nb) + " bucket" + (nb == 1 ? "" : "s");
  const std::string hidden = fmt_time(std::max(0.0, p.comm_s - p.exposed_comm_s));
  std::string s;
  if (o.name == "daso") {
    const double skip = param(o, "global_skip", 1), wait = param(o, "batches_to_wait");
    const double local_comm = p.timeline.comm_s;
    s = "every step the GPUs of each node all-reduce the " + bytes + " of gradients among themselves in " + buckets + " (" + fmt_time(local_comm) + ", " +
        fmt_time(std::max(0.0, local_comm - p.timeline.exposed_comm_s)) + " of it hidden behind the backward pass); " + every(skip) + " the " + nodes +
        " average the " + bytes + " of FP32 parameters (" + fmt_time(param(o, "global_allreduce_fp32_s")) + "), awaited " + fmt_sig(wait, 4) +
        (wait == 1 ? " step" : " steps") + " later";
    if (const StrategyPhase* cyc = phase(o, "cycling")) {
      const double waited = std::max(0.0, cyc->step_s - p.timeline.iteration_s);
      s += waited > 0 ? ", which leaves " + fmt_time(waited) + " per step waited for" : ", hidden behind the local steps in between";
    }
    if (const StrategyPhase* blk = phase(o, "blocking"); blk && blk->fraction_of_steps > 0)
      s += "; in the blocking " + pct0(blk->fraction_of_steps) + " of the steps a bf16 average (" + fmt_time(param(o, "global_allreduce_bf16_s")) +
           ") is waited for every step";
    s += ". On average " + fmt_time(p.comm_s) + " of communication per step, " + fmt_time(p.exposed_comm_s) + " of it exposed";
  } else if (o.name == "hierarchical") {
    s = "each of the " + buckets + " (" + bytes + " of gradients) is reduce-scattered among the " + fmt_sig(param(o, "gpus_per_node"), 4) +
        " GPUs of a node, all-reduced a share per rail among the " + nodes + " and all-gathered back, three " + p.algo + " collectives: " +
        fmt_time(p.comm_s) + " per step, " + hidden + " of it hidden behind the backward pass";
  } else if (o.name == "hierarchical-leader") {
    s = "each of the " + buckets + " (" + bytes + " of gradients) is reduced to one GPU per node, all-reduced among the " + nodes +
        "' leaders and broadcast back: " + fmt_time(p.comm_s) + " per step, " + hidden + " of it hidden behind the backward pass";
  } else if (o.name == "ps") {
    s = "each of the " + buckets + " (" + bytes + " of gradients) is pushed to and pulled back from " + fmt_sig(param(o, "servers"), 4) +
        " parameter server" + (param(o, "servers") == 1 ? "" : "s") + " through their NICs: " + fmt_time(p.comm_s) + " per step, " + hidden +
        " of it hidden behind the backward pass";
  } else if (o.name == "local-sgd") {
    const double tau = param(o, "tau", 1);
    s = "no gradient all-reduce; " + every(tau) + " the " + bytes + " of FP32 parameters are all-reduced and averaged (" +
        fmt_time(param(o, "parameter_allreduce_s")) + "), waited for: " + fmt_time(p.comm_s) + " per step on average";
  } else if (o.name == "easgd-sync") {
    const double tau = param(o, "tau", 1);
    s = every(tau) + " the workers' " + bytes + " of FP32 parameters are tree-reduced to the centre and broadcast back (" +
        fmt_time(param(o, "exchange_s")) + "), waited for: " + fmt_time(p.comm_s) + " per step on average";
  } else if (o.name == "easgd-async" || o.name == "measgd-async" || o.name == "hogwild-easgd") {
    const double tau = param(o, "tau", 1);
    s = every(tau) + " each of the " + std::to_string(p.gpus) + " workers swaps its " + bytes +
        " of FP32 parameters with the centre (" + fmt_time(param(o, "exchange_s")) + " per exchange), " +
        (o.name == "hogwild-easgd" ? "the exchanges sharing the master's NIC while the workers train on"
                                   : "the master serving one worker at a time") +
        ": " + fmt_time(p.comm_s) + " per step, " + fmt_time(p.exposed_comm_s) + " of it waited for";
  } else if (o.name == "grid") {
    s = "on a " + fmt_sig(param(o, "pr"), 4) + " x " + fmt_sig(param(o, "pc"), 4) + " grid (model x batch" + (param(o, "domain") ? ", domain-parallel" : "") +
        ") " + (param(o, "activation_comm_s") > 0 ? "the activations' collectives take " + fmt_time(param(o, "activation_comm_s")) + " and " : std::string()) +
        "the weight all-reduces take " + fmt_time(param(o, "weight_comm_s")) + " per step, none of it overlapped";
  } else {
    s = o.name + " communicates " + fmt_time(p.comm_s) + " per step, " + fmt_time(p.exposed_comm_s) + " of it exposed";
  }
  return s + "; " + limit_words(r);
}

// What the GPU waits for when communication is the bound, per strategy.
static std::string waited_for(const Prediction& p) {
  const std::string& n = p.strategy.name;
  if (data_parallel(p)) return "gradient all-reduces that the backward pass could not hide";
  if (n == "daso") return "node-local gradient all-reduces and global parameter averages that the local steps could not hide";
  if (n == "hierarchical" || n == "hierarchical-leader") return "the gradient buckets' collectives that the backward pass could not hide";
  if (n == "ps") return "gradient pushes to and pulls from the parameter servers that the backward pass could not hide";
  if (n == "local-sgd") return "parameter averages";
  if (n == "grid") return "activation and weight collectives, which are not overlapped";
  return "parameter exchanges with the centre";
}

// What improving a resource 2x means, for the verdict's words.
static std::string improvement_words(const std::string& resource) {
  if (resource == "compute") return "twice the FLOP/s";
  if (resource == "memory") return "twice the memory bandwidth";
  if (resource == "communication") return "twice the links' bandwidth at half their latency";
  return "half the launch cost";
}

std::string config_verdict(const StudyRow& r) {
  const Prediction& p = r.p;
  IterationShares s = iteration_shares(p);
  const double it = s.iteration_s;
  std::string v;
  auto part = [&](double x, const std::string& what) { return fmt_time(x) + " (" + pct0(x / it) + ") " + what; };
  if (s.bound == "compute")
    v = "Compute-bound: kernels limited by arithmetic take " + part(s.compute_bound_s, "of the " + fmt_time(it) + " iteration") + ".";
  else if (s.bound == "memory")
    v = "Memory-bound: kernels limited by GPU memory bandwidth take " + part(s.memory_bound_s, "of the " + fmt_time(it) + " iteration") + ".";
  else if (s.bound == "communication")
    v = "Communication-bound: the GPU waits " + part(s.exposed_comm_s, "of the " + fmt_time(it) + " iteration") + " for " + waited_for(p) + ".";
  else
    v = "Host-bound: the GPU waits " + part(s.host_idle_s, "of the " + fmt_time(it) + " iteration") +
        " for the host to issue kernels; at batch " + std::to_string(p.batch_per_gpu) +
        " per GPU the kernels are shorter than the framework's launch cost (a larger batch or CUDA graphs would help).";
  // The bound is the largest part whose resource, improved, shortens the iteration: say why a larger
  // part is not the bound.
  const std::tuple<double, const char*, const char*> parts[] = {{s.compute_bound_s, "compute", "Arithmetic-limited kernels"},
                                                                {s.memory_bound_s, "memory", "Memory-bound kernels"},
                                                                {s.exposed_comm_s, "communication", "Exposed communication"},
                                                                {s.host_idle_s, "host", "Host-bound idle time"}};
  double bound_part = 0;
  for (const auto& [x, name, words] : parts)
    if (s.bound == name) bound_part = x;
  for (const auto& [x, name, words] : parts)
    if (x > bound_part)
      v += " " + std::string(words) + " take longer (" + fmt_time(x) + "), but " + improvement_words(name) + " would shorten the iteration by less than " +
           pct(kBottleneckGain) + ": the iteration hardly waits on them.";
  v += " The rest: ";
  std::vector<std::string> rest;
  if (s.bound != "compute") rest.push_back(part(s.compute_bound_s, "arithmetic-limited kernels"));
  if (s.bound != "memory") rest.push_back(part(s.memory_bound_s, "memory-bound kernels"));
  if (s.bound != "communication") rest.push_back(part(s.exposed_comm_s, "exposed communication"));
  if (s.bound != "host") rest.push_back(part(s.host_idle_s, "host-bound idle"));
  for (size_t i = 0; i < rest.size(); ++i) v += (i ? (i + 1 == rest.size() ? " and " : ", ") : "") + rest[i];
  v += ".";
  if (p.gpus > 1) {
    if (data_parallel(p))
      v += " Communication: " + allreduce_words(r) + "; " + fmt_time(p.comm_s - p.exposed_comm_s > 0 ? p.comm_s - p.exposed_comm_s : 0) +
           " of it is hidden behind the backward pass.";
    else
      v += " Communication (" + p.strategy.name + "): " + strategy_comm_words(r) + ".";
    v += " Scaling efficiency " + pct(p.scaling_efficiency) + " (one GPU: " + fmt_time(p.single_gpu_iteration_s) + " per iteration)";
    for (double t : efficiency_thresholds())
      if (p.scaling_efficiency < t) {
        v += ", below " + pct0(t);
        break;
      }
    v += ".";
  }
  v += " Memory: " + memory_summary(r.memory) + ".";
  if (r.train) {
    v += " Training " + fmt_count(static_cast<double>(r.train->steps)) + " steps takes " + fmt_duration(r.train->time_s) + ", " +
         fmt_sig(r.train->gpu_hours, 4) + " GPU-hours";
    if (r.train->cost) v += ", costing " + fmt_sig(*r.train->cost, 4);
    v += ".";
  }
  return v;
}

std::string efficiency_reason(const StudyRow& r, const StudyRow* previous) {
  const Prediction& p = r.p;
  const double lost = p.iteration_s - p.single_gpu_iteration_s;
  std::string s;
  if (previous && previous->p.nodes == 1 && p.nodes > 1) s += "the job now spans " + std::to_string(p.nodes) + " nodes; ";
  if (lost <= 0) return s + "no time is lost to scaling";
  // Exposed communication can exceed the time lost: waiting for an all-reduce also hides host time.
  s += "the iteration takes " + fmt_time(lost) + " longer than on one GPU, and the GPU waits " + fmt_time(p.exposed_comm_s) + " on exposed communication";
  if (p.exposed_comm_s >= 0.5 * lost)
    s += ": " + (data_parallel(p) ? allreduce_words(r) + ", and the optimizer waits for the last bucket" : strategy_comm_words(r));
  else s += " and " + fmt_time(p.host_idle_s) + " on the host";
  return s;
}

std::vector<Series> sweep_series(const SweepResult& res) {
  std::vector<Series> out;
  std::map<std::tuple<std::string, std::string, int64_t>, size_t> index;
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const StudyRow& r = res.rows[i];
    auto key = std::make_tuple(r.p.model, r.what_if.label(), r.p.batch_per_gpu);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      out.push_back(Series{r.p.model, r.what_if.label(), r.p.batch_per_gpu, {}, {}});
    }
    out[it->second].rows.push_back(i);
  }
  for (Series& s : out) {
    std::stable_sort(s.rows.begin(), s.rows.end(), [&](size_t a, size_t b) { return res.rows[a].p.gpus < res.rows[b].p.gpus; });
    for (double t : efficiency_thresholds())
      for (size_t k = 0; k < s.rows.size(); ++k) {
        const StudyRow& r = res.rows[s.rows[k]];
        if (r.p.scaling_efficiency >= t) continue;
        EfficiencyDrop d;
        d.threshold = t;
        d.row = s.rows[k];
        if (k > 0) d.previous = s.rows[k - 1];
        d.reason = efficiency_reason(r, k > 0 ? &res.rows[s.rows[k - 1]] : nullptr);
        s.drops.push_back(d);
        break;
      }
  }
  return out;
}

SweepVerdict sweep_verdict(const SweepResult& res) {
  SweepVerdict v;
  v.series = sweep_series(res);
  const auto& rows = res.rows;
  if (rows.empty()) return v;

  // Summary: how the configurations split by bound, and how many do not fit.
  std::map<std::string, int> bounds;
  int no_fit = 0;
  std::set<std::string> models;
  for (const auto& r : rows) {
    bounds[iteration_shares(r.p).bound]++;
    no_fit += !r.memory.fits;
    models.insert(r.p.model);
  }
  std::string sum = std::to_string(rows.size()) + " configurations on " + res.cluster_name + " (" + res.gpu_name + ", " + res.precision + "): ";
  bool first = true;
  for (const char* b : {"compute", "memory", "communication", "host"})
    if (bounds[b]) {
      sum += (first ? "" : ", ") + std::to_string(bounds[b]) + " " + b + "-bound";
      first = false;
    }
  sum += "; " + (no_fit ? std::to_string(no_fit) + " do not fit in " + fmt_bytes(rows[0].memory.capacity_bytes) + " of GPU memory and are never recommended"
                        : std::string("all fit in GPU memory")) + ".";
  v.lines.push_back(sum);
  v.json["summary"] = {{"configurations", rows.size()}, {"compute_bound", bounds["compute"]}, {"memory_bound", bounds["memory"]},
                       {"communication_bound", bounds["communication"]}, {"host_bound", bounds["host"]}, {"do_not_fit", no_fit}};

  // Per series: where efficiency first falls below each threshold, and why.
  Json series = Json::array();
  for (const Series& s : v.series) {
    const StudyRow& last = rows[s.rows.back()];
    std::string line = series_name(last) + ": ";
    Json js = {{"model", s.model}, {"batch_per_gpu", s.batch_per_gpu}, {"what_if", s.what_if}, {"max_gpus", last.p.gpus},
               {"efficiency_at_max_gpus", last.p.scaling_efficiency}};
    Json drops = Json::array();
    if (s.drops.empty()) {
      line += "scaling efficiency stays at or above " + pct0(efficiency_thresholds().front()) + " up to " + gpus_text(last.p) + " (" +
              pct(last.p.scaling_efficiency) + " there).";
    }
    for (size_t k = 0; k < s.drops.size(); ++k) {
      const EfficiencyDrop& d = s.drops[k];
      const StudyRow& r = rows[d.row];
      Json jd = {{"threshold", d.threshold}, {"gpus", r.p.gpus}, {"nodes", r.p.nodes}, {"efficiency", r.p.scaling_efficiency}, {"reason", d.reason},
                 {"exposed_comm_s", r.p.exposed_comm_s}, {"comm_s", r.p.comm_s}, {"grad_bytes", r.p.grad_bytes}, {"link", r.link},
                 {"algo", r.p.algo}};
      if (d.previous) {
        jd["previous_gpus"] = rows[*d.previous].p.gpus;
        jd["previous_efficiency"] = rows[*d.previous].p.scaling_efficiency;
      }
      drops.push_back(jd);
      // Thresholds crossed at the same configuration are told once.
      if (k > 0 && s.drops[k - 1].row == d.row) continue;
      std::string below = pct0(d.threshold);
      for (size_t j = k + 1; j < s.drops.size() && s.drops[j].row == d.row; ++j) below += " and " + pct0(s.drops[j].threshold);
      line += std::string(k ? " " : "") + (k ? "Below " : "scaling efficiency first drops below ") + below + " at " + gpus_text(r.p) + ": " +
              pct(r.p.scaling_efficiency);
      if (d.previous) line += " (" + pct(rows[*d.previous].p.scaling_efficiency) + " at " + std::to_string(rows[*d.previous].p.gpus) + ")";
      line += "; " + d.reason + ".";
    }
    if (s.drops.size() == 1) line += " It stays above " + pct0(efficiency_thresholds().back()) + " up to " + gpus_text(last.p) + " (" + pct(last.p.scaling_efficiency) + ").";
    js["below"] = drops;
    series.push_back(js);
    v.lines.push_back(line);
  }
  v.json["series"] = series;

  // What-ifs: the throughput each one buys over the configuration as specified, at the largest GPU
  // count, across batch sizes.
  Json effects = Json::array();
  std::map<std::tuple<std::string, int64_t, int64_t>, const StudyRow*> baseline;
  for (const auto& r : rows)
    if (r.what_if.is_baseline()) baseline[{r.p.model, r.p.batch_per_gpu, r.p.gpus}] = &r;
  if (!baseline.empty()) {
    std::map<std::pair<std::string, std::string>, std::pair<double, double>> range;  // (model, what-if) -> min, max gain
    std::map<std::pair<std::string, std::string>, int64_t> at_gpus;
    std::vector<std::pair<std::string, std::string>> order;
    int64_t max_gpus = 0;
    for (const auto& r : rows) max_gpus = std::max<int64_t>(max_gpus, r.p.gpus);
    for (const auto& r : rows) {
      if (r.what_if.is_baseline() || r.p.gpus != max_gpus) continue;
      auto b = baseline.find({r.p.model, r.p.batch_per_gpu, r.p.gpus});
      if (b == baseline.end()) continue;
      double gain = r.p.throughput_samples_per_s / b->second->p.throughput_samples_per_s - 1;
      auto key = std::make_pair(r.p.model, r.what_if.label());
      auto it = range.find(key);
      if (it == range.end()) {
        range[key] = {gain, gain};
        order.push_back(key);
      } else {
        it->second.first = std::min(it->second.first, gain);
        it->second.second = std::max(it->second.second, gain);
      }
      at_gpus[key] = r.p.gpus;
    }
    for (const auto& key : order) {
      auto [lo, hi] = range[key];
      // Rounded first, so that a loss too small to show reads +0%, not -0%.
      auto signed_pct = [](double x) {
        double r = std::round(100 * x) / 100;
        return (r >= 0 ? "+" : "") + pct0(r == 0 ? 0.0 : r);
      };
      std::string span = signed_pct(lo) + (std::fabs(hi - lo) >= 0.005 ? " to " + signed_pct(hi) : "");
      v.lines.push_back("What if " + key.second + ": " + key.first + " " + span + " throughput at " + std::to_string(at_gpus[key]) +
                        " GPUs against the cluster as specified (over the batch sizes swept).");
      effects.push_back({{"model", key.first}, {"what_if", key.second}, {"gpus", at_gpus[key]}, {"throughput_gain_min", lo}, {"throughput_gain_max", hi}});
    }
  }
  v.json["what_if_effects"] = effects;

  // Recommendations: per model and what-if, the fastest configuration that fits, and the largest
  // job that keeps 90% efficiency. Configurations that do not fit are never named here.
  Json recs = Json::array();
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, std::vector<const StudyRow*>> by_key;
  for (const auto& r : rows) {
    auto key = std::make_pair(r.p.model, r.what_if.label());
    if (!by_key.count(key)) keys.push_back(key);
    by_key[key].push_back(&r);
  }
  for (const auto& key : keys) {
    const StudyRow* fastest = nullptr;
    const StudyRow* efficient = nullptr;
    std::set<int64_t> too_big;
    for (const StudyRow* r : by_key[key]) {
      if (!r->memory.fits) {
        too_big.insert(r->p.batch_per_gpu);
        continue;
      }
      if (!fastest || r->p.throughput_samples_per_s > fastest->p.throughput_samples_per_s) fastest = r;
      if (r->p.scaling_efficiency >= efficiency_thresholds().front() &&
          (!efficient || r->p.gpus > efficient->p.gpus ||
           (r->p.gpus == efficient->p.gpus && r->p.throughput_samples_per_s > efficient->p.throughput_samples_per_s)))
        efficient = r;
    }
    std::string who = key.first + (key.second == "as specified" ? "" : " (" + key.second + ")");
    std::string line = who + ": ";
    Json jr = {{"model", key.first}, {"what_if", key.second}};
    if (!fastest) {
      line += "no configuration swept fits in GPU memory.";
    } else {
      line += "fastest that fits: batch " + std::to_string(fastest->p.batch_per_gpu) + " per GPU on " + gpus_text(fastest->p) + ", " +
              rate(fastest->p.throughput_samples_per_s) + " samples/s at " + pct(fastest->p.scaling_efficiency) + " efficiency";
      if (fastest->train) {
        line += ", trains in " + fmt_duration(fastest->train->time_s) + " (" + fmt_sig(fastest->train->gpu_hours, 4) + " GPU-hours";
        if (fastest->train->cost) line += ", cost " + fmt_sig(*fastest->train->cost, 4);
        line += ")";
      }
      line += ".";
      jr["fastest"] = {{"batch_per_gpu", fastest->p.batch_per_gpu}, {"gpus", fastest->p.gpus}, {"throughput_samples_per_s", fastest->p.throughput_samples_per_s},
                       {"scaling_efficiency", fastest->p.scaling_efficiency}};
      if (efficient) {
        line += " Largest job at 90% efficiency or better: batch " + std::to_string(efficient->p.batch_per_gpu) + " on " + gpus_text(efficient->p) + " (" +
                rate(efficient->p.throughput_samples_per_s) + " samples/s).";
        jr["largest_efficient"] = {{"batch_per_gpu", efficient->p.batch_per_gpu}, {"gpus", efficient->p.gpus},
                                   {"throughput_samples_per_s", efficient->p.throughput_samples_per_s}};
      }
    }
    if (!too_big.empty()) {
      std::string list;
      for (int64_t b : too_big) list += (list.empty() ? "" : ", ") + std::to_string(b);
      line += " Does not fit: batch " + list + " per GPU.";
      jr["do_not_fit_batch_per_gpu"] = too_big;
    }
    v.lines.push_back(line);
    recs.push_back(jr);
  }
  v.json["recommendations"] = recs;
  v.json["text"] = v.lines;
  return v;
}

}  // namespace dtsim
