// Physics is a floor: no kernel is predicted faster than its FLOPs at the datasheet peak of
// the math unit it runs on, or its minimum bytes at the datasheet memory bandwidth, on any GPU preset,
// in any math mode, for any pass, for shapes far beyond what was measured, and on what-if GPUs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>

#include "helpers.hpp"
#include "study_cli.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "workload/kernels.hpp"
#include "compute/compute_model.hpp"
#include "hardware/gpu_spec.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> gpu_presets() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(std::string(DTSIM_SOURCE_DIR) + "/configs/gpus"))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

KernelDesc kernel(KernelKind kind, Pass pass, MathMode m, std::initializer_list<int64_t> shape, const char* variant = "") {
  KernelDesc k{kind, pass, m, -1, {}, variant, 0, 0};
  int i = 0;
  for (int64_t v : shape) k.shape[i++] = v;
  set_cost(k);
  return k;
}

// Large and odd convolutions (contiguous and channels_last), GEMMs and memory-bound kernels in every pass
// and math mode.
std::vector<KernelDesc> grid_kernels(std::mt19937_64& rng) {
  std::vector<KernelDesc> ks;
  auto pick = [&](std::vector<int64_t> v) { return v[rng() % v.size()]; };
  const MathMode modes[] = {MathMode::FP32, MathMode::TF32, MathMode::BF16, MathMode::FP16};
  for (MathMode m : modes) {
    // GEMMs: aligned powers of two from 1K to 16K, odd sizes, thin and fat, every pass.
    for (int i = 0; i < 160; ++i) {
      const int64_t M = pick({1, 7, 1000, 1024, 4096, 8191, 16384, 32768}), N = pick({1, 3, 1024, 2048, 12288, 16384, 50257}),
                    K = pick({1, 64, 1000, 4096, 16384, 65536});
      for (Pass p : {Pass::Fwd, Pass::BwdData, Pass::BwdWeight}) ks.push_back(kernel(KernelKind::Gemm, p, m, {M, N, K, 0, 1}));
    }
    // Convolutions: big batches, wide channels, 1x1 memory-bound ones, odd channel counts.
    for (int i = 0; i < 80; ++i) {
      const int64_t N = pick({1, 32, 256, 512, 1024}), C = pick({3, 64, 257, 1024, 4096}), H = pick({7, 56, 112, 224}),
                    K = pick({64, 255, 1024, 4096}), R = pick({1, 3, 7}), st = pick({1, 2});
      for (Pass p : {Pass::Fwd, Pass::BwdData, Pass::BwdFilter}) {
        KernelDesc c = kernel(KernelKind::Conv2d, p, m, {N, C, H, H, K, R, R, st, st, R / 2, R / 2, 1, 1, 1});
        ks.push_back(c);
        c.format = MemoryFormat::ChannelsLast;  // the same convolution on NHWC tensors: its own predictors
        ks.push_back(c);
      }
    }
    ks.push_back(kernel(KernelKind::Conv2d, Pass::Fwd, m, {256, 1024, 112, 112, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1}));
    // Depthwise convolutions, on cuDNN and (contiguous, outside fp16) on PyTorch's own kernels, from tiny
    // to beyond the measured batches and channels.
    for (int i = 0; i < 40; ++i) {
      const int64_t N = pick({1, 64, 256, 1024, 4096}), C = pick({8, 96, 960, 4096}), H = pick({4, 14, 56, 224}),
                    R = pick({3, 5, 7}), st = pick({1, 2});
      for (Pass p : {Pass::Fwd, Pass::BwdData, Pass::BwdFilter}) {
        KernelDesc c = kernel(KernelKind::Conv2d, p, m, {N, C, H, H, C, R, R, st, st, R / 2, R / 2, 1, 1, C});
        ks.push_back(c);
        if (pytorch_runs_native_depthwise(c)) {
          c.variant = kNativeDepthwise;
          ks.push_back(c);
        }
      }
    }
    // Memory-bound kinds from tiny to beyond the measured sizes.
    for (int64_t n : {int64_t(1), int64_t(1) << 20, int64_t(3) << 30, int64_t(1) << 34}) {
      ks.push_back(kernel(KernelKind::Activation, Pass::Fwd, m, {n}, "relu"));
      ks.push_back(kernel(KernelKind::Activation, Pass::Bwd, m, {n}, "relu"));
      ks.push_back(kernel(KernelKind::Add, Pass::Fwd, m, {n, 2}));
      ks.push_back(kernel(KernelKind::SgdUpdate, Pass::Update, MathMode::FP32, {n}));
    }
    for (int64_t n : {int64_t(1), int64_t(256), int64_t(2048)})
      for (Pass p : {Pass::Fwd, Pass::Bwd}) {
        ks.push_back(kernel(KernelKind::BatchNorm, p, m, {n, 512, 56, 56}));
        ks.push_back(kernel(KernelKind::Pool, p, m, {n, 256, 112, 112, 3, 3, 2, 1, 56, 56}, "max"));
        // The transformers' kinds (roofline-priced until measured): layernorm, flash attention
        // (causal and not, short and long sequences), embedding gathers and index-adds, GELU.
        ks.push_back(kernel(KernelKind::LayerNorm, p, MathMode::FP32, {n * 1024, pick({768, 4096, 12288})}));
        for (int64_t causal : {0, 1})
          ks.push_back(kernel(KernelKind::Attention, p, m, {n, pick({1, 12, 96}), pick({1, 197, 1024, 8192}), pick({64, 128}), causal}));
        ks.push_back(kernel(KernelKind::Embedding, p, MathMode::FP32, {n * 1024, 768, pick({2, 50257, 262144})}));
        ks.push_back(kernel(KernelKind::Activation, p, m, {n << 20}, "gelu_tanh"));
      }
  }
  return ks;
}

