// The Chrome/Perfetto trace: well-formed, its events nest, and it tells the same story as the breakdown.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include "helpers.hpp"
#include "report/trace.hpp"
#include "study_cli.hpp"

using namespace dtsim;

// Complete events on one track must nest: each starts after and ends before the one it lies in, or
// starts after the previous one ended. Times are microseconds; allow rounding.
static void check_nesting(const Json& events) {
  std::map<int, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : events) {
    REQUIRE(e.contains("ph"));
    if (e["ph"] != "X") continue;
    for (const char* f : {"name", "ts", "dur", "pid", "tid"}) {
      INFO(f);
      REQUIRE(e.contains(f));
    }
    CHECK(e["dur"].get<double>() >= 0);
    tracks[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  const double eps = 1e-6;
  for (auto& [tid, spans] : tracks) {
    INFO("track " << tid);
    // Parents first: earlier start, then longer.
    std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<double> open_ends;
    for (const auto& [start, end] : spans) {
      while (!open_ends.empty() && open_ends.back() <= start + eps) open_ends.pop_back();
      if (!open_ends.empty()) CHECK(end <= open_ends.back() + eps);  // inside its parent
      open_ends.push_back(end);
    }
  }
}

TEST_CASE("trace: tracks, nesting, and the buckets of the prediction") {
  TrainingConfig cfg;
  cfg.gpus = 16;
  cfg.batch_per_gpu = 32;
  cfg.record_kernels = true;
  ClusterSpec c = load_cluster("h100-sxm");
  Prediction p = predict(load_model("resnet50"), c, cfg);
  Json t = chrome_trace(p, c.framework.iteration_overhead_s);
  REQUIRE(t["traceEvents"].is_array());
  const Json& ev = t["traceEvents"];
  check_nesting(ev);

  std::map<int, int> per_track;
  std::map<std::string, int> thread_names;
  double kernel_us = 0, iteration_us = 0;
  for (const auto& e : ev) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["args"]["name"]] = e["tid"];
    if (e["ph"] != "X") continue;
    per_track[e["tid"].get<int>()]++;
    if (e["cat"] == "kernel") kernel_us += e["dur"].get<double>();
    if (e["name"] == "iteration") iteration_us = e["dur"];
  }
  CHECK(thread_names.size() == 4);
  CHECK(thread_names.count("compute stream"));
  CHECK(thread_names.count("host (kernel launches)"));
  const size_t kernels = p.timeline.kernels.size();
  REQUIRE(kernels > 100);
  CHECK(per_track[kTraceHost] == static_cast<int>(kernels) + 1);   // one launch each, and the iteration's own cost
  CHECK(per_track[kTraceComm] == static_cast<int>(p.timeline.buckets.size()));
  CHECK(per_track[kTraceBuckets] == static_cast<int>(p.timeline.buckets.size()));
  CHECK(kernel_us == Approx(p.compute_s * 1e6).epsilon(1e-9));
  CHECK(iteration_us == Approx(p.iteration_s * 1e6));
}

TEST_CASE("cli: predict --trace writes a trace that parses, only on success") {
  study_test::TempDir tmp("trace");
  const std::string file = tmp.path + "/t.json";
  auto r = study_test::run_dtsim("predict --model tiny --batch-per-gpu 4 --gpus 2 --trace " + file);
  // `tiny` is not a zoo model: the run fails and writes nothing.
  CHECK(r.code == 2);
  CHECK_FALSE(std::filesystem::exists(file));
  r = study_test::run_dtsim("predict --model " + std::string(DTSIM_TEST_DATA) + "/tiny.json --batch-per-gpu 4 --gpus 2 --trace " + file);
  REQUIRE(r.code == 0);
  Json t = Json::parse(study_test::slurp(file));
  check_nesting(t["traceEvents"]);
  CHECK(t["displayTimeUnit"] == "ms");
  CHECK(t["otherData"]["gpus"] == 2);
}
