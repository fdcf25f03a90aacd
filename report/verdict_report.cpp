#include "report/verdict_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
static std::string improvement_words(Resource r) {
  switch (r) {
    case Resource::Compute: return "twice the FLOP/s";
    case Resource::Memory: return "twice the memory bandwidth";
    case Resource::Communication: return "twice the links' bandwidth at half their latency";
    case Resource::Host: break;
  }
  return "half the launch cost";
}

// The words for a part of the iteration: at the start of a sentence, and in the list of the rest.
static const char* part_title(Resource r) {
  switch (r) {
    case Resource::Compute: return "Arithmetic-limited kernels";
    case Resource::Memory: return "Memory-bound kernels";
    case Resource::Communication: return "Exposed communication";
    case Resource::Host: break;
  }
  return "Host-bound idle time";
}
static const char* part_words(Resource r) {
  switch (r) {
    case Resource::Compute: return "arithmetic-limited kernels";
    case Resource::Memory: return "memory-bound kernels";
    case Resource::Communication: return "exposed communication";
    case Resource::Host: break;
  }
  return "host-bound idle";
}

// "12.300 ms (45%) what": a part's time and its share of the iteration.
static std::string part_share(double part_s, double iteration_s, const std::string& what) {
  return fmt_time(part_s) + " (" + pct0(part_s / iteration_s) + ") " + what;
}

// The first sentence: the bound, its part of the iteration and what it means.
static std::string bound_sentence(const Prediction& p, const IterationShares& s) {
  const double it = s.iteration_s;
  const std::string of_it = "of the " + fmt_time(it) + " iteration";
  if (s.bound == "compute") return "Compute-bound: kernels limited by arithmetic take " + part_share(s.compute_bound_s, it, of_it) + ".";
  if (s.bound == "memory") return "Memory-bound: kernels limited by GPU memory bandwidth take " + part_share(s.memory_bound_s, it, of_it) + ".";
  if (s.bound == "communication")
    return "Communication-bound: the GPU waits " + part_share(s.exposed_comm_s, it, of_it) + " for " + waited_for(p) + ".";
  return "Host-bound: the GPU waits " + part_share(s.host_idle_s, it, of_it) + " for the host to issue kernels; at batch " +
         std::to_string(p.batch_per_gpu) +
         " per GPU the kernels are shorter than the framework's launch cost (a larger batch or CUDA graphs would help).";
}

// Why each part larger than the bound's is not the bound, then the parts other than the bound.
static std::string other_parts_sentences(const IterationShares& s) {
  std::string v;
  for (Resource r : parts_passed_over(s))
    v += " " + std::string(part_title(r)) + " take longer (" + fmt_time(part_s(s, r)) + "), but " + improvement_words(r) +
         " would shorten the iteration by less than " + pct(kBottleneckGain) + ": the iteration hardly waits on them.";
  v += " The rest: ";
  std::vector<std::string> rest;
  for (Resource r : kIterationParts)
    if (s.bound != resource_name(r)) rest.push_back(part_share(part_s(s, r), s.iteration_s, part_words(r)));
  for (size_t i = 0; i < rest.size(); ++i) v += (i ? (i + 1 == rest.size() ? " and " : ", ") : "") + rest[i];
  return v + ".";
}

// Across GPUs: the communication, how much of it is hidden, and the scaling efficiency.
static std::string scaling_sentences(const StudyRow& r) {
  const Prediction& p = r.p;
  std::string v;
  if (data_parallel(p))
    v += " Communication: " + allreduce_words(r) + "; " + fmt_time(p.comm_s - p.exposed_comm_s > 0 ? p.comm_s - p.exposed_comm_s : 0) +
         " of it is hidden behind the backward pass.";
  else
    v += " Communication (" + p.strategy.name + "): " + strategy_comm_words(r) + ".";
  v += " Scaling efficiency " + pct(p.scaling_efficiency) + " (one GPU: " + fmt_time(p.single_gpu_iteration_s) + " per iteration)";
  if (const auto below = threshold_below(p.scaling_efficiency)) v += ", below " + pct0(*below);
  return v + ".";
}

