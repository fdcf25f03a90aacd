#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "workload/kernel_spec.hpp"
#include "workload/kernels.hpp"
#include "compute/compute_model.hpp"

using namespace dtsim;

static int count(const std::vector<KernelDesc>& ks, KernelKind kind, Pass pass) {
  int n = 0;
  for (const auto& k : ks) n += k.kind == kind && k.pass == pass;
  return n;
}

TEST_CASE("a convolution lowers to fwd, bwd_data and bwd_filter with 2*MACs FLOPs each") {
  auto g = model_from(R"([{"name":"c0","op":"conv2d","out_channels":8,"kernel":3,"padding":1,"bias":false},
                          {"name":"c1","op":"conv2d","out_channels":16,"kernel":3,"padding":1,"bias":false}])");
  auto k = lower_iteration(g, 4, Precision::FP32);
  // The first layer reads the model input, which needs no gradient: no bwd_data there.
  CHECK(count(k.forward, KernelKind::Conv2d, Pass::Fwd) == 2);
  CHECK(count(k.backward, KernelKind::Conv2d, Pass::BwdData) == 1);
  CHECK(count(k.backward, KernelKind::Conv2d, Pass::BwdFilter) == 2);
  const KernelDesc& f = k.forward[1];
  CHECK(f.math == MathMode::TF32);  // PyTorch's default fp32 runs convolutions in TF32
  CHECK(f.flops == Approx(2.0 * 4 * 16 * 32 * 32 * 8 * 9));
  CHECK(f.bytes == Approx(4.0 * (4 * 8 * 32 * 32 + 4 * 16 * 32 * 32 + 16 * 8 * 9)));
  CHECK(f.shape[0] == 4);
  CHECK(f.shape[1] == 8);
  CHECK(f.shape[4] == 16);
  // Backward runs in reverse layer order: c1's kernels first.
  CHECK(k.backward.front().layer == 1);
  CHECK(k.backward.back().layer == 0);
  CHECK(k.update.size() == 2);
}

TEST_CASE("linear layers lower to GEMMs: matmuls stay FP32 under fp32 and go bf16 under autocast") {
  auto g = model_from(R"([{"name":"f","op":"flatten"},{"name":"fc","op":"linear","out_features":10},{"name":"l","op":"softmax_cross_entropy"}])",
                      R"({"channels":64,"height":1,"width":1})");
  auto k = lower_iteration(g, 32, Precision::FP32);
  REQUIRE(count(k.forward, KernelKind::Gemm, Pass::Fwd) == 1);
  CHECK(count(k.backward, KernelKind::Gemm, Pass::BwdData) == 0);  // flatten of the input needs no gradient
  CHECK(count(k.backward, KernelKind::Gemm, Pass::BwdWeight) == 1);
  const KernelDesc& fwd = k.forward[0];
  CHECK(fwd.math == MathMode::FP32);
  CHECK(fwd.shape[0] == 32);
  CHECK(fwd.shape[1] == 10);
  CHECK(fwd.shape[2] == 64);
  CHECK(fwd.flops == Approx(2.0 * 32 * 10 * 64));
  auto kb = lower_iteration(g, 32, Precision::BF16);
  // Autocast casts the FP32 weight to bf16 (an FP32-math Eltwise kernel) before the GEMM.
  REQUIRE(kb.forward.size() >= 2);
  CHECK(kb.forward[0].kind == KernelKind::Eltwise);
  CHECK(std::string(kb.forward[0].variant) == "autocast");
  const KernelDesc& gb = kb.forward[1];
  REQUIRE(gb.kind == KernelKind::Gemm);
  CHECK(gb.math == MathMode::BF16);
  CHECK(gb.bytes == Approx(fwd.bytes / 2));
  CHECK(kb.update[0].math == MathMode::FP32);  // autocast keeps FP32 parameters
}

