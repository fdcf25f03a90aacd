#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "core/error.hpp"
#include "helpers.hpp"
#include "mlp_skeleton.hpp"
#include "compute/impl/mlp/dataset.hpp"
#include "compute/impl/mlp/features.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "compute/impl/roofline/roofline_model.hpp"

using namespace dtsim;
using namespace dtsim::mlp;
namespace fs = std::filesystem;

TEST_CASE("features: one value per name for every kernel the zoo lowers to") {
  GpuSpec gpu = load_gpu("h100-sxm");
  Baseline base = baseline_of(gpu);
  for (const char* m : {"resnet50", "googlenet", "alexnet"})
    for (Precision p : {Precision::FP32, Precision::BF16}) {
      auto ks = lower_iteration(load_model(m), 8, p);
      for (const auto* list : {&ks.forward, &ks.backward, &ks.update})
        for (const auto& k : *list) {
          std::vector<double> f;
          features(k, gpu.sm_count, base, f);
          REQUIRE(f.size() == feature_names(k.kind).size());
          for (double x : f) REQUIRE(std::isfinite(x));
          // The optional features follow the standard ones, which they leave as they were.
          std::vector<double> fx;
          features(k, gpu.sm_count, base, fx, true);
          REQUIRE(fx.size() == feature_names(k.kind).size() + extra_feature_names(k.kind).size());
          for (size_t i = 0; i < f.size(); ++i) REQUIRE(fx[i] == f[i]);
          for (double x : fx) REQUIRE(std::isfinite(x));
        }
    }
}

TEST_CASE("predictor keys follow the harness's math modes") {
  auto ks = lower_iteration(load_model("resnet18"), 4, Precision::FP32);
  CHECK(predictor_key(ks.forward[0]) == "conv2d/fwd/fp32");  // TF32 convolutions are PyTorch's fp32
  bool saw_pool = false;
  for (const auto& k : ks.forward)
    if (k.kind == KernelKind::Pool) {
      saw_pool = true;
      CHECK((predictor_key(k) == "pool/fwd/fp32/max" || predictor_key(k) == "pool/fwd/fp32/avg"));
    }
  CHECK(saw_pool);
  auto tf = lower_iteration(load_model("resnet18"), 4, Precision::TF32);
  for (const auto& k : tf.forward)
    if (k.kind == KernelKind::Gemm) CHECK(predictor_key(k).empty());  // no TF32 matmul data: roofline
}

TEST_CASE("datasets: harness CSV rows become kernels costed like lowered ones") {
  auto conv = read_kernel_csv(std::string(DTSIM_TEST_DATA) + "/kernels/conv2d.csv");
  REQUIRE(conv.size() == 2);
  CHECK(conv[0].key == "conv2d/fwd/fp32");
  CHECK(conv[0].kernel.math == MathMode::TF32);
  CHECK(conv[1].key == "conv2d/bwd_data/bf16");
  CHECK(conv[0].time_s == Approx(1e-4));
  // Same FLOPs as resnet's 3x3 64->64 convolution at batch 32.
  CHECK(conv[0].kernel.flops == Approx(2.0 * 32 * 64 * 56 * 56 * 64 * 9));
  auto gemm = read_kernel_csv(std::string(DTSIM_TEST_DATA) + "/kernels/gemm.csv");
  REQUIRE(gemm.size() == 2);
  auto lowered = lower_iteration(load_model("resnet50"), 32, Precision::FP32);
  const KernelDesc* fc_fwd = nullptr;
  for (const auto& k : lowered.forward)
    if (k.kind == KernelKind::Gemm) fc_fwd = &k;
  REQUIRE(fc_fwd);
  CHECK(gemm[0].kernel.shape == fc_fwd->shape);
  CHECK(gemm[0].kernel.bytes == Approx(fc_fwd->bytes));
  CHECK(shape_hash(gemm[0].kernel) == shape_hash(gemm[1].kernel));  // one layer, whatever the pass
}

TEST_CASE("datasets: malformed files are input errors naming file and line") {
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_bad_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  std::ofstream(dir + "/a.csv") << "kind,pass,math_mode,time_median_s,elements,op\nactivation,fwd,fp32,abc,100,relu\n";
  CHECK_THROWS_WITH(read_kernel_csv(dir + "/a.csv"), Catch::Matchers::Contains("a.csv:2") && Catch::Matchers::Contains("time_median_s"));
  std::ofstream(dir + "/b.csv") << "kind,pass,time_median_s\n";
  CHECK_THROWS_WITH(read_kernel_csv(dir + "/b.csv"), Catch::Matchers::Contains("math_mode"));
  std::ofstream(dir + "/c.csv") << "kind,pass,math_mode,time_median_s,elements,op\nactivation,fwd,fp64,1e-5,100,relu\n";
  CHECK_THROWS_WITH(read_kernel_csv(dir + "/c.csv"), Catch::Matchers::Contains("fp64"));
  fs::remove_all(dir);
}

