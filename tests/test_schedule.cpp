#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "sim/framework.hpp"
#include "sim/predict.hpp"
#include "sim/schedule.hpp"

using namespace dtsim;

static ClusterSpec h100() { return load_cluster("h100-sxm"); }

static Prediction run(const std::string& model, int64_t gpus, int64_t batch, bool overlap = true, Precision prec = Precision::FP32) {
  TrainingConfig cfg;
  cfg.gpus = gpus;
  cfg.batch_per_gpu = batch;
  cfg.overlap = overlap;
  cfg.precision = prec;
  return predict(load_model(model), h100(), cfg);
}

TEST_CASE("DDP bucket assignment: reverse parameter order, 1 MiB first bucket, then 25 MiB") {
  Graph g = load_model("resnet50");
  auto buckets = assign_buckets(g, 1 << 20, 25 << 20, 4);
  int64_t total = 0;
  for (const auto& b : buckets)
    for (const auto& [layer, bytes] : b) total += bytes;
  CHECK(total == g.params() * 4);
  // The first bucket starts with the classifier (fc.bias, fc.weight) and closes once past 1 MiB.
  CHECK(g.layers[buckets[0][0].first].name == "fc");
  int64_t first = 0;
  for (const auto& t : buckets[0]) first += t.second;
  CHECK(first >= (1 << 20));
  for (size_t i = 1; i + 1 < buckets.size(); ++i) {
    int64_t bytes = 0;
    for (const auto& t : buckets[i]) bytes += t.second;
    CHECK(bytes >= (25 << 20));
    CHECK(bytes - buckets[i].back().second < (25 << 20));  // it closed at the first tensor past the cap
  }
}

TEST_CASE("the iteration is compute plus host-bound idle plus exposed communication") {
  for (const char* m : {"resnet50", "alexnet", "mobilenet_v2"})
    for (int gpus : {1, 8, 64})
      for (int batch : {1, 32, 256}) {
        INFO(m << " gpus=" << gpus << " batch=" << batch);
        Prediction p = run(m, gpus, batch);
        CHECK(p.iteration_s == Approx(p.compute_s + p.host_idle_s + p.exposed_comm_s).epsilon(1e-9));
        CHECK(p.exposed_comm_s <= p.comm_s + 1e-12);
        CHECK(p.exposed_comm_s >= 0);
        CHECK(p.host_idle_s >= 0);
        CHECK(p.throughput_samples_per_s == Approx(double(batch) * gpus / p.iteration_s));
        if (gpus == 1) {
          CHECK(p.comm_s == 0);
          CHECK(p.scaling_efficiency == Approx(1));
        }
      }
}

TEST_CASE("overlap is never slower than all-reducing after the backward pass") {
  for (const char* m : {"resnet50", "vgg16", "densenet121"})
    for (int gpus : {2, 8, 16, 256})
      for (int batch : {1, 16, 128}) {
        INFO(m << " gpus=" << gpus << " batch=" << batch);
        Prediction with = run(m, gpus, batch, true), without = run(m, gpus, batch, false);
        CHECK(with.iteration_s <= without.iteration_s * (1 + 1e-12));
        CHECK(with.comm_s == Approx(without.comm_s));
        CHECK(without.exposed_comm_s <= without.comm_s * (1 + 1e-12));
        // Without overlap, when the GPU (not the host) sets the pace at large batch, every byte of communication is exposed.
        if (batch >= 128) CHECK(without.exposed_comm_s == Approx(without.comm_s));
      }
}

TEST_CASE("more GPUs at equal batch per GPU never shorten the iteration") {
  // NCCL itself is not monotone in the GPU count (measured on H100s, validation/data/h100-sxm/collective:
  // a 2 MiB all-reduce takes 28.9 us on 2 GPUs and 25.8 us on 4), but the model runs the cheapest
  // protocol and is.
  for (const char* m : {"resnet50", "vgg16", "alexnet"})
    for (int batch : {1, 64}) {
      double prev = 0;
      for (int gpus = 1; gpus <= 1024; gpus *= 2) {
        INFO(m << " gpus=" << gpus << " batch=" << batch);
        Prediction p = run(m, gpus, batch);
        CHECK(p.iteration_s >= prev * (1 - 1e-12));
        CHECK(p.scaling_efficiency <= 1 + 1e-12);
        prev = p.iteration_s;
      }
    }
}

