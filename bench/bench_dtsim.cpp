// dtsim's speed budgets, one Google Benchmark each (bench/README.md lists the budgets and the last
// figures). Benchmarks, not tests: a shared CI machine's timings are too noisy to fail a build on.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compute/impl/mlp/mlp_model.hpp"
#include "workload/model_json.hpp"
#include "study/plan.hpp"
#include "sim/predict.hpp"
#include "study/study.hpp"
#include "network/cluster.hpp"
#include "sim/whatif.hpp"

using namespace dtsim;

// Budget: all 13 zoo models x 8 batch sizes x 14 GPU counts (1 to 8192): at most 1 s on one core.
// The 13 CNNs the budget was set for, by name, so that the figures stay comparable now that the zoo also holds
// transformers (vit_b_16, gpt2_small, bert_base).
static void BM_ZooSweep(benchmark::State& state) {
  SweepSpec s;
  s.models = {"alexnet",   "densenet121", "googlenet", "inception_v3", "mobilenet_v2", "resnet101", "resnet152",
              "resnet18",  "resnet34",    "resnet50",  "vgg11",        "vgg16",        "vgg19"};
  s.batches = {1, 2, 4, 8, 16, 32, 64, 128};
  for (int64_t g = 1; g <= 8192; g *= 2) s.gpus.push_back(g);
  s.cluster_nodes = 1024;
  for (auto _ : state) benchmark::DoNotOptimize(run_sweep(s));
  state.counters["configs"] = static_cast<double>(s.models.size() * s.batches.size() * s.gpus.size());
}
BENCHMARK(BM_ZooSweep)->Unit(benchmark::kMillisecond)->Iterations(3);

// resnet50 on 64 H100s at batch 64 per GPU, predicted in process `state`'s iterations.
// With `cold`, every prediction infers its kernels afresh (the predictors' outputs, which the process
// remembers, forgotten first): a first prediction, as one `dtsim predict` makes.
static void predict_resnet50(benchmark::State& state, const StepMode& mode, bool cold = false) {
  Graph g = load_model("resnet50");
  ClusterSpec c = load_cluster("h100-sxm");
  TrainingConfig cfg;
  cfg.gpus = 64;
  cfg.batch_per_gpu = 64;
  cfg.mode = mode;
  for (auto _ : state) {
    if (cold) mlp::forget_predictions();
    benchmark::DoNotOptimize(predict(g, c, cfg));
  }
}

// One full prediction, in process (the cold start of the whole command is timed with farm-bench).
static void BM_PredictResnet50(benchmark::State& state) { predict_resnet50(state, {}); }
BENCHMARK(BM_PredictResnet50)->Unit(benchmark::kMillisecond);

// The same, each prediction a first one: nothing inferred before is remembered.
static void BM_PredictResnet50Cold(benchmark::State& state) { predict_resnet50(state, {}, true); }
BENCHMARK(BM_PredictResnet50Cold)->Unit(benchmark::kMillisecond);

// Budget: the same prediction in the modes speed-minded users run (channels_last, AdamW,
// torch.compile with CUDA graphs): at most twice BM_PredictResnet50.
static void BM_PredictResnet50Modes(benchmark::State& state) {
  predict_resnet50(state, StepMode{MemoryFormat::ChannelsLast, Optimizer::AdamW, Execution::CompileCudaGraphs});
}
BENCHMARK(BM_PredictResnet50Modes)->Unit(benchmark::kMillisecond);

// The same, each a first one: the modes' budget compares it with BM_PredictResnet50Cold.
static void BM_PredictResnet50ModesCold(benchmark::State& state) {
  predict_resnet50(state, StepMode{MemoryFormat::ChannelsLast, Optimizer::AdamW, Execution::CompileCudaGraphs}, true);
}
BENCHMARK(BM_PredictResnet50ModesCold)->Unit(benchmark::kMillisecond);