TEST_CASE("datasets: convolutions on channels_last tensors get the NHWC keys, by impl or layout column") {
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_nhwc_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const std::string head = "kind,pass,math_mode,N,C,H,W,K,R,S,stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,groups,";
  const std::string shape = "32,64,56,56,64,3,3,1,1,1,1,1,1,1,";
  std::ofstream(dir + "/impl.csv") << head << "impl,time_median_s\n"
                                   << "conv2d,fwd,bf16," << shape << "cudnn_graph_autotune_nhwc,5e-5\n"
                                   << "conv2d,fwd,bf16," << shape << "cudnn_graph_autotune,1e-4\n";
  auto rows = read_kernel_csv(dir + "/impl.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key == "conv2d/fwd/bf16/nhwc");
  CHECK(rows[0].kernel.format == MemoryFormat::ChannelsLast);
  CHECK(rows[1].key == "conv2d/fwd/bf16");
  CHECK(rows[0].kernel.flops == rows[1].kernel.flops);
  CHECK(rows[0].kernel.bytes == rows[1].kernel.bytes);
  CHECK(is_heldout(rows[0].kernel) == is_heldout(rows[1].kernel));  // one shape, one part of the split
  // The features do not see the format: the predictor key is what tells the layouts apart.
  const GpuSpec gpu = load_gpu("h100-sxm");
  std::vector<double> f0, f1;
  features(rows[0].kernel, gpu.sm_count, baseline_of(gpu), f0, true);
  features(rows[1].kernel, gpu.sm_count, baseline_of(gpu), f1, true);
  CHECK(f0 == f1);
  // A layout column decides where a file has one: batchnorm has NHWC predictors too (PyTorch's
  // channels_last kernels, per shape); other kinds' NHWC rows have no predictor to train and are skipped.
  std::ofstream(dir + "/layout.csv") << "kind,pass,math_mode,layout,N,C,H,W,time_median_s\n"
                                     << "batchnorm,fwd,bf16,nhwc,32,64,56,56,1e-5\nbatchnorm,fwd,bf16,nchw,32,64,56,56,2e-5\n";
  rows = read_kernel_csv(dir + "/layout.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key == "batchnorm/fwd/bf16/nhwc");
  CHECK(rows[0].time_s == Approx(1e-5));
  CHECK(rows[1].key == "batchnorm/fwd/bf16");
  std::ofstream(dir + "/act.csv") << "kind,pass,math_mode,layout,op,elements,time_median_s\n"
                                  << "activation,fwd,bf16,nhwc,relu,1048576,1e-5\nactivation,fwd,bf16,nchw,relu,1048576,2e-5\n";
  rows = read_kernel_csv(dir + "/act.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].time_s == Approx(2e-5));
  std::ofstream(dir + "/bad.csv") << "kind,pass,math_mode,layout,N,C,H,W,time_median_s\nbatchnorm,fwd,bf16,nwhc,32,64,56,56,1e-5\n";
  CHECK_THROWS_WITH(read_kernel_csv(dir + "/bad.csv"), Catch::Matchers::Contains("bad.csv:2, column layout") && Catch::Matchers::Contains("nwhc"));
  fs::remove_all(dir);
}

// A two-layer network with known weights: out = w2 . relu(W1 x' + b1) + b2 on standardised x'.
static Mlp tiny_mlp(const std::string& key, KernelKind kind) {
  test_mlp::RowMajor w1 = Eigen::MatrixXf::Zero(2, test_mlp::features_of(kind));
  w1(0, 0) = 0.5f;   // relu(0.5 * feature 0)
  w1(1, 0) = -1.0f;  // relu(-feature 0) = 0 for positive features
  test_mlp::RowMajor w2(1, 2);
  w2 << 0.1f, 3.0f;
  return test_mlp::with_layers(key, kind, {w1, w2}, {Eigen::VectorXf::Zero(2), Eigen::VectorXf::Constant(1, 0.25f)});
}

TEST_CASE("MLP inference: known weights, written and read back") {
  std::string root = (fs::temp_directory_path() / ("dtsim_mlp_" + std::to_string(::getpid()))).string();
  GpuSpec gpu = load_gpu("h100-sxm");
  Baseline base = baseline_of(gpu);
  Json manifest{{"format", 1}, {"gpu", "h100-sxm"}, {"baseline", baseline_json(base, gpu.sm_count)}};
  // A subnormal weight (training leaves thousands) is read back as zero: it cannot change a float
  // sum of normal values, and multiplying by it is slow on many x86 cores (compute/impl/mlp/mlp.cpp).
  Mlp tiny = tiny_mlp("add/fwd/fp32", KernelKind::Add);
  const float subnormal = std::numeric_limits<float>::denorm_min() * 1000;
  REQUIRE(std::fpclassify(subnormal) == FP_SUBNORMAL);
  tiny.weights[0](0, 1) = subnormal;
  tiny.weights[0](1, 1) = 2 * std::numeric_limits<float>::min();  // the smallest normals stay
  write_predictors(root + "/h100-sxm", manifest, {tiny});
  PredictorSet set = load_predictors(root + "/h100-sxm");
  REQUIRE(set.find("add/fwd/fp32"));
  CHECK(set.find("add/fwd/fp32")->weights[0](0, 1) == 0.0f);
  CHECK(set.find("add/fwd/fp32")->weights[0](1, 1) == 2 * std::numeric_limits<float>::min());
  KernelDesc k{KernelKind::Add, Pass::Fwd, MathMode::FP32, -1, {1 << 20, 2}, "", 0, 0};
  set_cost(k);
  std::vector<double> t;
#if defined(__SSE2__)
  const unsigned mxcsr = _mm_getcsr();  // inference flushes subnormals, then restores the caller's mode
  set.predict({k}, t);
  CHECK(_mm_getcsr() == mxcsr);
#endif
  set.predict({k}, t);
  // feature 0 of an add is log2(elements) = 20: out = 0.1 * relu(10) + 3 * relu(-20) + 0.25 = 1.25.
  CHECK(t[0] == Approx(base.seconds(k) * std::exp(1.25)).epsilon(1e-5));
  KernelDesc uncovered = k;
  uncovered.kind = KernelKind::Concat;
  set.predict({uncovered}, t);
  CHECK(std::isnan(t[0]));

  // The compute model: the measured GPU's own predictor, and the roofline ratio elsewhere.
  ::setenv("DTSIM_PREDICTOR_DIR", root.c_str(), 1);
  MlpComputeModel on_h100(gpu);
  CHECK(on_h100.covers(k));
  CHECK(on_h100.time(k).seconds == Approx(base.seconds(k) * std::exp(1.25)).epsilon(1e-5));
  GpuSpec h200 = load_gpu("h200-sxm");
  MlpComputeModel on_h200(h200);
  CHECK(on_h200.note().find("scaled") != std::string::npos);
  // A memory-bound kernel: the H200's roofline time, plus the H100 time beyond the H100's roofline at
  // the ratio of the SMs' issue rates (count x clock: 1, the same SMs and clock), not at the bandwidth's.
  const double fixed_diff_s = h200.kernel_overhead_s - gpu.kernel_overhead_s;
  REQUIRE(fixed_diff_s > 0);  // the H200 machine's measured extra 0.64 us (configs/gpus/h200-sxm.json)
  const KernelTime roof_h100 = RooflineModel(gpu).time(k), roof_h200 = RooflineModel(h200).time(k);
  REQUIRE(roof_h100.memory_bound);
  REQUIRE(on_h100.time(k).seconds > roof_h100.seconds);
  REQUIRE(h200.sm_count * h200.sm_clock_Hz == gpu.sm_count * gpu.sm_clock_Hz);
  CHECK(on_h200.time(k).seconds == Approx(roof_h200.seconds + (on_h100.time(k).seconds - roof_h100.seconds)).epsilon(1e-5));
  CHECK(roof_h200.seconds < roof_h100.seconds);  // H200 moves bytes faster
  CHECK(on_h200.time(k).seconds < on_h100.time(k).seconds);
  // Without the clocks (a preset that lacks sm_clock_MHz) the whole time scales by the roofline ratio.
  GpuSpec h200_unclocked = h200;
  h200_unclocked.sm_clock_Hz = 0;
  MlpComputeModel on_unclocked(h200_unclocked);
  const double ratio = (roof_h200.seconds - fixed_diff_s) / roof_h100.seconds;
  CHECK(on_unclocked.time(k).seconds == Approx(on_h100.time(k).seconds * ratio + fixed_diff_s).epsilon(1e-5));
  // A kernel without a predictor falls back to the target's roofline.
  CHECK(on_h200.time(uncovered).seconds == Approx(RooflineModel(h200).time(uncovered).seconds));
  ::unsetenv("DTSIM_PREDICTOR_DIR");
  fs::remove_all(root);
}

TEST_CASE("MLP inference: a packed ensemble's block-diagonal layers give what the dense product gives") {
  // Two members of 3 -> 2 -> 2 -> 1 packed as 3 -> 4 -> 4 -> 1: the middle layer is two 2 x 2 blocks.
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Mlp m;
  m.feature_mean = Eigen::VectorXf::Zero(3);
  m.feature_std = Eigen::VectorXf::Ones(3);
  RowMat w0(4, 3), w1(4, 4), w2(1, 4);
  w0 << 0.5f, -1.0f, 0.25f, 1.0f, 0.5f, -0.5f, -0.25f, 1.0f, 0.75f, 0.3f, 0.2f, 0.1f;
  w1 << 1.0f, -2.0f, 0, 0, 0.5f, 1.5f, 0, 0, 0, 0, -1.0f, 0.75f, 0, 0, 2.0f, 0.25f;
  w2 << 0.5f, 0.25f, -0.5f, 0.125f;
  m.weights = {w0, w1, w2};
  m.biases = {Eigen::VectorXf::Constant(4, 0.1f), Eigen::VectorXf::Constant(4, -0.2f), Eigen::VectorXf::Constant(1, 0.3f)};
  CHECK(diagonal_block_count(w0) == 1);  // the first layer sees every feature
  CHECK(diagonal_block_count(w1) == 2);
  CHECK(diagonal_block_count(w2) == 1);
  RowMat dense_w1 = w1;
  dense_w1(0, 3) = 1e-3f;  // one entry outside the blocks makes it dense
  CHECK(diagonal_block_count(dense_w1) == 1);

  Eigen::MatrixXf x(3, 3);
  x << 1, 2, 3, -1, 0.5f, 2, 4, -3, 0.25f;
  Eigen::VectorXf dense, blocked;
  m.predict_log_ratio(x, dense);  // no block counts: dense products
  m.diagonal_blocks = {1, 2, 1};
  m.predict_log_ratio(x, blocked);
  REQUIRE(blocked.size() == 3);
  for (Eigen::Index r = 0; r < 3; ++r) {
    // By hand for the first row: h0 = relu(w0 x + 0.1), h1 = relu(w1 h0 - 0.2), out = w2 h1 + 0.3.
    Eigen::VectorXf h0 = (w0 * x.row(r).transpose() + Eigen::VectorXf::Constant(4, 0.1f)).cwiseMax(0.0f);
    Eigen::VectorXf h1 = (w1 * h0 + Eigen::VectorXf::Constant(4, -0.2f)).cwiseMax(0.0f);
    const float want = (w2 * h1)(0) + 0.3f;
    CHECK(dense(r) == Approx(want).epsilon(1e-6));
    CHECK(blocked(r) == Approx(want).epsilon(1e-6));
  }

  // On disk only the diagonal blocks of a packed layer are stored (the manifest's weight_blocks), and
  // they read back as the same matrices: 3x4 + 4 dense, 2 blocks of 2x2 + 4, 4 + 1 = 33 floats, not 41.
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_blocks_" + std::to_string(::getpid()))).string();
  GpuSpec gpu = load_gpu("h100-sxm");
  m.key = "add/fwd/fp32";
  m.feature_names = {"a", "b", "c"};
  write_predictors(dir, Json{{"format", 1}, {"gpu", "h100-sxm"}, {"baseline", baseline_json(baseline_of(gpu), gpu.sm_count)}}, {m});
  CHECK(fs::file_size(dir + "/weights.bin") == 33 * sizeof(float));
  Json written = dtsim::load_json_file(dir + "/manifest.json");
  CHECK(written["predictors"][0]["weight_blocks"] == Json::array({1, 2, 1}));
  PredictorSet set = load_predictors(dir);
  const Mlp& back = set.by_key.at("add/fwd/fp32");
  REQUIRE(back.weights.size() == 3);
  CHECK(back.weights[0] == w0);
  CHECK(back.weights[1] == w1);
  CHECK(back.weights[2] == w2);
  CHECK(back.diagonal_blocks == std::vector<int>{1, 2, 1});
  // A block count that does not divide its layer is an input error naming the field.
  written["predictors"][0]["weight_blocks"] = Json::array({1, 3, 1});
  { std::ofstream(dir + "/manifest.json") << written.dump(); }
  CHECK_THROWS_WITH(load_predictors(dir), Catch::Matchers::Contains("weight_blocks"));
  fs::remove_all(dir);
}

TEST_CASE("features: a GEMM's optional features are its alignment, tiles and matrix sizes") {
  GpuSpec gpu = load_gpu("h100-sxm");
  Baseline base = baseline_of(gpu);
  KernelDesc k{KernelKind::Gemm, Pass::Fwd, MathMode::FP32, 0, {64, 1000, 2048, 0, 1}, "", 0, 0};
  set_cost(k);
  std::vector<double> f;
  features(k, gpu.sm_count, base, f, true);
  const auto& names = extra_feature_names(KernelKind::Gemm);
  REQUIRE(f.size() == feature_names(KernelKind::Gemm).size() + names.size());
  auto at = [&](const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    REQUIRE(it != names.end());
    return f[feature_names(KernelKind::Gemm).size() + (it - names.begin())];
  };
  CHECK(at("m_pow2") == 6);   // 64
  CHECK(at("n_pow2") == 3);   // 1000 = 8 x 125
  CHECK(at("k_pow2") == 7);   // 2048, capped at 128
  CHECK(at("tiles_64x64") == Approx(4));  // 1 x 16 tiles
  CHECK(at("fill_64x64") == Approx(16.0 / gpu.sm_count));
  CHECK(at("tiles_256x128") == Approx(std::log2(8.0)));  // 1 x 8 tiles (M padded up to one 256-row tile)
  CHECK(at("a_bytes") == Approx(std::log2(64.0 * 2048 * 4)));
  CHECK(at("c_bytes") == Approx(std::log2(64.0 * 1000 * 4)));
}

TEST_CASE("MLP inference: a predictor trained with the optional features sees them") {
  GpuSpec gpu = load_gpu("h100-sxm");
  Baseline base = baseline_of(gpu);
  Mlp m = tiny_mlp("conv2d/fwd/bf16", KernelKind::Conv2d);
  const auto& extra = extra_feature_names(KernelKind::Conv2d);
  REQUIRE(!extra.empty());
  m.feature_names.insert(m.feature_names.end(), extra.begin(), extra.end());
  const Eigen::Index n = static_cast<Eigen::Index>(m.feature_names.size());
  m.feature_mean = Eigen::VectorXf::Zero(n);
  m.feature_std = Eigen::VectorXf::Ones(n);
  m.weights[0] = Eigen::MatrixXf::Zero(2, n);
  const Eigen::Index npq = static_cast<Eigen::Index>(feature_names(KernelKind::Conv2d).size() + 5);
  REQUIRE(m.feature_names[npq] == "npq_pow2");
  m.weights[0](0, npq) = 1.0f;  // relu(npq_pow2)
  PredictorSet set;
  set.sm_count = gpu.sm_count;
  set.baseline = base;
  set.by_key.emplace(m.key, m);
  auto ks = lower_iteration(load_model("resnet50"), 32, Precision::BF16);
  const KernelDesc* first_conv = nullptr;
  for (const auto& x : ks.forward)
    if (!first_conv && x.kind == KernelKind::Conv2d) first_conv = &x;
  REQUIRE(first_conv);
  const KernelDesc& k = *first_conv;  // the 7x7 stem, batch 32
  REQUIRE(predictor_key(k) == m.key);
  std::vector<double> f, t;
  features(k, gpu.sm_count, base, f, true);
  CHECK(f[npq] == 7);  // N*P*Q = 32 * 112 * 112, a multiple of 128
  set.predict({k}, t);
  CHECK(t[0] == Approx(base.seconds(k) * std::exp(0.1 * 7 + 0.25)).epsilon(1e-5));
}

TEST_CASE("predictor folders: malformed manifests are input errors") {
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_manifest_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  std::ofstream(dir + "/manifest.json") << R"({"gpu":"x","predictors":[]})";
  std::ofstream(dir + "/weights.bin") << "";
  CHECK_THROWS_AS(load_predictors(dir), InputError);
  fs::remove(dir + "/weights.bin");
  CHECK_THROWS_WITH(load_predictors(dir), Catch::Matchers::Contains("weights.bin"));
  fs::remove_all(dir);
}

TEST_CASE("what-if: a measured kernel is scaled only to a GPU that runs it on the same kind of unit") {
  // h100-sxm's "fp32" convolutions ran in TF32 on tensor cores; V100 has no TF32 and runs them on its
  // FP32 units, where H100's tensor-core efficiency says nothing: the target's roofline. A100 has TF32
  // tensor cores (scaled), and a strict-FP32 matmul runs on FP32 units on both (scaled).
  const GpuSpec h100 = load_gpu("h100-sxm"), a100 = load_gpu("a100-sxm"), v100 = load_gpu("v100-sxm2");
  KernelDesc conv{KernelKind::Conv2d, Pass::Fwd, MathMode::TF32, 0, {64, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1}, "", 0, 0};
  KernelDesc gemm{KernelKind::Gemm, Pass::Fwd, MathMode::FP32, 0, {64, 1000, 2048, 0, 1}, "", 0, 0};
  set_cost(conv);
  set_cost(gemm);
  MlpComputeModel on_h100(h100), on_a100(a100), on_v100(v100);
  REQUIRE(on_h100.covers(conv));
  REQUIRE(on_h100.covers(gemm));
  auto scaled = [&](const GpuSpec& g, const KernelDesc& k) {
    const double fixed_diff_s = g.kernel_overhead_s - h100.kernel_overhead_s;
    return on_h100.time(k).seconds * (RooflineModel(g).time(k).seconds - fixed_diff_s) / RooflineModel(h100).time(k).seconds + fixed_diff_s;
  };
  CHECK(on_a100.covers(conv));
  CHECK(on_a100.time(conv).seconds == Approx(scaled(a100, conv)).epsilon(1e-6));
  CHECK_FALSE(on_v100.covers(conv));
  CHECK(on_v100.time(conv).seconds == Approx(RooflineModel(v100).time(conv).seconds).epsilon(1e-12));
  CHECK(on_v100.time(conv).seconds < scaled(v100, conv));  // H100's TF32 shortfall would be carried over
  CHECK(on_v100.covers(gemm));
  CHECK(on_v100.time(gemm).seconds == Approx(scaled(v100, gemm)).epsilon(1e-6));
  CHECK(on_v100.note().find("tensor cores on only one of h100-sxm and v100-sxm2") != std::string::npos);
  CHECK(on_a100.note().find("tensor cores") == std::string::npos);
}

TEST_CASE("channels_last convolutions take the NHWC predictors, contiguous ones keep their times") {
  // resnet50's 3x3 64->64 convolution at batch 128, bf16, inside both h100-sxm predictors' training range.
  const GpuSpec h100 = load_gpu("h100-sxm");
  MlpComputeModel model(h100);
  const PredictorSet own = load_predictors(pretrained_root() + "/h100-sxm");
  // The contiguous kernels' times before the NHWC predictors were shipped (dtsim kernel at commit 567b3da).
  const std::pair<Pass, double> before[] = {
      {Pass::Fwd, 0.0001823029404736784}, {Pass::BwdData, 0.00018769070304611892}, {Pass::BwdFilter, 0.00018691983553272305}};
  for (const auto& [pass, seconds] : before) {
    KernelDesc nchw{KernelKind::Conv2d, pass, MathMode::BF16, 0, {128, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1}, "", 0, 0};
    set_cost(nchw);
    KernelDesc nhwc = nchw;
    nhwc.format = MemoryFormat::ChannelsLast;
    INFO(predictor_key(nhwc));
    CHECK(predictor_key(nhwc) == predictor_key(nchw) + "/nhwc");
    REQUIRE(own.find(predictor_key(nhwc)) != nullptr);
    const KernelTime t_nchw = model.time(nchw), t_nhwc = model.time(nhwc);
    // To float32 inference's last digits: a kernel inferred alone now sums its products in the order
    // it would in a longer list (mlp.cpp, predict_log_ratio: padded to whole panels), which moved
    // these by up to 1.7e-7 of them; 1e-9 before.
    CHECK(t_nchw.seconds == Approx(seconds).epsilon(1e-6));
    CHECK(t_nhwc.source == TimeSource::Mlp);
    CHECK(t_nhwc.in_range);
    std::vector<double> direct;
    own.predict({nhwc}, direct);  // h100-sxm's own NHWC predictor, unscaled
    CHECK(t_nhwc.seconds == Approx(direct[0]).epsilon(1e-9));
    CHECK(t_nhwc.seconds < t_nchw.seconds);  // cuDNN's transposes around NCHW tensors gone
    // h200-sxm has NHWC and NCHW predictors of its own (the NCHW ones since 2026-11-28), each key its own.
    MlpComputeModel on_h200(load_gpu("h200-sxm"));
    const PredictorSet h200_set = load_predictors(pretrained_root() + "/h200-sxm");
    REQUIRE(h200_set.find(predictor_key(nhwc)) != nullptr);
    REQUIRE(h200_set.find(predictor_key(nchw)) != nullptr);
    h200_set.predict({nhwc}, direct);
    CHECK(on_h200.time(nhwc).seconds == Approx(direct[0]).epsilon(1e-9));
    h200_set.predict({nchw}, direct);
    CHECK(on_h200.time(nchw).seconds == Approx(direct[0]).epsilon(1e-9));
    // Another GPU without predictors of its own takes a measured GPU's NHWC predictor, scaled.
    MlpComputeModel on_a100(load_gpu("a100-sxm"));
    CHECK(on_a100.covers(nhwc));
    const KernelTime a_nhwc = on_a100.time(nhwc);
    CHECK(a_nhwc.source == TimeSource::Mlp);
    CHECK(a_nhwc.seconds < on_a100.time(nchw).seconds);
  }
}

TEST_CASE("ratio predictors: a channels_last time is the contiguous twin's time times the learned ratio") {
  // dtsim-train-predictors --ratio writes such predictors (manifest ratio_of; kernels_mlp/README.md,
  // "Tried: the ratio formulation"). Here one with a known output: log ratio = log(0.5) for every kernel.
  const std::string root = (fs::temp_directory_path() / ("dtsim_ratio_" + std::to_string(::getpid()))).string();
  const GpuSpec h100 = load_gpu("h100-sxm");
  const PredictorSet shipped = load_predictors(pretrained_root() + "/h100-sxm");
  KernelDesc nchw{KernelKind::Conv2d, Pass::Fwd, MathMode::BF16, 0, {128, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1}, "", 0, 0};
  set_cost(nchw);
  KernelDesc nhwc = nchw;
  nhwc.format = MemoryFormat::ChannelsLast;
  Mlp ratio;
  ratio.key = predictor_key(nhwc);
  ratio.ratio_of = predictor_key(nchw);
  ratio.feature_names = feature_names(KernelKind::Conv2d);
  const Eigen::Index nf = static_cast<Eigen::Index>(ratio.feature_names.size());
  ratio.feature_mean = Eigen::VectorXf::Zero(nf);
  ratio.feature_std = Eigen::VectorXf::Ones(nf);
  ratio.target_mean = std::log(0.5f);
  ratio.weights.push_back(Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(1, nf));
  ratio.biases.push_back(Eigen::VectorXf::Zero(1));
  std::vector<Mlp> mlps;
  for (const auto& [key, m] : shipped.by_key)
    if (key != ratio.key) mlps.push_back(m);
  mlps.push_back(ratio);
  Json manifest = shipped.manifest;
  manifest.erase("predictors");
  write_predictors(root + "/h100-sxm", manifest, mlps);
  const PredictorSet set = load_predictors(root + "/h100-sxm");
  REQUIRE(set.has_ratio_predictors);
  REQUIRE(set.find(ratio.key)->ratio_of == "conv2d/fwd/bf16");
  std::vector<double> t;
  set.predict({nhwc}, t);  // no base given: not covered
  CHECK(std::isnan(t[0]));

  ::setenv("DTSIM_PREDICTOR_DIR", root.c_str(), 1);
  {
    MlpComputeModel on_h100(h100);
    REQUIRE(on_h100.covers(nhwc));
    const KernelTime base = on_h100.time(nchw), composed = on_h100.time(nhwc);
    CHECK(composed.source == TimeSource::Mlp);
    CHECK(composed.seconds == Approx(0.5 * base.seconds).epsilon(1e-6));
    CHECK(predict_on_own_gpu(set, {nhwc})[0] == Approx(composed.seconds).epsilon(1e-6));
    // Another GPU: the measured GPU's composed time, scaled by the roofline ratio like any other.
    const GpuSpec a100 = load_gpu("a100-sxm");
    MlpComputeModel on_a100(a100);
    REQUIRE(on_a100.covers(nhwc));
    const double fixed_diff_s = a100.kernel_overhead_s - h100.kernel_overhead_s;
    const double scale = (RooflineModel(a100).time(nhwc).seconds - fixed_diff_s) / RooflineModel(h100).time(nhwc).seconds;
    CHECK(on_a100.time(nhwc).seconds == Approx(composed.seconds * scale + fixed_diff_s).epsilon(1e-6));
  }
  ::unsetenv("DTSIM_PREDICTOR_DIR");
  // A ratio predictor must name another predictor.
  Json bad = load_json_file(root + "/h100-sxm/manifest.json");
  for (Json& p : bad["predictors"])
    if (p["key"] == ratio.key) p["ratio_of"] = ratio.key;
  std::ofstream(root + "/h100-sxm/manifest.json") << bad.dump();
  CHECK_THROWS_AS(load_predictors(root + "/h100-sxm"), InputError);
  fs::remove_all(root);
}

TEST_CASE("datasets: a file stored gzip-compressed is read, hashed and listed under its plain name") {
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_gz_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const std::string text = "kind,pass,math_mode,op,elements,time_median_s\nconcat,fwd,bf16,slice,50176,4.3e-06\nadd,fwd,fp32,,1000,3e-06\n";
  std::ofstream(dir + "/plain.csv") << text;
  std::ofstream(dir + "/packed.csv") << text;
  REQUIRE(std::system(("gzip -n " + dir + "/packed.csv").c_str()) == 0);
  REQUIRE(!fs::exists(dir + "/packed.csv"));
  const auto plain = read_kernel_csv(dir + "/plain.csv");
  const auto packed = read_kernel_csv(dir + "/packed.csv");  // finds packed.csv.gz
  REQUIRE(packed.size() == 2);
  CHECK(packed[0].key == "concat/fwd/bf16/slice");  // the harness's per-input copy has its own predictors
  CHECK(packed[0].kernel.shape[0] == 50176);
  CHECK(packed[1].key == plain[1].key);
  CHECK(packed[1].time_s == plain[1].time_s);
  // The hash is the text's, so a manifest's data hashes stay valid when a file is compressed.
  CHECK(file_fnv1a64(dir + "/packed.csv") == file_fnv1a64(dir + "/plain.csv"));
  std::vector<std::string> files;
  const auto by_key = read_kernel_dataset(dir, &files);
  CHECK(std::find(files.begin(), files.end(), dir + "/packed.csv") != files.end());
  CHECK(by_key.at("concat/fwd/bf16/slice").size() == 2);
  CHECK_THROWS_WITH(read_kernel_csv(dir + "/missing.csv"), Catch::Matchers::Contains("missing.csv") && Catch::Matchers::Contains("cannot open"));
  fs::remove_all(dir);
}

TEST_CASE("datasets: depthwise convolutions PyTorch ran with its own kernels are marked as such") {
  // aten's use_cudnn_depthwise: contiguous depthwise convolutions go to cuDNN only in fp16 (by a shape
  // heuristic); fp32 and bf16 ones run PyTorch's conv_depthwise2d kernels, which no cuDNN-trained
  // predictor describes. The harness's rows (algo engN) are cuDNN's whatever the shape.
  std::string dir = (fs::temp_directory_path() / ("dtsim_mlp_dw_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const std::string head = "kind,pass,math_mode,N,C,H,W,K,R,S,stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,groups,algo,time_median_s\n";
  std::ofstream(dir + "/c.csv") << head << "conv2d,fwd,bf16,512,32,112,112,32,3,3,1,1,1,1,1,1,32,torch,2.5e-3\n"
                                << "conv2d,fwd,fp16,512,32,112,112,32,3,3,1,1,1,1,1,1,32,torch,1e-3\n"
                                << "conv2d,fwd,bf16,512,32,112,112,32,3,3,1,1,1,1,1,1,32,eng12,1e-3\n"
                                << "conv2d,fwd,bf16,512,32,112,112,64,3,3,1,1,1,1,1,1,1,torch,1e-3\n";
  const auto rows = read_kernel_csv(dir + "/c.csv");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].pytorch_native_depthwise);
  CHECK_FALSE(rows[1].pytorch_native_depthwise);  // fp16: cuDNN where its heuristic says so
  CHECK_FALSE(rows[2].pytorch_native_depthwise);  // the harness's cuDNN measurement
  CHECK_FALSE(rows[3].pytorch_native_depthwise);  // not grouped
  fs::remove_all(dir);
}