TEST_CASE("a tensor read by two layers gets one gradient accumulation") {
  auto g = tiny();
  auto k = lower_iteration(g, 2, Precision::FP32);
  int fanout = 0;
  for (const auto& l : g.layers) fanout += l.consumers > 1 ? l.consumers - 1 : 0;
  REQUIRE(fanout > 0);
  CHECK(count(k.backward, KernelKind::Add, Pass::Bwd) == fanout);
  // Adds have a forward kernel but pass their gradient through.
  int adds = 0;
  for (const auto& l : g.layers) adds += l.op == Op::Add;
  CHECK(count(k.forward, KernelKind::Add, Pass::Fwd) == adds);
}

TEST_CASE("the roofline takes the larger floor and adds the per-kernel cost") {
  GpuSpec gpu;
  gpu.peak_flops = {100e12, 400e12, 800e12, 800e12};
  gpu.memory_bandwidth_Bps = 2e12;
  gpu.compute_efficiency = 0.5;
  gpu.memory_efficiency = 1.0;
  gpu.kernel_overhead_s = 1e-6;
  auto model = make_compute_model("roofline", gpu);
  KernelDesc k{KernelKind::Gemm, Pass::Fwd, MathMode::FP32, 0, {}, "", 1e12, 1e9};
  KernelTime t = model->time(k);
  CHECK(t.seconds == Approx(1e12 / 50e12 + 1e-6));
  CHECK_FALSE(t.memory_bound);
  k.math = MathMode::BF16;
  k.bytes = 1e11;  // 50 ms of bytes against 2.5 ms of math
  t = model->time(k);
  CHECK(t.seconds == Approx(0.05 + 1e-6));
  CHECK(t.memory_bound);
  k.flops = 0;
  k.bytes = 0;
  CHECK(model->time(k).seconds == Approx(1e-6));  // an empty kernel still costs its launch
  CHECK_THROWS(make_compute_model("nope", gpu));
}

TEST_CASE("kind and pass names read back to the kind and pass they name") {
  for (int i = 0; i < kKernelKinds; ++i) CHECK(parse_kind(kind_name(static_cast<KernelKind>(i))) == static_cast<KernelKind>(i));
  for (int i = 0; i < kPasses; ++i) CHECK(parse_pass(pass_name(static_cast<Pass>(i))) == static_cast<Pass>(i));
  CHECK(!parse_kind("conv"));
  CHECK(!parse_pass("backward"));
}

TEST_CASE("math modes follow PyTorch's defaults per kind and precision") {
  const Precision precisions[] = {Precision::FP32, Precision::TF32, Precision::BF16, Precision::FP16};
  const MathMode conv[] = {MathMode::TF32, MathMode::TF32, MathMode::BF16, MathMode::FP16};
  const MathMode gemm[] = {MathMode::FP32, MathMode::TF32, MathMode::BF16, MathMode::FP16};
  const MathMode vector[] = {MathMode::FP32, MathMode::FP32, MathMode::BF16, MathMode::FP16};
  for (int p = 0; p < 4; ++p) {
    CHECK(math_mode_for(KernelKind::Conv2d, precisions[p]) == conv[p]);
    CHECK(math_mode_for(KernelKind::Gemm, precisions[p]) == gemm[p]);
    for (KernelKind k : {KernelKind::BatchNorm, KernelKind::Activation, KernelKind::Pool, KernelKind::Add, KernelKind::Concat,
                         KernelKind::Dropout, KernelKind::Eltwise})
      CHECK(math_mode_for(k, precisions[p]) == vector[p]);
    // PyTorch 2.11 runs log_softmax on the 16-bit logits under autocast (kernel_profile/transformers)
    CHECK(math_mode_for(KernelKind::SoftmaxCE, precisions[p]) == vector[p]);
    CHECK(math_mode_for(KernelKind::SgdUpdate, precisions[p]) == MathMode::FP32);
  }
}