TEST_CASE("small batches of many-layer models are host-bound: large batches are not") {
  // Under eager PyTorch's host costs (the CLI's default profile), as measured in validation/.
  const ClusterSpec pt = apply_framework(h100(), load_framework("pytorch"));
  TrainingConfig cfg;
  cfg.gpus = 1;
  cfg.batch_per_gpu = 1;
  Prediction small = predict(load_model("mobilenet_v2"), pt, cfg);
  cfg.batch_per_gpu = 256;
  Prediction large = predict(load_model("resnet50"), pt, cfg);
  CHECK(small.bottleneck == "host");
  CHECK(small.host_idle_s > 0.5 * small.iteration_s);
  CHECK(large.bottleneck != "host");
  CHECK(large.host_idle_s < 0.1 * large.iteration_s);
}

TEST_CASE("communication-bound when gradients are large and compute is small") {
  // VGG-16 carries 553 MB of FP32 gradients; at batch 1 on 64 GPUs the network dominates. (0.58 with
  // the measured convolution predictors; the roofline's 2-3x too fast convolutions gave below 0.5.)
  Prediction p = run("vgg16", 64, 1);
  CHECK(p.bottleneck == "communication");
  CHECK(p.scaling_efficiency < 0.65);
  CHECK(p.exposed_comm_s > 0.3 * p.iteration_s);
  CHECK(p.grad_bytes == 138357544LL * 4);
}

TEST_CASE("bf16 autocast is faster than fp32 but all-reduces the same FP32 gradients") {
  Prediction f = run("resnet50", 16, 128, true, Precision::FP32);
  Prediction b = run("resnet50", 16, 128, true, Precision::BF16);
  CHECK(b.compute_s < f.compute_s);
  CHECK(b.grad_bytes == f.grad_bytes);
  CHECK(b.comm_s == Approx(f.comm_s));
}

TEST_CASE("per-layer times add up to the compute time") {
  Prediction p = run("resnet18", 4, 32);
  double sum = 0;
  for (const auto& l : p.timeline.layers) sum += l.fwd_s + l.bwd_s;
  CHECK(sum + p.optimizer_s == Approx(p.compute_s));
  CHECK(p.layer_names.size() == p.timeline.layers.size());
}

TEST_CASE("batch size limits are enforced") {
  CHECK_THROWS_WITH(run("resnet50", 1, 0), Catch::Matchers::Contains("--batch-per-gpu"));
  CHECK_THROWS_WITH(run("resnet50", 1, kMaxBatchPerGpu + 1), Catch::Matchers::Contains("--batch-per-gpu"));
}

TEST_CASE("framework host costs: the most specific key wins, else the launch cost") {
  const KeyTable table = {{"conv2d/fwd/bf16", 40e-6}, {"conv2d/fwd", 30e-6}, {"activation/fwd/fp32", 20e-6},
                                               {"eltwise/fwd/fp32/bias_add", 22e-6}, {"eltwise/fwd/fp32/autocast", 0}};
  const Graph vgg = load_model("vgg16");  // kernels' variants point into its layers: keep it alive
  const IterationKernels k = lower_iteration(vgg, 2, Precision::BF16);
  int convs = 0, casts = 0, relus = 0, bias = 0;
  for (const auto& kd : k.forward) {
    const double s = framework_host_cost_s(kd, &table, 7e-6);
    if (kd.kind == KernelKind::Conv2d) {
      ++convs;
      CHECK(s == 40e-6);
    }
    if (kd.kind == KernelKind::Activation) {  // bf16 ReLUs: no bf16 entry, no kind/pass entry
      ++relus;
      CHECK(s == 7e-6);
    }
    if (kd.kind == KernelKind::Eltwise && std::string(kd.variant) == "autocast") {
      ++casts;
      CHECK(s == 0);
    }
    if (kd.kind == KernelKind::Eltwise && std::string(kd.variant) == "bias_add") {  // bf16 bias add: no entry
      ++bias;
      CHECK(s == 7e-6);
    }
  }
  CHECK(convs == 13);
  CHECK(casts == 16);  // 13 convolutions and 3 linear layers
  CHECK(bias == 16);
  CHECK(relus == 15);
  const IterationKernels f = lower_iteration(vgg, 2, Precision::FP32);
  CHECK(framework_host_cost_s(f.forward[0], &table, 7e-6) == 30e-6);  // fp32 run: tf32 conv keyed fp32, falls to conv2d/fwd
  CHECK(framework_host_cost_s(f.forward[0], nullptr, 7e-6) == 7e-6);
}

