#pragma once
// What the verdicts find, from the same numbers as the breakdown so that they cannot disagree with
// it: per configuration, what bounds the iteration (compute, memory bandwidth, communication or the
// host) and which larger parts it passes over; per sweep, how the configurations split by bound,
// where scaling efficiency first drops below 90% and 75%, the what-ifs' effect, and the fastest
// configurations that fit in memory. report/verdict_report.hpp puts them in words and in JSON.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "study/study.hpp"

namespace dtsim {

// The four parts the iteration splits into (they sum to it) and the bottleneck among them.
struct IterationShares {
  double compute_bound_s = 0, memory_bound_s = 0, exposed_comm_s = 0, host_idle_s = 0, iteration_s = 0;
  std::string bound;  // compute, memory, communication, host: Prediction::bottleneck (sim/predict.hpp bottleneck_rule)
};
IterationShares iteration_shares(const Prediction& p);

// The resources in the order the parts are told: compute, memory, communication, host.
constexpr Resource kIterationParts[] = {Resource::Compute, Resource::Memory, Resource::Communication, Resource::Host};
// The part of the iteration a resource accounts for.
double part_s(const IterationShares& s, Resource r);
// The parts that take longer than the bound's, in kIterationParts' order. The bound is the largest
// part whose resource, improved 2x, shortens the iteration by at least kBottleneckGain: a larger
// part is one the iteration hardly waits on.
std::vector<Resource> parts_passed_over(const IterationShares& s);

// Thresholds the sweep verdict reports, as fractions of one GPU's throughput per GPU.
inline const std::vector<double>& efficiency_thresholds() {
  static const std::vector<double> t = {0.90, 0.75};
  return t;
}
// The first of efficiency_thresholds() that `efficiency` is below, if any.
std::optional<double> threshold_below(double efficiency);

struct EfficiencyDrop {
  double threshold = 0;
  size_t row = 0;                  // index into SweepResult::rows where it first falls below
  std::optional<size_t> previous;  // the row before it in its series
};

// Rows that differ only in GPU count, in ascending GPU count.
struct Series {
  std::string model, what_if;
  int64_t batch_per_gpu = 0;
  std::vector<size_t> rows;
  std::vector<EfficiencyDrop> drops;  // one per threshold crossed
};
std::vector<Series> sweep_series(const SweepResult& res);

// How a sweep's configurations split by bound, and how many do not fit.
struct SweepSummary {
  size_t configurations = 0;
  std::map<std::string, int> by_bound;  // IterationShares::bound -> configurations
  int do_not_fit = 0;
  double capacity_bytes = 0;  // the first configuration's GPU memory
  int bound_count(const std::string& bound) const;
};

// What a what-if buys over the cluster as specified: the throughput gain, across the batch sizes
// swept, at the largest GPU count.
struct WhatIfEffect {
  std::string model, what_if;
  int64_t gpus = 0;
  double gain_min = 0, gain_max = 0;  // fractions: 0.55 is +55% throughput
};

// Per model and what-if: the fastest configuration that fits, the largest job that keeps the first
// efficiency threshold, and the batch sizes that do not fit. Configurations that do not fit are
// never recommended.
struct Recommendation {
  std::string model, what_if;
  std::optional<size_t> fastest, largest_efficient;  // indices into SweepResult::rows
  std::set<int64_t> do_not_fit_batch_per_gpu;
};

struct SweepVerdict {
  SweepSummary summary;
  std::vector<Series> series;
  std::vector<WhatIfEffect> what_if_effects;
  std::vector<Recommendation> recommendations;
};
SweepVerdict sweep_verdict(const SweepResult& res);

}  // namespace dtsim