// Every kernel of resnet50's step at batch 64, fp32, timed by h100-sxm's predictors, nothing
// remembered between passes; ladder: as a prediction times them (times), else the predictors alone (raw_times).
static void time_resnet50_kernels(benchmark::State& state, bool ladder) {
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
    mlp::forget_predictions();  // each pass infers every kernel, as a first prediction does
    if (ladder) model.times(all, out);
    else model.raw_times(all, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kernels"] = static_cast<double>(all.size());
}

// Budget: every kernel of resnet50 at one batch size through the measured predictors: at most 1 ms.
static void BM_KernelPredictorsResnet50(benchmark::State& state) { time_resnet50_kernels(state, false); }
BENCHMARK(BM_KernelPredictorsResnet50)->Unit(benchmark::kMicrosecond);

// The same kernels as a prediction times them: each no faster than its half-batch twin, so a batch
// of 64 also infers its twins at 32, 16, ..., 1 (compute_model.hpp batch_monotone_times).
static void BM_KernelTimesLadderResnet50(benchmark::State& state) { time_resnet50_kernels(state, true); }
BENCHMARK(BM_KernelTimesLadderResnet50)->Unit(benchmark::kMicrosecond);

// Budget: `dtsim predict` of resnet50 in at most 150 ms wall from a cold start: the whole process
// (exec, dynamic linking, configs and predictors loaded, the prediction, the report), output to
// /dev/null. Wall time per run, manual timing (the child's CPU is not this process's).
// The children's CPU time is reported too (child_cpu_ms): on a loaded shared machine it is the steadier figure.
static double children_cpu_s() {
  rusage r{};
  getrusage(RUSAGE_CHILDREN, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static void BM_ColdStartPredict(benchmark::State& state) {
  const double cpu0 = children_cpu_s();
  const char* argv[] = {DTSIM_BINARY, "predict", "--model", "resnet50", "--batch-per-gpu", "64", "--gpus", "64", nullptr};
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execv(argv[0], const_cast<char* const*>(argv));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("dtsim predict failed");
      return;
    }
    state.SetIterationTime(wall.count());
  }
  state.counters["child_cpu_ms"] = 1e3 * (children_cpu_s() - cpu0) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ColdStartPredict)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(10);

// A sweep along one what-if axis (the argument: its index in what_if_axes()): resnet50 at batch 64
// on 64 GPUs of h100-sxm, 100 values of the axis (8 of gpus_per_node) against 1, each sweep a first
// one (nothing inferred before is remembered). Time is the long sweep's; ratio_to_one is its time over
// the one-value sweep's in the same iteration: the budget is 1.3.
static void BM_WhatIfSweep(benchmark::State& state) {
  const std::string axis = what_if_axes().at(static_cast<size_t>(state.range(0)));
  state.SetLabel(axis);
  SweepSpec one;
  one.models = {"resnet50"};
  one.batches = {64};
  one.gpus = {64};
  one.cluster = "h100-sxm";
  SweepSpec many = one;
  many.what_ifs.clear();
  const int n = axis == "gpus_per_node" ? 8 : 100;
  for (int i = 0; i < n; ++i) {
    WhatIf w;
    const double f = n == 1 ? 0 : double(i) / (n - 1);  // 0..1 along the axis
    double v = 0.5 * std::pow(4.0, f);                 // scales: 0.5x .. 2x
    if (axis == "intra_node_GBps") v = 50 + 850 * f;
    if (axis == "nic_Gbps") v = 25 + 775 * f;
    if (axis == "gpus_per_node") v = i + 1;
    set_what_if_axis(w, axis, v, "bench");
    many.what_ifs.push_back(w);
  }
  double ratio_sum = 0;
  for (auto _ : state) {
    mlp::forget_predictions();
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(run_sweep(one));
    const auto t1 = std::chrono::steady_clock::now();
    mlp::forget_predictions();
    benchmark::DoNotOptimize(run_sweep(many));
    const auto t2 = std::chrono::steady_clock::now();
    const std::chrono::duration<double> single = t1 - t0, sweep = t2 - t1;
    state.SetIterationTime(sweep.count());
    ratio_sum += sweep.count() / single.count();
  }
  state.counters["configs"] = n;
  state.counters["ratio_to_one"] = ratio_sum / static_cast<double>(state.iterations());
}
BENCHMARK(BM_WhatIfSweep)->DenseRange(0, 8)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

// Budget: `dtsim plan` over 1,048,576 configurations (4 presets x GPUs 1..1024 x 8 batch sizes x
// 2 precisions x 4 NIC rates x 4 bucket sizes) of resnet50 on ImageNet in at most 60 s wall on the
// 2-core development machine. Argument: threads (0: every core). Wall time (real time) is the budget.
static void BM_Plan1M(benchmark::State& state) {
  PlanSpec s = reference_plan_1m();
  s.threads = static_cast<unsigned>(state.range(0));
  uint64_t feasible = 0, priced = 0;
  for (auto _ : state) {
    const PlanResult r = run_plan(s);
    feasible = r.feasible;
    priced = r.priced;
    benchmark::DoNotOptimize(r.fastest);
  }
  state.counters["configs"] = static_cast<double>(plan_size(s));
  state.counters["priced"] = static_cast<double>(priced);
  state.counters["feasible"] = static_cast<double>(feasible);
}
BENCHMARK(BM_Plan1M)->ArgName("threads")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

BENCHMARK_MAIN();
