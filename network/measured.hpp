#pragma once
// Measured collective timings, from the two formats people have: the validation harness's JSON
// (validation/harness/collective.cpp: {"op", "gpus", "rows": [{"bytes", "time_s", ...}],
// "provenance"}) and nccl-tests' text output (all_reduce_perf and friends). Bad input is an
// InputError naming the file, the line or JSON path, and the rule.
#include <optional>
#include <string>
#include <vector>

#include "network/collective.hpp"

namespace dtsim {

struct MeasuredPoint {
  CollectiveOp op = CollectiveOp::AllReduce;
  double bytes = 0;  // nccl-tests' size convention
  int gpus = 0;
  int nodes = 1;
  double time_s = 0;  // median (harness) or nccl-tests' out-of-place time
  std::string where;  // file and line or JSON path, for reports
};

struct MeasuredSet {
  std::vector<MeasuredPoint> points;
  std::vector<std::string> files;
  std::string gpu;  // as the measurement recorded it, when it did
};

// `path`: a harness JSON file, a directory of them (provenance.json and files without rows are
// skipped), or an nccl-tests log. For nccl-tests, `op` and `gpus` override what the log says (an
// old log may not name its collective).
MeasuredSet read_measured(const std::string& path, std::optional<CollectiveOp> op = std::nullopt, std::optional<int> gpus = std::nullopt);
MeasuredSet read_harness_json(const std::string& path);
MeasuredSet read_nccl_tests(const std::string& path, std::optional<CollectiveOp> op = std::nullopt, std::optional<int> gpus = std::nullopt);

}  // namespace dtsim