std::string config_verdict(const StudyRow& r) {
  const Prediction& p = r.p;
  const IterationShares s = iteration_shares(p);
  std::string v = bound_sentence(p, s) + other_parts_sentences(s);
  if (p.gpus > 1) v += scaling_sentences(r);
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

std::string drop_reason(const SweepResult& res, const EfficiencyDrop& d) {
  return efficiency_reason(res.rows[d.row], d.previous ? &res.rows[*d.previous] : nullptr);
}

namespace {

// "120 configurations on NAME (GPU, fp32): 80 compute-bound, 40 communication-bound; all fit in GPU memory."
std::string summary_line(const SweepResult& res, const SweepSummary& sum) {
  std::string line = std::to_string(sum.configurations) + " configurations on " + res.cluster_name + " (" + res.gpu_name + ", " + res.precision + "): ";
  bool first = true;
  for (const char* b : {"compute", "memory", "communication", "host"})
    if (sum.bound_count(b)) {
      line += (first ? "" : ", ") + std::to_string(sum.bound_count(b)) + " " + b + "-bound";
      first = false;
    }
  line += "; " + (sum.do_not_fit ? std::to_string(sum.do_not_fit) + " do not fit in " + fmt_bytes(sum.capacity_bytes) +
                                       " of GPU memory and are never recommended"
                                 : std::string("all fit in GPU memory")) +
          ".";
  return line;
}

Json summary_json(const SweepSummary& sum) {
  return {{"configurations", sum.configurations}, {"compute_bound", sum.bound_count("compute")}, {"memory_bound", sum.bound_count("memory")},
          {"communication_bound", sum.bound_count("communication")}, {"host_bound", sum.bound_count("host")}, {"do_not_fit", sum.do_not_fit}};
}

// Per series: where efficiency first falls below each threshold, and why.
std::string series_line(const SweepResult& res, const Series& s) {
  const auto& rows = res.rows;
  const StudyRow& last = rows[s.rows.back()];
  std::string line = series_name(last) + ": ";
  if (s.drops.empty()) {
    line += "scaling efficiency stays at or above " + pct0(efficiency_thresholds().front()) + " up to " + gpus_text(last.p) + " (" +
            pct(last.p.scaling_efficiency) + " there).";
  }
  for (size_t k = 0; k < s.drops.size(); ++k) {
    const EfficiencyDrop& d = s.drops[k];
    const StudyRow& r = rows[d.row];
    // Thresholds crossed at the same configuration are told once.
    if (k > 0 && s.drops[k - 1].row == d.row) continue;
    std::string below = pct0(d.threshold);
    for (size_t j = k + 1; j < s.drops.size() && s.drops[j].row == d.row; ++j) below += " and " + pct0(s.drops[j].threshold);
    line += std::string(k ? " " : "") + (k ? "Below " : "scaling efficiency first drops below ") + below + " at " + gpus_text(r.p) + ": " +
            pct(r.p.scaling_efficiency);
    if (d.previous) line += " (" + pct(rows[*d.previous].p.scaling_efficiency) + " at " + std::to_string(rows[*d.previous].p.gpus) + ")";
    line += "; " + drop_reason(res, d) + ".";
  }
  if (s.drops.size() == 1)
    line += " It stays above " + pct0(efficiency_thresholds().back()) + " up to " + gpus_text(last.p) + " (" + pct(last.p.scaling_efficiency) + ").";
  return line;
}

Json series_json(const SweepResult& res, const Series& s) {
  const auto& rows = res.rows;
  const StudyRow& last = rows[s.rows.back()];
  Json js = {{"model", s.model}, {"batch_per_gpu", s.batch_per_gpu}, {"what_if", s.what_if}, {"max_gpus", last.p.gpus},
             {"efficiency_at_max_gpus", last.p.scaling_efficiency}};
  Json drops = Json::array();
  for (const EfficiencyDrop& d : s.drops) {
    const StudyRow& r = rows[d.row];
    Json jd = {{"threshold", d.threshold}, {"gpus", r.p.gpus}, {"nodes", r.p.nodes}, {"efficiency", r.p.scaling_efficiency}, {"reason", drop_reason(res, d)},
               {"exposed_comm_s", r.p.exposed_comm_s}, {"comm_s", r.p.comm_s}, {"grad_bytes", r.p.grad_bytes}, {"link", r.link},
               {"algo", r.p.algo}};
    if (d.previous) {
      jd["previous_gpus"] = rows[*d.previous].p.gpus;
      jd["previous_efficiency"] = rows[*d.previous].p.scaling_efficiency;
    }
    drops.push_back(jd);
  }
  js["below"] = drops;
  return js;
}

std::string what_if_line(const WhatIfEffect& e) {
  // Rounded first, so that a loss too small to show reads +0%, not -0%.
  auto signed_pct = [](double x) {
    double r = std::round(100 * x) / 100;
    return (r >= 0 ? "+" : "") + pct0(r == 0 ? 0.0 : r);
  };
  const std::string span = signed_pct(e.gain_min) + (std::fabs(e.gain_max - e.gain_min) >= 0.005 ? " to " + signed_pct(e.gain_max) : "");
  return "What if " + e.what_if + ": " + e.model + " " + span + " throughput at " + std::to_string(e.gpus) +
         " GPUs against the cluster as specified (over the batch sizes swept).";
}

Json what_if_json(const WhatIfEffect& e) {
  return {{"model", e.model}, {"what_if", e.what_if}, {"gpus", e.gpus}, {"throughput_gain_min", e.gain_min}, {"throughput_gain_max", e.gain_max}};
}

std::string recommendation_line(const SweepResult& res, const Recommendation& rec) {
  std::string line = rec.model + (rec.what_if == "as specified" ? "" : " (" + rec.what_if + ")") + ": ";
  if (!rec.fastest) {
    line += "no configuration swept fits in GPU memory.";
  } else {
    const StudyRow& fastest = res.rows[*rec.fastest];
    line += "fastest that fits: batch " + std::to_string(fastest.p.batch_per_gpu) + " per GPU on " + gpus_text(fastest.p) + ", " +
            rate(fastest.p.throughput_samples_per_s) + " samples/s at " + pct(fastest.p.scaling_efficiency) + " efficiency";
    if (fastest.train) {
      line += ", trains in " + fmt_duration(fastest.train->time_s) + " (" + fmt_sig(fastest.train->gpu_hours, 4) + " GPU-hours";
      if (fastest.train->cost) line += ", cost " + fmt_sig(*fastest.train->cost, 4);
      line += ")";
    }
    line += ".";
    if (rec.largest_efficient) {
      const StudyRow& efficient = res.rows[*rec.largest_efficient];
      line += " Largest job at 90% efficiency or better: batch " + std::to_string(efficient.p.batch_per_gpu) + " on " + gpus_text(efficient.p) + " (" +
              rate(efficient.p.throughput_samples_per_s) + " samples/s).";
    }
  }
  if (!rec.do_not_fit_batch_per_gpu.empty()) {
    std::string list;
    for (int64_t b : rec.do_not_fit_batch_per_gpu) list += (list.empty() ? "" : ", ") + std::to_string(b);
    line += " Does not fit: batch " + list + " per GPU.";
  }
  return line;
}

Json recommendation_json(const SweepResult& res, const Recommendation& rec) {
  Json jr = {{"model", rec.model}, {"what_if", rec.what_if}};
  if (rec.fastest) {
    const Prediction& f = res.rows[*rec.fastest].p;
    jr["fastest"] = {{"batch_per_gpu", f.batch_per_gpu}, {"gpus", f.gpus}, {"throughput_samples_per_s", f.throughput_samples_per_s},
                     {"scaling_efficiency", f.scaling_efficiency}};
    if (rec.largest_efficient) {
      const Prediction& e = res.rows[*rec.largest_efficient].p;
      jr["largest_efficient"] = {{"batch_per_gpu", e.batch_per_gpu}, {"gpus", e.gpus}, {"throughput_samples_per_s", e.throughput_samples_per_s}};
    }
  }
  if (!rec.do_not_fit_batch_per_gpu.empty()) jr["do_not_fit_batch_per_gpu"] = rec.do_not_fit_batch_per_gpu;
  return jr;
}

}  // namespace

std::vector<std::string> sweep_verdict_lines(const SweepResult& res, const SweepVerdict& v) {
  std::vector<std::string> lines;
  if (res.rows.empty()) return lines;
  lines.push_back(summary_line(res, v.summary));
  for (const Series& s : v.series) lines.push_back(series_line(res, s));
  for (const WhatIfEffect& e : v.what_if_effects) lines.push_back(what_if_line(e));
  for (const Recommendation& rec : v.recommendations) lines.push_back(recommendation_line(res, rec));
  return lines;
}

Json sweep_verdict_json(const SweepResult& res, const SweepVerdict& v) {
  Json j;
  if (res.rows.empty()) return j;
  j["summary"] = summary_json(v.summary);
  Json series = Json::array(), effects = Json::array(), recs = Json::array();
  for (const Series& s : v.series) series.push_back(series_json(res, s));
  for (const WhatIfEffect& e : v.what_if_effects) effects.push_back(what_if_json(e));
  for (const Recommendation& rec : v.recommendations) recs.push_back(recommendation_json(res, rec));
  j["series"] = series;
  j["what_if_effects"] = effects;
  j["recommendations"] = recs;
  j["text"] = sweep_verdict_lines(res, v);
  return j;
}

}  // namespace dtsim
