// dtsim's speed budgets, one Google Benchmark each (bench/README.md lists the budgets and the last
// figures). Benchmarks, not tests: a shared CI machine's timings are too noisy to fail a build on.
#include <benchmark/benchmark.h>

#include "kernels_mlp/mlp_model.hpp"
#include "model/model_json.hpp"
#include "model/predict.hpp"
#include "model/study.hpp"
#include "network/cluster.hpp"

using namespace dtsim;

// Issue 7: all 13 zoo models x 8 batch sizes x 14 GPU counts (1 to 8192): at most 1 s on one core.
static void BM_ZooSweep(benchmark::State& state) {
  SweepSpec s;
  s.models = zoo_models();
  s.batches = {1, 2, 4, 8, 16, 32, 64, 128};
  for (int64_t g = 1; g <= 8192; g *= 2) s.gpus.push_back(g);
  s.cluster_nodes = 1024;
  for (auto _ : state) benchmark::DoNotOptimize(run_sweep(s));
  state.counters["configs"] = static_cast<double>(s.models.size() * s.batches.size() * s.gpus.size());
}
BENCHMARK(BM_ZooSweep)->Unit(benchmark::kMillisecond)->Iterations(3);

// One full prediction, in process (the cold start of the whole command is timed with farm-bench).
static void BM_PredictResnet50(benchmark::State& state) {
  Graph g = load_model("resnet50");
  ClusterSpec c = load_cluster("h100-sxm");
  TrainingConfig cfg;
  cfg.gpus = 64;
  cfg.batch_per_gpu = 64;
  for (auto _ : state) benchmark::DoNotOptimize(predict(g, c, cfg));
}
BENCHMARK(BM_PredictResnet50)->Unit(benchmark::kMillisecond);

// Issue 4: every kernel of resnet50 at one batch size through the measured predictors: at most 1 ms.
static void BM_KernelPredictorsResnet50(benchmark::State& state) {
  if (!mlp::have_predictors()) {
    state.SkipWithError("no shipped predictors");
    return;
  }
  auto k = lower_iteration(load_model("resnet50"), 64, Precision::FP32);
  std::vector<KernelDesc> all = k.forward;
  all.insert(all.end(), k.backward.begin(), k.backward.end());
  all.insert(all.end(), k.update.begin(), k.update.end());
  mlp::MlpComputeModel model(load_gpu("h100-sxm"));
  std::vector<KernelTime> out;
  for (auto _ : state) {
    model.times(all, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kernels"] = static_cast<double>(all.size());
}
BENCHMARK(BM_KernelPredictorsResnet50)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