TEST_CASE("a framework that concatenates input by input issues one slice copy per input") {
  // The harness copies each input into its channel slice (concat_slice), and each gradient out of it;
  // PyTorch's torch.cat is one kernel. densenet121's dense blocks concatenate up to 32 inputs.
  const ClusterSpec c = load_cluster("h200-sxm");
  const Graph g = load_model("densenet121");
  const IterationKernels k = lower_iteration(g, 32, Precision::BF16);
  auto compute = cluster_compute_model("auto", c);
  FrameworkSpec f = c.framework;
  static_cast<FrameworkHostCosts&>(f) = load_framework("harness");
  REQUIRE(f.concat_copy_per_input);
  auto step = [&](bool per_input) {
    f.concat_copy_per_input = per_input;
    ClusterSpec cf = c;
    cf.framework = f;
    return simulate_iteration(g, k, *compute, [](double) { return 0.0; }, schedule_options(cf, true, true));
  };
  const IterationTimeline one = step(false), per_input = step(true);
  size_t inputs = 0, concats = 0, fed_by_model_input = 0;
  for (const Layer& l : g.layers)
    if (l.op == Op::Concat) {
      ++concats;
      inputs += l.inputs.size();
      fed_by_model_input += std::count(l.inputs.begin(), l.inputs.end(), -1);
    }
  REQUIRE(concats == 58);
  auto slices = [](const IterationTimeline& t, Pass pass) {
    size_t n = 0;
    for (const auto& s : t.kernels)
      if (s.kind == KernelKind::Concat && s.pass == pass) ++n;
    return n;
  };
  CHECK(slices(one, Pass::Fwd) == concats);
  CHECK(slices(per_input, Pass::Fwd) == inputs);
  CHECK(slices(per_input, Pass::Bwd) == inputs - fed_by_model_input);
  for (const auto& s : per_input.kernels)
    if (s.kind == KernelKind::Concat) CHECK(std::string(s.variant) == "slice");
  // Every slice copy costs at least a launch: the split step is longer, and the concatenations'
  // layers account for the difference.
  CHECK(per_input.iteration_s > one.iteration_s);
  double cat_one = 0, cat_split = 0;
  for (size_t i = 0; i < g.layers.size(); ++i)
    if (g.layers[i].op == Op::Concat) cat_one += one.layers[i].fwd_s + one.layers[i].bwd_s, cat_split += per_input.layers[i].fwd_s + per_input.layers[i].bwd_s;
  CHECK(cat_split > 2 * cat_one);
}

