// The speed targets of issue 7, as a benchmark that fails when they are missed: a sweep of all 13
// zoo models x 8 batch sizes x 14 GPU counts (1 to 8192) in at most 1 s of one core, and
// `dtsim predict` for ResNet-50 in at most 150 ms wall from a cold start. Only optimized builds
// are held to them.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>

#include "model/model_json.hpp"
#include "model/study.hpp"
#include "study_cli.hpp"

using namespace dtsim;

TEST_CASE("speed: the full zoo sweep and a cold predict meet their targets") {
#ifndef NDEBUG
  WARN("not an optimized build: speed targets not checked");
  return;
#endif
  SweepSpec s;
  s.models = zoo_models();
  REQUIRE(s.models.size() == 13);
  s.batches = {1, 2, 4, 8, 16, 32, 64, 128};
  for (int64_t g = 1; g <= 8192; g *= 2) s.gpus.push_back(g);
  REQUIRE(s.gpus.size() == 14);
  s.cluster_nodes = 1024;
  const std::clock_t c0 = std::clock();
  SweepResult res = run_sweep(s);
  const double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  CHECK(res.rows.size() == 13 * 8 * 14);
  INFO("sweep of 1456 configurations: " << cpu_s << " s of CPU");
  CHECK(cpu_s <= 1.0);

  // Cold start: a fresh process each time; the best of three, since the machine is shared.
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = study_test::run_dtsim("predict --model resnet50 --batch-per-gpu 64 --gpus 64");
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    REQUIRE(r.code == 0);
  }
  INFO("predict resnet50, best of 3: " << best << " s wall");
  CHECK(best <= 0.150);
}