// A what-if GPU: one preset with its peaks and bandwidth scaled.
GpuSpec scaled(GpuSpec g, double flops, double bandwidth) {
  for (double& p : g.peak_flops) p *= flops;
  g.memory_bandwidth_Bps *= bandwidth;
  return g;
}

}  // namespace

TEST_CASE("physics: no kernel beats its math unit's peak or the memory bandwidth, on any preset or what-if GPU") {
  std::mt19937_64 rng(21);
  const std::vector<KernelDesc> ks = grid_kernels(rng);
  size_t checked = 0;
  for (const std::string& name : gpu_presets()) {
    const GpuSpec base = load_gpu(name);
    for (auto [f, b] : {std::pair{1.0, 1.0}, {2.0, 1.0}, {1.0, 2.0}, {0.5, 0.5}, {4.0, 0.25}}) {
      const GpuSpec gpu = scaled(base, f, b);
      for (const char* model : {"auto", "roofline"}) {
        auto cm = make_compute_model(model, gpu);
        std::vector<KernelDesc> supported;
        for (const auto& k : ks)
          if (gpu.supports(k.math)) supported.push_back(k);
        std::vector<KernelTime> t;
        cm->times(supported, t);
        for (size_t i = 0; i < supported.size(); ++i) {
          const double floor_s = physics_floor_s(supported[i], gpu);
          INFO(name << " x" << f << " flops x" << b << " bandwidth, " << model << ": " << kind_name(supported[i].kind) << " "
                    << pass_name(supported[i].pass) << " " << math_name(supported[i].math) << " shape " << supported[i].shape[0] << " "
                    << supported[i].shape[1] << " " << supported[i].shape[2] << " " << supported[i].shape[3]);
          REQUIRE(t[i].seconds >= floor_s * (1 - 1e-12));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100000);
}

TEST_CASE("physics: the measured predictors stay above the floor by themselves on the measured GPUs") {
  // The floor in MlpComputeModel is a last guard; clamping features to the training range is what keeps
  // the predictors from running past the roofline (without the clamp FP32 GEMMs reached 1.99x the peak).
  std::mt19937_64 rng(22);
  const std::vector<KernelDesc> ks = grid_kernels(rng);
  for (const char* name : {"h100-sxm", "h200-sxm"}) {
    mlp::MlpComputeModel model(load_gpu(name));
    std::vector<KernelDesc> covered;
    for (const auto& k : ks)
      if (model.covers(k)) covered.push_back(k);
    std::vector<KernelTime> t;
    model.times(covered, t);
    INFO(name << ": " << model.floored() << " of " << covered.size() << " kernels raised to the floor");
    CHECK(covered.size() > 1000);
    CHECK(model.floored() <= covered.size() / 100);
  }
}

TEST_CASE("physics: the examples that once beat the floor") {
  const GpuSpec h100 = load_gpu("h100-sxm"), h200 = load_gpu("h200-sxm");
  // 16384^3 FP32 GEMMs in every pass: at least 2 * 16384^3 / 66.9 TFLOP/s each.
  for (const GpuSpec& g : {h100, h200}) {
    auto cm = make_compute_model("auto", g);
    for (Pass p : {Pass::Fwd, Pass::BwdData, Pass::BwdWeight}) {
      const KernelDesc k = kernel(KernelKind::Gemm, p, MathMode::FP32, {16384, 16384, 16384, 0, 1});
      CHECK(k.flops / cm->time(k).seconds <= g.peak_flops[static_cast<int>(MathMode::FP32)]);
    }
    // A 1x1 convolution moving 3.5 GB: never faster than HBM.
    const KernelDesc c = kernel(KernelKind::Conv2d, Pass::Fwd, MathMode::TF32, {256, 1024, 112, 112, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1});
    CHECK(c.bytes / cm->time(c).seconds <= g.memory_bandwidth_Bps);
  }
}

TEST_CASE("physics: kernels beyond the training range are flagged, those inside are not") {
  mlp::MlpComputeModel model(load_gpu("h100-sxm"));
  std::vector<KernelDesc> ks = {kernel(KernelKind::Gemm, Pass::Fwd, MathMode::BF16, {64, 1000, 2048, 0, 1}),               // resnet50's fc
                                kernel(KernelKind::Gemm, Pass::Fwd, MathMode::FP32, {65536, 65536, 65536, 0, 1}),          // far beyond
                                kernel(KernelKind::Conv2d, Pass::Fwd, MathMode::TF32, {4096, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1})};
  std::vector<KernelTime> t;
  model.times(ks, t);
  CHECK(t[0].source == TimeSource::Mlp);
  CHECK(t[0].in_range);
  CHECK_FALSE(t[1].in_range);
  CHECK_FALSE(t[2].in_range);
}

TEST_CASE("physics: dtsim kernel says what priced a kernel, whether it was inside the measured range, and its floor") {
  auto r = study_test::run_dtsim("kernel --gpu h100-sxm --kind gemm --pass fwd --shape M=16384,N=16384,K=16384 --format json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("source") == "mlp");
  CHECK(j.at("in_range") == false);  // 8.8 TFLOP a call: beyond the 1.1 TFLOP measured
  CHECK(j.at("time_s").get<double>() >= j.at("physics_floor_s").get<double>());
  r = study_test::run_dtsim("kernel --gpu h100-sxm --kind gemm --pass fwd --shape M=64,N=1000,K=2048 --format json");
  REQUIRE(r.code == 0);
  CHECK(Json::parse(r.out).at("in_range") == true);  // resnet50's classifier at batch 64
}