TEST_CASE("PyTorch's depthwise convolutions run on its own kernels outside fp16 and channels_last") {
  // aten's use_cudnn_depthwise: a contiguous depthwise convolution goes to cuDNN only in fp16; fp32 and
  // bf16 run conv_depthwise2d_* (torch.profiler, validation/data/h200-sxm/kernels_depthwise), and
  // channels_last tensors go to cuDNN. The harness runs every convolution on cuDNN.
  const ClusterSpec c = load_cluster("h200-sxm");
  const Graph g = load_model("mobilenet_v2");
  auto compute = cluster_compute_model("auto", c);
  size_t depthwise_layers = 0;
  for (const Layer& l : g.layers)
    if (l.op == Op::Conv2d && l.groups > 1 && l.groups == l.in[0].c) ++depthwise_layers;
  REQUIRE(depthwise_layers == 17);
  auto native_kernels = [&](const char* framework, Precision p, MemoryFormat fmt, double* iteration_s = nullptr) {
    FrameworkSpec f = c.framework;
    static_cast<FrameworkHostCosts&>(f) = load_framework(framework);
    StepMode mode;
    mode.memory_format = fmt;
    const IterationKernels k = lower_iteration(g, 64, p, mode);
    ClusterSpec cf = c;
    cf.framework = f;
    const IterationTimeline t = simulate_iteration(g, k, *compute, [](double) { return 0.0; }, schedule_options(cf, true, true));
    if (iteration_s) *iteration_s = t.iteration_s;
    size_t n = 0;
    for (const auto& s : t.kernels)
      if (s.kind == KernelKind::Conv2d && std::string(s.variant) == kNativeDepthwise) ++n;
    // each one priced by its own measured predictor, not the roofline
    if (n > 0) CHECK(t.pricing[static_cast<int>(KernelKind::Conv2d)].roofline_s == 0);
    return n;
  };
  REQUIRE(load_framework("pytorch").depthwise_conv_native);
  REQUIRE_FALSE(load_framework("harness").depthwise_conv_native);
  CHECK(native_kernels("pytorch", Precision::BF16, MemoryFormat::Contiguous) == 3 * depthwise_layers);
  CHECK(native_kernels("pytorch", Precision::FP32, MemoryFormat::Contiguous) == 3 * depthwise_layers);
  CHECK(native_kernels("pytorch-ops", Precision::BF16, MemoryFormat::Contiguous) == 3 * depthwise_layers);
  CHECK(native_kernels("pytorch", Precision::FP16, MemoryFormat::Contiguous) == 0);
  CHECK(native_kernels("pytorch", Precision::BF16, MemoryFormat::ChannelsLast) == 0);
  CHECK(native_kernels("harness", Precision::BF16, MemoryFormat::Contiguous) == 0);
}

// host_runs_ahead: in the steady state of a loop that never waits for the GPU, a step takes the longer
// of the host's issue time and the GPU's own timeline, never more than a step that starts with both idle.
TEST_CASE("a host that runs ahead: the step is the longer of host and GPU, and never longer than a cold start") {
  ClusterSpec base = apply_framework(h100(), load_framework("pytorch-ops"));
  for (const char* m : {"resnet50", "alexnet", "mobilenet_v2"})
    for (int batch : {1, 8, 64, 256})
      for (double overhead : {0.0, 2e-3}) {
        INFO(m << " batch=" << batch << " overhead=" << overhead);
        ClusterSpec ahead = base, cold = base, free_host = base;
        ahead.framework.iteration_overhead_s = cold.framework.iteration_overhead_s = overhead;
        ahead.framework.host_runs_ahead = true;
        cold.framework.host_runs_ahead = false;
        free_host.framework.host_runs_ahead = true;
        free_host.framework.iteration_overhead_s = 0;
        free_host.framework.launch_overhead_s = 0;
        free_host.framework.host_cost_s.clear();
        TrainingConfig cfg;
        cfg.batch_per_gpu = batch;
        cfg.precision = Precision::BF16;
        const Graph g = load_model(m);
        const Prediction a = predict(g, ahead, cfg), c = predict(g, cold, cfg), gpu = predict(g, free_host, cfg);
        // The GPU's own timeline is what a host that costs nothing gives.
        CHECK(a.iteration_s >= gpu.iteration_s * (1 - 1e-12));
        CHECK(a.iteration_s <= c.iteration_s * (1 + 1e-12));
        CHECK(a.iteration_s == Approx(a.compute_s + a.host_idle_s + a.exposed_comm_s).epsilon(1e-9));
        CHECK(a.iteration_s - a.host_idle_s == Approx(gpu.iteration_s).epsilon(1e-9));  // the GPU waits only at the end
        if (batch == 1) CHECK(a.host_idle_s > 0);  // one sample: the host paces every one of these models
      }
  // The fixed cost per step hides behind a GPU-paced step and adds in full to a host-paced one.
  ClusterSpec ahead = base;
  ahead.framework.host_runs_ahead = true;
  TrainingConfig big, small;
  big.batch_per_gpu = 256;
  small.batch_per_gpu = 1;
  const Graph g = load_model("resnet50");
  ClusterSpec more = ahead;
  more.framework.iteration_overhead_s = ahead.framework.iteration_overhead_s + 1e-3;
  CHECK(predict(g, more, big).iteration_s == Approx(predict(g, ahead, big).iteration_s).epsilon(1e-12));
  CHECK(predict(g, more, small).iteration_s == Approx(predict(g, ahead, small).iteration_s + 1e-3).epsilon(1e-9));
}

