#pragma once
// Scaling studies: one row per (model, batch per GPU, GPU count, hardware what-if), each with its
// prediction, memory fit and, when asked, time and cost to train; and the sweep that makes them,
// from command-line lists or a sweep file (configs/sweeps/, format in docs/scaling-study.md).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workload/graph.hpp"
#include "sim/memory.hpp"
#include "sim/predict.hpp"
#include "sim/whatif.hpp"

namespace dtsim {

// Bounds on what time to train may ask for, the same for predict, sweep (flags and sweep files) and
// plan: beyond them the question is not a training run (2^50 samples keeps every step count exact).
constexpr int64_t kMaxDatasetSize = int64_t(1) << 50;
constexpr double kMaxEpochs = 1e6;
constexpr double kMaxPrice = 1e9;
// Each value in its bounds, or InputError naming `where` with the rule: dataset size in [1, 2^50],
// epochs in (0, 1e6], price in [0, 1e9].
int64_t checked_dataset_size(const std::string& where, int64_t v);
double checked_epochs(const std::string& where, double v);
double checked_price(const std::string& where, double v);

// How much training: samples per epoch and epochs; the price of a GPU-hour in any currency.
struct TrainGoal {
  std::optional<int64_t> dataset_size;
  std::optional<double> epochs;
  std::optional<double> price_per_gpu_hour;
  bool active() const { return dataset_size.has_value(); }
  // Both or neither of dataset size and epochs; a price only with them. InputError naming `where`.
  void check(const std::string& where_dataset, const std::string& where_price) const;
};

struct TrainEstimate {
  int64_t steps_per_epoch = 0;  // ceil(dataset / global batch): the last batch is smaller, not dropped
  double steps = 0;             // whole steps: ceil(steps_per_epoch x epochs), at least 1
  double time_s = 0;
  double gpu_hours = 0;
  std::optional<double> cost;
};
TrainEstimate train_estimate(const Prediction& p, const TrainGoal& goal);
// The same from the numbers it reads (dtsim plan prices a million configurations without a Prediction each).
TrainEstimate train_estimate(int64_t gpus, int64_t batch_per_gpu, double iteration_s, const TrainGoal& goal);

struct StudyRow {
  Prediction p;  // without per-layer detail in sweeps
  WhatIf what_if;
  MemoryFit memory;
  std::optional<TrainEstimate> train;
  // The link that limits the all-reduce, in words with its rate, and that rate.
  std::string link;
  double link_Bps = 0;
};

// Predicts one configuration on `c` (a what-if already applied) and fills the row; `pricing` is
// what the rows of one study share (sim/pricing.hpp).
StudyRow study_row(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, const WhatIf& w, const TrainGoal& goal,
                   bool keep_detail, StepPricing& pricing);
StudyRow study_row(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, const WhatIf& w, const TrainGoal& goal,
                   bool keep_detail);

// The run's settings (RunSpec): a sweep file gives the cluster, framework, precision, algo and
// overlap; the compute model, the strategy and its parameters and allow_unknown_ops come from the
// command line only.
struct SweepSpec : RunSpec {
  std::string name;  // the file's, or "sweep"
  std::vector<std::string> models;
  std::optional<int64_t> cluster_nodes;  // raise (or lower) the cluster's node count for the study
  std::optional<double> bucket_mb;       // DDP's bucket size (--bucket-mb; not a sweep-file field)
  std::vector<int64_t> batches;
  std::vector<int64_t> gpus;  // GPU counts; when `by_nodes`, node counts
  bool by_nodes = false;
  std::string gpus_where = "--gpus";  // names the GPU list in errors (a flag, or file: JSON path)
  std::vector<WhatIf> what_ifs{WhatIf{}};
  TrainGoal train;
};

// Reads a sweep file strictly: unknown fields, wrong types and bad ranges are InputErrors naming the
// file, the JSON path and the rule.
SweepSpec parse_sweep(const Json& doc, const std::string& what);
SweepSpec load_sweep(const std::string& path);

// The cross product of the named axes' values over `base` (one WhatIf per combination, axes in
// what_if_axes() order so that rows come out in a stable order).
std::vector<WhatIf> what_if_grid(const std::vector<std::pair<std::string, std::vector<double>>>& axes, const WhatIf& base = {});

struct SweepResult {
  std::string cluster_name, gpu_name, precision, compute_model;
  StepMode mode;  // memory format, optimizer, execution of every row
  std::vector<StudyRow> rows;  // models x what-ifs x batches x GPU counts, in that nesting
  // What the model importer assumed (Graph::notes of every model, each distinct note once, in order).
  std::vector<std::string> notes;
};

// `tick` is called once per configuration (progress bars). Every model is loaded before any prediction;
// an ONNX model is imported once per batch size (shape inference runs at the per-GPU batch, and an
// export that fixed its batch is an InputError at any other).
SweepResult run_sweep(const SweepSpec& s, const std::function<void()>& tick = {});
size_t sweep_size(const SweepSpec& s);

}  // namespace dtsim
