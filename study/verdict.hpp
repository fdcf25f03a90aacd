#pragma once
// Verdicts in plain words, built from the same numbers as the breakdown so that they cannot
// disagree with it: per configuration, what bounds the iteration (compute, memory bandwidth,
// communication or the host) with its share; per sweep, where scaling efficiency first drops below
// 90% and 75% and why (which collective, how many bytes, over which link), the what-ifs' effect, and
// the fastest configurations that fit in memory.
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "study/study.hpp"

namespace dtsim {

// The four parts the iteration splits into (they sum to it) and the bottleneck among them.
struct IterationShares {
  double compute_bound_s = 0, memory_bound_s = 0, exposed_comm_s = 0, host_idle_s = 0, iteration_s = 0;
  std::string bound;  // compute, memory, communication, host: Prediction::bottleneck (sim/predict.hpp bottleneck_rule)
};
IterationShares iteration_shares(const Prediction& p);

// "compute-bound: 62% arithmetic-limited kernels, 23% memory-bound kernels, 13% exposed
// communication, 2% host-bound idle".
std::string short_verdict(const StudyRow& r);
// A paragraph: the bound with its numbers, the communication, scaling and memory.
std::string config_verdict(const StudyRow& r);

// Thresholds the sweep verdict reports, as fractions of one GPU's throughput per GPU.
inline const std::vector<double>& efficiency_thresholds() {
  static const std::vector<double> t = {0.90, 0.75};
  return t;
}

struct EfficiencyDrop {
  double threshold = 0;
  size_t row = 0;                  // index into SweepResult::rows where it first falls below
  std::optional<size_t> previous;  // the row before it in its series
  std::string reason;
};

// Rows that differ only in GPU count, in ascending GPU count.
struct Series {
  std::string model, what_if;
  int64_t batch_per_gpu = 0;
  std::vector<size_t> rows;
  std::vector<EfficiencyDrop> drops;  // one per threshold crossed
};
std::vector<Series> sweep_series(const SweepResult& res);

// Why a row's efficiency is what it is, in words.
std::string efficiency_reason(const StudyRow& r, const StudyRow* previous);

struct SweepVerdict {
  std::vector<Series> series;
  std::vector<std::string> lines;  // the text, one paragraph per line
  Json json;
};
SweepVerdict sweep_verdict(const SweepResult& res);

}  // namespace dtsim