TEST_CASE("host_cost_shape_factors scale the measured host costs, and a key host_cost_s lacks is an input error naming it") {
  const Json doc = Json::parse(R"({"name": "x", "launch_overhead_s": 0, "iteration_overhead_s": 0,
      "host_cost_s": {"conv2d/fwd/fp32": 4e-5, "batchnorm/fwd/fp32": 1e-4},
      "host_cost_shape_factors": {"conv2d/fwd/fp32": 1.5}})");
  const FrameworkProfile f = parse_framework(doc, "x.json");
  CHECK(f.host_cost_s.at("conv2d/fwd/fp32") == Approx(6e-5));
  CHECK(f.host_cost_s.at("batchnorm/fwd/fp32") == Approx(1e-4));
  Json bad = doc;
  bad["host_cost_shape_factors"] = Json::parse(R"({"conv2d/bwd_data/fp32": 1.5})");
  CHECK_THROWS_WITH(parse_framework(bad, "x.json"), Catch::Contains("host_cost_shape_factors.conv2d/bwd_data/fp32") &&
                                                        Catch::Contains("must be a key of host_cost_s"));
  bad["host_cost_shape_factors"] = Json::parse(R"({"conv2d/fwd/fp32": 0})");
  CHECK_THROWS_WITH(parse_framework(bad, "x.json"), Catch::Contains("must be a number in (0, 100]"));
  // channels_last kernels: their own factors over the measured costs (a key without one keeps it), not the contiguous ones.
  Json cl = doc;
  cl["channels_last_host_cost_shape_factors"] = Json::parse(R"({"batchnorm/fwd/fp32": 2})");
  const FrameworkProfile g = parse_framework(cl, "x.json");
  CHECK(g.host_cost_s.at("conv2d/fwd/fp32") == Approx(6e-5));
  CHECK(g.channels_last_host_cost_s.at("conv2d/fwd/fp32") == Approx(4e-5));
  CHECK(g.channels_last_host_cost_s.at("batchnorm/fwd/fp32") == Approx(2e-4));
  ScheduleOptions opt;
  opt.host_cost_s = &g.host_cost_s;
  opt.channels_last_host_cost_s = &g.channels_last_host_cost_s;
  opt.launch_overhead_s = 1e-6;
  const Graph vgg = load_model("vgg16");
  KernelDesc conv = lower_iteration(vgg, 2, Precision::FP32).forward[0];  // the first convolution, keyed conv2d/fwd/fp32
  REQUIRE(conv.kind == KernelKind::Conv2d);
  CHECK(framework_host_cost_s(conv, opt) == Approx(6e-5));
  conv.format = MemoryFormat::ChannelsLast;
  CHECK(framework_host_cost_s(conv, opt) == Approx(4e-5));
  opt.channels_last_host_cost_s = &f.channels_last_host_cost_s;  // a profile without them: the contiguous table
  CHECK(framework_host_cost_s(conv, opt) == Approx(6e-5));
}
