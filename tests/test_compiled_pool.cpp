// torch.compile's pooling kernels (FrameworkSpec::compiled_pooling): a max or average pooling with a
// window runs as a generated kernel of its own (validation/data/h200-sxm/pytorch_modes/compiled_pool),
// priced at the issue rate of its window elements or its bytes, whichever is longer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config_paths.hpp"
#include "hardware/gpu_spec.hpp"
#include "network/cluster.hpp"
#include "sim/compiled_pool.hpp"
#include "sim/framework.hpp"
#include "sim/predict.hpp"
#include "workload/kernel_spec.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

StepMode compiled_mode() {
  StepMode m;
  m.execution = Execution::CompileCudaGraphs;
  return m;
}

int count_variant(const std::vector<KernelDesc>& ks, const std::string& variant) {
  return static_cast<int>(std::count_if(ks.begin(), ks.end(), [&](const KernelDesc& k) { return variant == k.variant; }));
}

// The stem pooling of resnet18/50 at batch 256: max 3x3/s2/p1 over 64 x 112 x 112 (bf16).
KernelDesc stem_pool(Pass pass, int64_t batch = 256) {
  KernelDesc k{KernelKind::Pool, pass, MathMode::BF16, 0, {}, kInductorMaxPool, 0, 0, MemoryFormat::ChannelsLast};
  const int64_t shape[] = {batch, 64, 112, 112, 3, 3, 2, 1, 56, 56};
  std::copy(std::begin(shape), std::end(shape), k.shape.begin());
  set_cost(k);
  return k;
}

}  // namespace

TEST_CASE("compiled pooling: a pooling with a window is a kernel of its own, a global average pooling still fuses") {
  for (const char* model : {"resnet50", "vgg16", "densenet121", "googlenet"}) {
    const Graph g = load_model(model);
    const IterationKernels eager = lower_iteration(g, 32, Precision::BF16), f = lower_iteration(g, 32, Precision::BF16, compiled_mode());
    int windowed = 0, maxes = 0;
    for (const Layer& l : g.layers)
      if ((l.op == Op::MaxPool2d || l.op == Op::AvgPool2d) && l.kh * l.kw > 1) ++windowed, maxes += l.op == Op::MaxPool2d;
    INFO(model);
    REQUIRE(windowed > 0);
    CHECK(count_variant(f.forward, kInductorMaxPool) == maxes);
    CHECK(count_variant(f.forward, kInductorMaxPool) + count_variant(f.forward, kInductorAvgPool) == windowed);
    CHECK(count_variant(f.backward, kInductorMaxPool) + count_variant(f.backward, kInductorAvgPool) == windowed);
    for (const auto* list : {&eager.forward, &eager.backward})
      CHECK(count_variant(*list, kInductorMaxPool) + count_variant(*list, kInductorAvgPool) == 0);
    for (const KernelDesc& k : f.forward) {
      if (k.kind != KernelKind::Pool) continue;
      CHECK(is_compiled_pool(k));  // the adaptive (global) average pooling is in a fused run
      CHECK(g.layers[k.layer].kh * g.layers[k.layer].kw > 1);
    }
  }
  // resnet50's stem pooling feeds layer1.0's conv1 and its downsample: the gradient's sum is in the
  // pooling's backward kernel, no add of its own.
  const Graph g = load_model("resnet50");
  const IterationKernels f = lower_iteration(g, 32, Precision::BF16, compiled_mode());
  for (const KernelDesc& k : f.backward)
    if (k.layer >= 0 && g.layers[k.layer].op == Op::MaxPool2d) CHECK(k.kind == KernelKind::Pool);
}