TEST_CASE("a kernel spec fills PyTorch's defaults and names the flag to fix") {
  KernelDesc k = parse_kernel_spec({"conv2d", "fwd", "fp32", "N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", ""});
  CHECK(k.math == MathMode::TF32);
  CHECK(k.shape[7] == 1);   // stride_h
  CHECK(k.shape[9] == 1);   // pad_h
  CHECK(k.shape[13] == 1);  // groups
  CHECK(k.flops > 0);
  CHECK_THROWS_WITH(parse_kernel_spec({"dropout", "fwd", "fp32", "elements=4", ""}), Catch::Contains("--kind"));
  // concat: one kernel for all inputs (torch.cat), or one input's slice copy (the harness's lowering)
  CHECK(std::string(parse_kernel_spec({"concat", "fwd", "bf16", "elements=4", "slice"}).variant) == "slice");
  CHECK(std::string(parse_kernel_spec({"concat", "bwd", "bf16", "elements=4", ""}).variant).empty());
  CHECK_THROWS_WITH(parse_kernel_spec({"concat", "fwd", "bf16", "elements=4", "stack"}), Catch::Contains("--variant"));
  // conv2d: cuDNN's, or PyTorch's own depthwise kernels, which only a contiguous non-fp16 depthwise convolution runs
  const std::string dw = "N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,groups=64";
  CHECK(std::string(parse_kernel_spec({"conv2d", "fwd", "bf16", dw, "native_depthwise"}).variant) == kNativeDepthwise);
  CHECK(std::string(parse_kernel_spec({"conv2d", "fwd", "bf16", dw, ""}).variant).empty());
  CHECK_THROWS_WITH(parse_kernel_spec({"conv2d", "fwd", "fp16", dw, "native_depthwise"}), Catch::Contains("--variant"));
  CHECK_THROWS_WITH(parse_kernel_spec({"conv2d", "fwd", "bf16", "N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1", "native_depthwise"}),
                    Catch::Contains("--variant"));
  CHECK_THROWS_WITH(parse_kernel_spec({"conv2d", "fwd", "bf16", dw, "winograd"}), Catch::Contains("--variant"));
  CHECK_THROWS_WITH(parse_kernel_spec({"gemm", "bwd_filter", "fp32", "M=1,N=1,K=1", ""}), Catch::Contains("not a pass of gemm"));
  CHECK_THROWS_WITH(parse_kernel_spec({"pool", "fwd", "fp32", "N=1,C=1,H=4,W=4,R=2,S=2,Q=3", ""}), Catch::Contains("'Q' is not a field of pool"));
}

TEST_CASE("a kernel spec's memory format: contiguous by default, channels_last for conv2d only") {
  const std::string conv = "N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1";
  const KernelDesc nchw = parse_kernel_spec({"conv2d", "fwd", "bf16", conv, ""});
  const KernelDesc nhwc = parse_kernel_spec({"conv2d", "fwd", "bf16", conv, "", "channels_last"});
  CHECK(nchw.format == MemoryFormat::Contiguous);
  CHECK(nhwc.format == MemoryFormat::ChannelsLast);
  CHECK(parse_kernel_spec({"conv2d", "fwd", "bf16", conv, "", "contiguous"}).format == MemoryFormat::Contiguous);
  CHECK(nhwc.flops == nchw.flops);  // the same arithmetic and bytes: only the layout differs
  CHECK(nhwc.bytes == nchw.bytes);
  CHECK_THROWS_WITH(parse_kernel_spec({"gemm", "fwd", "bf16", "M=1,N=1,K=1", "", "channels_last"}),
                    Catch::Contains("--memory-format") && Catch::Contains("only for conv2d and batchnorm"));
  CHECK(parse_kernel_spec({"batchnorm", "fwd", "bf16", "N=1,C=1,H=4,W=4", "", "channels_last"}).format == MemoryFormat::ChannelsLast);
  CHECK_THROWS_WITH(parse_kernel_spec({"pool", "fwd", "bf16", "N=1,C=1,H=4,W=4,R=2,S=2", "max", "channels_last"}),
                    Catch::Contains("--memory-format"));
  CHECK_THROWS_WITH(parse_kernel_spec({"conv2d", "fwd", "bf16", conv, "", "nhwc"}),
                    Catch::Contains("--memory-format") && Catch::Contains("unknown memory format 'nhwc'"));
}