TEST_CASE("compiled pooling: a ReLU that only a pooling reads has its backward in the pooling's kernel") {
  // vgg16: conv -> ReLU -> max pool five times. The five ReLUs in front of a pooling have no backward
  // kernel of their own; the other eight ReLUs keep theirs.
  const Graph g = load_model("vgg16");
  const IterationKernels f = lower_iteration(g, 32, Precision::BF16, compiled_mode());
  int pooled = 0, other = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (g.layers[i].op != Op::Activation || g.layers[i].out.h <= 1) continue;
    bool feeds_pool = false;
    for (const Layer& l : g.layers)
      for (int j : l.inputs) feeds_pool = feeds_pool || (j == static_cast<int>(i) && l.op == Op::MaxPool2d);
    const int bwd = static_cast<int>(std::count_if(f.backward.begin(), f.backward.end(), [&](const KernelDesc& k) {
      return k.layer == static_cast<int>(i) && std::string(k.variant) == "inductor_pointwise";
    }));
    INFO(g.layers[i].name);
    CHECK(bwd == (feeds_pool ? 0 : 1));
    (feeds_pool ? pooled : other)++;
  }
  CHECK(pooled == 5);
  CHECK(other == 8);
}

TEST_CASE("compiled pooling: the time is the profile's formula, near the measured stem pooling") {
  const ClusterSpec c = apply_framework(load_cluster("h200-sxm"), load_framework("pytorch"));
  const CompiledPooling& p = c.framework.compiled_pooling;
  REQUIRE(p.bandwidth_fraction > 0);
  const double issue_Hz = c.gpu.sm_count * c.gpu.sm_clock_Hz;
  const double in = 256.0 * 64 * 112 * 112, out = 256.0 * 64 * 56 * 56;
  const auto fwd = compiled_pool_time(p, stem_pool(Pass::Fwd), c.gpu), bwd = compiled_pool_time(p, stem_pool(Pass::Bwd), c.gpu);
  REQUIRE(fwd);
  REQUIRE(bwd);
  const CompiledPoolCost f = p.cost.at("max/fwd"), b = p.cost.at("max/bwd");
  const double bytes = (in + out) * 2 + out;
  CHECK(fwd->seconds == Approx(std::max(bytes / (p.bandwidth_fraction * c.gpu.memory_bandwidth_Bps), (out * 9 * f.window_cycles + in * f.input_cycles) / issue_Hz) +
                               c.gpu.kernel_overhead_s));
  CHECK(bwd->seconds == Approx(std::max(bytes / (p.bandwidth_fraction * c.gpu.memory_bandwidth_Bps), (in * 4 * b.window_cycles + in * b.input_cycles) / issue_Hz) +
                               c.gpu.kernel_overhead_s));
  CHECK_FALSE(fwd->memory_bound);  // the issue rate bounds it, not the bytes
  // torch.profiler, compiled resnet18 b256 on one H200: 373 and 1,467 us (graph_split/split).
  CHECK(fwd->seconds == Approx(373e-6).epsilon(0.10));
  CHECK(bwd->seconds == Approx(1467e-6).epsilon(0.10));
  // Not a compiled pooling, or no clock to issue at: the compute model prices it.
  KernelDesc eager = stem_pool(Pass::Fwd);
  eager.variant = "max";
  CHECK_FALSE(compiled_pool_time(p, eager, c.gpu));
  GpuSpec unclocked = c.gpu;
  unclocked.sm_clock_Hz = 0;
  CHECK_FALSE(compiled_pool_time(p, stem_pool(Pass::Fwd), unclocked));
}

TEST_CASE("compiled pooling: more SMs, clock or bandwidth never make it slower, more elements never faster") {
  const FrameworkProfile fw = load_framework("pytorch");
  for (const std::string& name : config_presets("gpus")) {
    const GpuSpec base = load_gpu(name);
    if (base.sm_clock_Hz <= 0) continue;
    for (Pass pass : {Pass::Fwd, Pass::Bwd})
      for (const char* variant : {kInductorMaxPool, kInductorAvgPool})
        for (int64_t batch : {1, 8, 64, 512}) {
          KernelDesc k = stem_pool(pass, batch), bigger = stem_pool(pass, 2 * batch);
          k.variant = bigger.variant = variant;
          if (!base.supports(MathMode::BF16)) k.math = bigger.math = MathMode::FP32, set_cost(k), set_cost(bigger);
          INFO(name << " " << variant << " pass " << static_cast<int>(pass) << " b" << batch);
          const double t = compiled_pool_time(fw.compiled_pooling, k, base)->seconds;
          CHECK(compiled_pool_time(fw.compiled_pooling, bigger, base)->seconds >= t);
          CHECK(t >= physics_floor_s(k, base));
          for (double scale : {1.25, 2.0, 8.0}) {
            GpuSpec more = base;
            more.sm_count = static_cast<int>(std::lround(base.sm_count * scale));
            CHECK(compiled_pool_time(fw.compiled_pooling, k, more)->seconds <= t);
            more = base;
            more.sm_clock_Hz *= scale;
            CHECK(compiled_pool_time(fw.compiled_pooling, k, more)->seconds <= t);
            more = base;
            more.memory_bandwidth_Bps *= scale;
            CHECK(compiled_pool_time(fw.compiled_pooling, k, more)->seconds <= t);
          }
        }
  }
}

TEST_CASE("compiled pooling: a profile's table is checked") {
  const auto parse = [](const std::string& pool) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"compiled_pooling":)" + pool + "}"), "fw.json");
  };
  const FrameworkProfile ok = parse(R"({"bandwidth_fraction":0.9,"sm_cycles_per_element":{"max/fwd":{"window":0.2,"input":0}}})");
  CHECK(ok.compiled_pooling.cost.at("max/fwd").window_cycles == 0.2);
  CHECK(ok.compiled_pooling.cost.count("avg/fwd") == 0);
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0,"sm_cycles_per_element":{}})"), Catch::Contains("fw.json") && Catch::Contains("bandwidth_fraction"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0.9,"sm_cycles_per_element":{"max/fwd":{"window":-1,"input":0}}})"),
                    Catch::Contains("sm_cycles_per_element") && Catch::Contains("window"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0.9,"sm_cycles_per_element":{"min/fwd":{"window":1,"input":0}}})"), Catch::Contains("min/fwd"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0.9,"sm_cycles_per_element":{"max/fwd":{"window":1}}})"), Catch::Contains("input"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0.9})"), Catch::Contains("sm_cycles_per_element"));
}

TEST_CASE("compiled pooling: dtsim kernel prices one as a prediction does") {
  // Every compiled pooling of resnet18 and googlenet, spelled as `dtsim kernel --kind pool --variant
  // inductor_max --framework pytorch`, costs what the prediction charges.
  const ClusterSpec c = apply_framework(load_cluster("h200-sxm"), load_framework("pytorch"));
  const auto model = cluster_compute_model("auto", c);
  int checked = 0;
  for (const char* name : {"resnet18", "googlenet"}) {
    const IterationKernels it = lower_iteration(load_model(name), 64, Precision::BF16, compiled_mode());
    for (const auto* list : {&it.forward, &it.backward})
      for (const KernelDesc& k : *list) {
        if (!is_compiled_pool(k)) continue;
        const auto& s = k.shape;
        const std::string shape = "N=" + std::to_string(s[0]) + ",C=" + std::to_string(s[1]) + ",H=" + std::to_string(s[2]) + ",W=" +
                                  std::to_string(s[3]) + ",R=" + std::to_string(s[4]) + ",S=" + std::to_string(s[5]) +
                                  ",stride=" + std::to_string(s[6]) + ",pad=" + std::to_string(s[7]);
        const KernelDesc spec = parse_kernel_spec({"pool", k.pass == Pass::Fwd ? "fwd" : "bwd", "bf16", shape, k.variant});
        INFO(name << " " << shape);
        if (spec.shape != k.shape) continue;  // ceil_mode poolings: the spelled shape's output floors
        CHECK(model->time(spec).seconds == Approx(model->time(k).seconds).epsilon(1e-12));
        ++checked;
      }
  }
  CHECK(checked >= 4);
  CHECK_THROWS_WITH(parse_kernel_spec({"pool", "fwd", "bf16", "N=1,C=1,H=4,W=4,R=2,S=2", "inductor_min"}), Catch::Contains("--variant"));
}
