// The ways users run a step (channels_last, AdamW/Adam, CUDA graphs, torch.compile), as
// properties over the zoo rather than examples: what each mode must never do.
#include <catch2/catch.hpp>
#include <algorithm>
#include <optional>
#include <set>

#include <string>

#include "core/error.hpp"
#include "network/cluster.hpp"
#include "sim/memory.hpp"
#include "sim/predict.hpp"
#include "sim/schedule.hpp"
#include "compute/kernel_key.hpp"
#include "study/validate.hpp"
#include "study/study.hpp"
#include "sim/framework.hpp"
#include "workload/kernel_spec.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

double iteration_s(const Graph& g, const ClusterSpec& c, int64_t batch, Precision p, const StepMode& mode) {
  TrainingConfig cfg;
  cfg.batch_per_gpu = batch;
  cfg.precision = p;
  cfg.mode = mode;
  return predict(g, c, cfg).iteration_s;
}

double bytes_of(const std::vector<KernelDesc>& ks, bool memory_bound_only) {
  double b = 0;
  for (const auto& k : ks)
    if (!memory_bound_only || (k.kind != KernelKind::Conv2d && k.kind != KernelKind::Gemm && k.kind != KernelKind::SoftmaxCE &&
                               std::string(k.variant) != "autocast"))
      b += k.bytes;
  return b;
}

}  // namespace

TEST_CASE("step modes: names are PyTorch's, and a wrong one names its flag") {
  StepModeNames n;
  const StepMode m = parse_step_mode(n);
  CHECK(m.memory_format == MemoryFormat::Contiguous);
  CHECK(m.optimizer == Optimizer::Sgd);
  CHECK(m.execution == Execution::Eager);
  n.memory_format = "nhwc";
  CHECK_THROWS_WITH(parse_step_mode(n), Catch::Contains("--memory-format") && Catch::Contains("channels_last"));
  n = {};
  n.optimizer = "lamb";
  CHECK_THROWS_WITH(parse_step_mode(n), Catch::Contains("--optimizer"));
  n = {};
  n.execution = "graphs";
  CHECK_THROWS_WITH(parse_step_mode(n), Catch::Contains("--execution"));
  for (const char* e : {"eager", "cuda-graphs", "compile", "compile-cuda-graphs"}) CHECK(execution_name(*parse_execution(e)) == std::string(e));
}

TEST_CASE("channels_last: every convolution and image kernel is NHWC, vectors and the optimizer are not") {
  for (const char* name : {"resnet50", "vgg16", "mobilenet_v2"}) {
    const Graph g = load_model(name);
    StepMode cl;
    cl.memory_format = MemoryFormat::ChannelsLast;
    const IterationKernels k = lower_iteration(g, 8, Precision::BF16, cl);
    for (const auto* list : {&k.forward, &k.backward}) {
      for (const auto& d : *list) {
        if (d.kind == KernelKind::Conv2d || d.kind == KernelKind::BatchNorm) CHECK(d.format == MemoryFormat::ChannelsLast);
        if (d.kind == KernelKind::Gemm || d.kind == KernelKind::SoftmaxCE) CHECK(d.format == MemoryFormat::Contiguous);
      }
    }
    for (const auto& d : k.update) CHECK(d.format == MemoryFormat::Contiguous);
    // The same kernels otherwise, plus the flatten's copy where a spatial image is flattened (vgg16's 7 x 7).
    const IterationKernels nchw = lower_iteration(g, 8, Precision::BF16);
    const size_t copies = std::string(name) == "vgg16" ? 1 : 0;
    CHECK(k.forward.size() == nchw.forward.size() + copies);
  }
}

TEST_CASE("optimizers: Adam(W) keeps two moments, and never costs less than SGD on any zoo model") {
  const ClusterSpec c = load_cluster("h100-sxm");
  for (const auto& name : zoo_models()) {
    const Graph g = load_model(name);
    StepMode sgd, adamw, adam;
    adamw.optimizer = Optimizer::AdamW;
    adam.optimizer = Optimizer::Adam;
    for (Precision p : {Precision::FP32, Precision::BF16}) {
      const double t_sgd = iteration_s(g, c, 32, p, sgd), t_adamw = iteration_s(g, c, 32, p, adamw), t_adam = iteration_s(g, c, 32, p, adam);
      INFO(name << " " << precision_name(p));
      CHECK(t_adamw >= t_sgd);
      CHECK(t_adam >= t_sgd);
      CHECK(t_adamw >= t_adam);  // the decoupled weight decay is one more pass
    }
    const MemoryFit m_sgd = memory_fit(g, 32, Precision::BF16, 1, c.gpu);
    const MemoryFit m_adam = memory_fit(g, 32, Precision::BF16, 1, c.gpu, default_memory_spec(), -1, Optimizer::AdamW);
    CHECK(m_adam.optimizer_bytes == Approx(2 * m_sgd.optimizer_bytes));
    CHECK(m_adam.allocated_peak_bytes > m_sgd.allocated_peak_bytes);
  }
}

TEST_CASE("CUDA graphs only take host costs away: never slower than eager, at any batch") {
  // The cluster's own framework section, and both PyTorch profiles (pytorch-ops prices what a
  // replayed compiled module still costs the host).
  for (const ClusterSpec& c : {load_cluster("h100-sxm"), apply_framework(load_cluster("h100-sxm"), load_framework("pytorch")),
                               apply_framework(load_cluster("h100-sxm"), load_framework("pytorch-ops"))})
  for (const auto& name : zoo_models()) {
    const Graph g = load_model(name);
    for (int64_t batch : {1, 16, 128}) {
      StepMode eager, graphs, reduce_overhead, compiled;
      graphs.execution = Execution::CudaGraphs;
      reduce_overhead.execution = Execution::CompileCudaGraphs;
      compiled.execution = Execution::Compile;
      INFO(c.framework.name << " " << name << " batch " << batch);
      const double t_eager = iteration_s(g, c, batch, Precision::BF16, eager);
      CHECK(iteration_s(g, c, batch, Precision::BF16, graphs) <= t_eager);
      CHECK(iteration_s(g, c, batch, Precision::BF16, reduce_overhead) <= iteration_s(g, c, batch, Precision::BF16, compiled));
    }
  }
}

TEST_CASE("torch.compile: fusion never moves more memory-bound bytes") {
  for (const auto& name : zoo_models()) {
    const Graph g = load_model(name);
    StepMode cl, compiled;
    cl.memory_format = MemoryFormat::ChannelsLast;
    compiled.execution = Execution::Compile;
    const IterationKernels e = lower_iteration(g, 16, Precision::BF16, cl), f = lower_iteration(g, 16, Precision::BF16, compiled);
    INFO(name);
    CHECK(bytes_of(f.forward, true) <= bytes_of(e.forward, true));
    CHECK(bytes_of(f.backward, true) <= bytes_of(e.backward, true));
    // Convolutions and matmuls are not fused: the same compute-bound work.
    CHECK(bytes_of(f.forward, false) - bytes_of(f.forward, true) == Approx(bytes_of(e.forward, false) - bytes_of(e.forward, true)));
  }
}

TEST_CASE("torch.compile: a bias add joins the pointwise kernel after it, a bias gradient becomes a reduction of its own") {
  // vgg16's convolutions have biases and a ReLU after each: Inductor runs the bias add inside the
  // ReLU's generated kernel (triton_poi_fused__to_copy_convolution_relu_*) and the bias gradient as a
  // generated reduction (triton_red_fused_convolution_backward_*).
  const Graph g = load_model("vgg16");
  StepMode compiled;
  compiled.execution = Execution::CompileCudaGraphs;
  const IterationKernels e = lower_iteration(g, 16, Precision::BF16), f = lower_iteration(g, 16, Precision::BF16, compiled);
  auto count = [](const std::vector<KernelDesc>& ks, const char* variant) {
    return std::count_if(ks.begin(), ks.end(), [&](const KernelDesc& k) { return std::string(k.variant) == variant; });
  };
  const auto convs = std::count_if(g.layers.begin(), g.layers.end(), [](const Layer& l) { return l.op == Op::Conv2d; });
  CHECK(count(e.forward, "bias_add") >= convs);
  CHECK(count(e.backward, "bias_grad") >= convs);
  for (const KernelDesc& k : f.forward)
    if (std::string(k.variant) == "bias_add") CHECK(g.layers[k.layer].op != Op::Conv2d);  // every conv is followed by its ReLU
  CHECK(count(f.backward, "bias_grad") == 0);
  CHECK(count(f.backward, "inductor_bias_grad") == convs + 3);  // and the classifier's three linear layers
  CHECK(count(f.backward, "inductor_reduction") == 0);           // no batchnorm
}

TEST_CASE("validate reads a run's execution object and names a wrong field") {
  const std::string head = R"({"schema":"dtsim-measured-run/1","source":"pytorch-ddp","framework":"pytorch","model":"resnet18",
    "gpus":1,"batch_per_gpu":32,"precision":"bf16","ddp":{"bucket_bytes":26214400,"first_bucket_bytes":1048576,"overlap":true},
    "iteration_time_s":{"median":0.01,"p10":0.01,"p90":0.01},"provenance":{"gpu":{"name":"NVIDIA H100 80GB HBM3"}},)";
  const MeasuredRun r = parse_measured_run(
      Json::parse(head + R"("execution":{"memory_format":"channels_last","optimizer":"adamw","execution":"eager","torch_compile":"none"}})"),
      "run.json");
  CHECK(r.mode.memory_format == "channels_last");
  CHECK(r.mode.optimizer == "adamw");
  CHECK_THROWS_WITH(
      parse_measured_run(Json::parse(head + R"("execution":{"memory_format":"nhwc","optimizer":"adamw","execution":"eager"}})"), "run.json"),
      Catch::Contains("run.json") && Catch::Contains("$.execution.memory_format"));
}

TEST_CASE("sweep files and sweeps price the run's mode, and name a wrong field") {
  const std::string head = R"({"name":"t","models":["resnet18"],"batch_per_gpu":[64],"gpus":[1],"precision":"bf16",)";
  const SweepSpec s = parse_sweep(Json::parse(head + R"("memory_format":"channels_last","optimizer":"adamw"})"), "s.json");
  const SweepResult r = run_sweep(s);
  REQUIRE(r.rows.size() == 1);
  CHECK(r.mode.memory_format == MemoryFormat::ChannelsLast);
  StepMode m;
  m.memory_format = MemoryFormat::ChannelsLast;
  m.optimizer = Optimizer::AdamW;
  const ClusterSpec c = apply_framework(load_cluster("h100-sxm"), load_framework(kDefaultFrameworkProfile));
  CHECK(r.rows[0].p.iteration_s == Approx(iteration_s(load_model("resnet18"), c, 64, Precision::BF16, m)).epsilon(1e-9));
  CHECK_THROWS_WITH(parse_sweep(Json::parse(head + R"("optimizer":"lamb"})"), "s.json"), Catch::Contains("s.json") && Catch::Contains("$.optimizer"));
}

TEST_CASE("dtsim kernel prices an Adam update as a prediction does") {
  // Every adam_update of resnet18's AdamW step, spelled as `dtsim kernel --kind adam_update --shape
  // params=P [--framework pytorch]`, costs what the prediction's compute model charges for it.
  StepMode m;
  m.optimizer = Optimizer::AdamW;
  const IterationKernels it = lower_iteration(load_model("resnet18"), 64, Precision::BF16, m);
  for (const std::string fw : {"", "pytorch"}) {
    ClusterSpec c = load_cluster("h100-sxm");
    if (!fw.empty()) c = apply_framework(c, load_framework(fw));
    const auto model = cluster_compute_model("auto", c);
    int checked = 0;
    for (const KernelDesc& k : it.update) {
      if (k.kind != KernelKind::AdamUpdate) continue;
      const KernelDesc spec = parse_kernel_spec({"adam_update", "update", "bf16", "params=" + std::to_string(k.shape[0]), "adamw"});
      INFO(fw << " " << k.shape[0] << " parameters");
      CHECK(model->time(spec).seconds == Approx(model->time(k).seconds).epsilon(1e-12));
      ++checked;
    }
    CHECK(checked > 10);
  }
  CHECK_THROWS_WITH(parse_kernel_spec({"adam_update", "update", "bf16", "params=10", "lamb"}), Catch::Contains("--variant"));
  CHECK_THROWS_WITH(parse_kernel_spec({"adam_update", "fwd", "bf16", "params=10", ""}), Catch::Contains("--pass"));
}

TEST_CASE("a profile's host cost for AdamW's and Adam's updates is the one their steps are charged") {
  // pytorch.json's adam_update/update/fp32/{adamw,adam}: optimizer.step()'s CPU time relative to SGD's
  // (1.81 and 1.68 on one H100). A key that dropped the variant once made every
  // Adam update cost the host the default launch.
  const FrameworkProfile fw = load_framework("pytorch");
  for (const char* name : {"adamw", "adam"}) {
    KernelDesc k{KernelKind::AdamUpdate, Pass::Update, MathMode::FP32, 0, {1000}, name, 0, 0};
    INFO(name);
    CHECK(framework_kernel_key(k) == std::string("adam_update/update/fp32/") + name);
    REQUIRE(fw.host_cost_s.count(framework_kernel_key(k)) == 1);
    CHECK(framework_host_cost_s(k, &fw.host_cost_s, fw.launch_overhead_s) == fw.host_cost_s.at(framework_kernel_key(k)));
    CHECK(framework_host_cost_s(k, &fw.host_cost_s, fw.launch_overhead_s) > fw.launch_overhead_s);
  }
}

TEST_CASE("PyTorch's bf16 batchnorm on contiguous tensors is priced by its own kernels' predictors") {
  // PyTorch runs it with batch_norm_collect_statistics / transform_input / backward kernels, not
  // cuDNN's (torch.profiler, mobilenet_v2 b256 on one H200); fp32 and fp16 contiguous, and channels_last,
  // go elsewhere; the harness runs cuDNN's for all.
  KernelDesc bn{KernelKind::BatchNorm, Pass::Fwd, MathMode::BF16, 0, {64, 64, 56, 56}, "", 0, 0};
  set_cost(bn);
  CHECK(pytorch_runs_native_batchnorm(bn));
  bn.variant = kNativeBatchnorm;
  CHECK(predictor_key(bn) == "batchnorm/fwd/bf16/native");
  for (MathMode m : {MathMode::FP32, MathMode::FP16}) {
    KernelDesc other = bn;
    other.math = m;
    CHECK_FALSE(pytorch_runs_native_batchnorm(other));
  }
  KernelDesc nhwc = bn;
  nhwc.format = MemoryFormat::ChannelsLast;
  CHECK_FALSE(pytorch_runs_native_batchnorm(nhwc));
  // In a prediction: every bf16 contiguous batchnorm kernel of resnet18 under the pytorch profile is
  // native, none under the harness's; and the shipped H100 predictors price them (mlp, not the roofline).
  const Graph g = load_model("resnet18");
  for (const char* fw : {"pytorch", "harness"}) {
    const ClusterSpec c = apply_framework(load_cluster("h100-sxm"), load_framework(fw));
    TrainingConfig cfg;
    cfg.batch_per_gpu = 64;
    cfg.precision = Precision::BF16;
    cfg.record_kernels = true;
    const Prediction p = predict(g, c, cfg);
    int bns = 0, native = 0;
    for (const KernelSpan& k : p.timeline.kernels)
      if (k.kind == KernelKind::BatchNorm) ++bns, native += std::string(k.variant) == kNativeBatchnorm;
    INFO(fw);
    CHECK(bns == 2 * 20);
    CHECK(native == (std::string(fw) == "pytorch" ? bns : 0));
  }
  const auto model = cluster_compute_model("auto", apply_framework(load_cluster("h100-sxm"), load_framework("pytorch")));
  CHECK(model->time(bn).source == TimeSource::Mlp);
}

namespace {

// Host time the step's kernels inside the compiled module cost (the loss, DDP's gradient copies and
// the optimizer stay eager), forward and backward together.
double module_host_s(const Graph& g, const ClusterSpec& c, int64_t batch, Execution e) {
  TrainingConfig cfg;
  cfg.batch_per_gpu = batch;
  cfg.precision = Precision::BF16;
  cfg.mode.execution = e;
  cfg.record_kernels = true;
  double host_s = 0;
  for (const KernelSpan& k : predict(g, c, cfg).timeline.kernels)
    if (k.pass != Pass::Update && k.kind != KernelKind::SoftmaxCE && std::string(k.variant) != "ddp_gradient_copy") host_s += k.host_s;
  return host_s;
}

}  // namespace

TEST_CASE("torch.compile without CUDA graphs costs the host what eager does, plus each compiled graph's fixed cost") {
  // host_costs.py --compile on one H200 (validation/data/h200-sxm/host_costs): a compiled
  // conv+batchnorm+ReLU block costs the host 518 us a step, 525 eager, though it issues fewer kernels.
  for (const char* profile : {"pytorch", "pytorch-ops"}) {
    const FrameworkProfile fw = load_framework(profile);
    REQUIRE(fw.compiled_host_as_eager);
    REQUIRE(fw.compiled_graph_host_s > 0);
    const ClusterSpec c = apply_framework(load_cluster("h200-sxm"), fw);
    for (const char* name : {"resnet50", "mobilenet_v2", "vgg16", "densenet121", "googlenet"}) {
      const Graph g = load_model(name);
      const double graphs = static_cast<double>(assign_buckets(g, c.framework.first_bucket_bytes, c.framework.bucket_bytes, 4).size());
      INFO(profile << " " << name << ", " << graphs << " graphs");
      const double eager = module_host_s(g, c, 16, Execution::Eager);
      CHECK(module_host_s(g, c, 16, Execution::Compile) == Approx(eager + graphs * fw.compiled_graph_host_s).epsilon(1e-9));
      // Without the profile's word, each generated kernel costs its own key's (or the default) host time.
      ClusterSpec per_kernel = c;
      per_kernel.framework.compiled_host_as_eager = false;
      CHECK(module_host_s(g, per_kernel, 16, Execution::Compile) != Approx(eager + graphs * fw.compiled_graph_host_s));
      // CUDA graphs replay the module: no host time inside it, unless the profile prices what the
      // replay still costs (compiled_cuda_graphs_host; the next test).
      if (fw.replay_host_per_step_s == 0 && fw.replay_host_per_layer_fwd_s == 0 && fw.replay_host_per_layer_bwd_s == 0)
        CHECK(module_host_s(g, c, 16, Execution::CompileCudaGraphs) == 0);
      ClusterSpec no_replay_cost = c;
      no_replay_cost.framework.replay_host_per_step_s = no_replay_cost.framework.replay_host_per_layer_fwd_s =
          no_replay_cost.framework.replay_host_per_layer_bwd_s = 0;
      CHECK(module_host_s(g, no_replay_cost, 16, Execution::CompileCudaGraphs) == 0);
    }
  }
}

TEST_CASE("torch.compile with CUDA graphs: the replayed module costs the host per layer and per step, less than eager") {
  // pytorch-ops's compiled_cuda_graphs_host (validation/scripts/replay_host_fit.py on model_host_time.py's
  // batch-1 rows): each layer inside the module costs per_layer_fwd_s in the forward and
  // per_layer_bwd_s in the backward, and the step per_step_s, shared by the pass's kernels.
  const FrameworkProfile fw = load_framework("pytorch-ops");
  REQUIRE(fw.replay_host_per_step_s > 0);
  REQUIRE(fw.replay_host_per_layer_fwd_s > 0);
  REQUIRE(fw.replay_host_per_layer_bwd_s > 0);
  const ClusterSpec c = apply_framework(load_cluster("h200-sxm"), fw);
  for (const char* name : {"resnet18", "resnet50", "mobilenet_v2", "vgg16", "densenet121", "googlenet"}) {
    const Graph g = load_model(name);
    INFO(name);
    TrainingConfig cfg;
    cfg.batch_per_gpu = 16;
    cfg.precision = Precision::BF16;
    cfg.mode.execution = Execution::CompileCudaGraphs;
    cfg.record_kernels = true;
    std::set<int> fwd_layers, bwd_layers;
    double host_s = 0;
    for (const KernelSpan& k : predict(g, c, cfg).timeline.kernels)
      if (k.pass != Pass::Update && k.kind != KernelKind::SoftmaxCE && std::string(k.variant) != "ddp_gradient_copy") {
        (k.pass == Pass::Fwd ? fwd_layers : bwd_layers).insert(k.layer);
        host_s += k.host_s;
      }
    REQUIRE(fwd_layers.size() > 10);
    CHECK(host_s == Approx(fw.replay_host_per_step_s + fw.replay_host_per_layer_fwd_s * static_cast<double>(fwd_layers.size()) +
                           fw.replay_host_per_layer_bwd_s * static_cast<double>(bwd_layers.size()))
                        .epsilon(1e-9));
    // Replaying costs the host less than issuing the same layers eagerly.
    CHECK(host_s < module_host_s(g, c, 16, Execution::Eager));
  }
}

TEST_CASE("a profile's compiled_cuda_graphs_host is checked") {
  const auto parse = [](const std::string& v) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"compiled_cuda_graphs_host":)" + v + "}"),
                           "fw.json");
  };
  const FrameworkProfile ok = parse(R"({"per_step_s":1.7e-3,"per_layer_fwd_s":4.4e-5,"per_layer_bwd_s":6.4e-5})");
  CHECK(ok.replay_host_per_step_s == 1.7e-3);
  CHECK(ok.replay_host_per_layer_fwd_s == 4.4e-5);
  CHECK(ok.replay_host_per_layer_bwd_s == 6.4e-5);
  CHECK(parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0})"), "fw.json").replay_host_per_step_s == 0);
  CHECK_THROWS_WITH(parse(R"({"per_step_s":-1,"per_layer_fwd_s":0,"per_layer_bwd_s":0})"), Catch::Contains("fw.json") && Catch::Contains("per_step_s"));
  CHECK_THROWS_WITH(parse(R"({"per_step_s":0,"per_layer_fwd_s":0})"), Catch::Contains("per_layer_bwd_s"));
  CHECK_THROWS_WITH(parse(R"({"per_step_s":0,"per_layer_fwd_s":0,"per_layer_bwd_s":0.5})"), Catch::Contains("per_layer_bwd_s"));
  CHECK_THROWS_WITH(parse(R"({"per_step_s":0,"per_layer_fwd_s":0,"per_layer_bwd_s":0,"per_graph_s":1})"), Catch::Contains("per_graph_s"));
  CHECK_THROWS_WITH(parse("3"), Catch::Contains("compiled_cuda_graphs_host"));
}

TEST_CASE("a profile's compiled_host is checked") {
  const auto parse = [](const std::string& v) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"compiled_host":)" + v + "}"), "fw.json");
  };
  CHECK(parse(R"({"per_graph_s":4.8e-4})").compiled_graph_host_s == 4.8e-4);
  CHECK(parse(R"({"per_graph_s":4.8e-4})").compiled_host_as_eager);
  CHECK_FALSE(parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0})"), "fw.json").compiled_host_as_eager);
  CHECK_THROWS_WITH(parse(R"({"per_graph_s":-1})"), Catch::Contains("fw.json") && Catch::Contains("per_graph_s"));
  CHECK_THROWS_WITH(parse(R"({})"), Catch::Contains("per_graph_s"));
  CHECK_THROWS_WITH(parse(R"({"per_graph_s":1e-4,"per_kernel_s":1})"), Catch::Contains("per_kernel_s"));
  CHECK_THROWS_WITH(parse("3"), Catch::Contains("compiled_host"));
}

namespace {

// GPU time of every GEMM kernel of a step (of one pass, if given), in issue order.
std::vector<double> gemm_times(const Graph& g, const ClusterSpec& c, int64_t batch, Precision p, Execution e,
                               std::optional<Pass> only = std::nullopt) {
  TrainingConfig cfg;
  cfg.batch_per_gpu = batch;
  cfg.precision = p;
  cfg.mode.execution = e;
  cfg.mode.optimizer = Optimizer::AdamW;
  cfg.record_kernels = true;
  std::vector<double> out;
  for (const KernelSpan& k : predict(g, c, cfg).timeline.kernels)
    if (k.kind == KernelKind::Gemm && (!only || k.pass == *only)) out.push_back(k.end_s - k.start_s);
  return out;
}

}  // namespace

TEST_CASE("torch.compile pads a misaligned matmul where the padded one is faster: GPT-2's LM head, never a slower matmul") {
  // validation/data/h200-sxm/pytorch_transformers/compile (torch.profiler, one H200): eager GPT-2's LM
  // head (N = 50257, b16, T = 1024, bf16) runs cuBLAS's align1 kernels, 13.3 ms forward; compiled,
  // Inductor pads it and runs nvjet kernels. dtsim's step went from +29.6% to -9.2% on that run.
  for (const char* profile : {"pytorch", "pytorch-ops"}) {
    const FrameworkProfile fw = load_framework(profile);
    REQUIRE(fw.compiled_gemm_alignment_16bit == 8);
    REQUIRE(fw.compiled_gemm_alignment_fp32 == 4);
    const ClusterSpec c = apply_framework(load_cluster("h200-sxm"), fw);
    ClusterSpec unpadded = c;
    unpadded.framework.compiled_gemm_alignment_16bit = unpadded.framework.compiled_gemm_alignment_fp32 = 0;
    const Graph gpt2 = load_model("gpt2_small");
    for (Precision p : {Precision::BF16, Precision::FP32}) {
      INFO(profile << " " << (p == Precision::BF16 ? "bf16" : "fp32"));
      const auto padded_t = gemm_times(gpt2, c, 16, p, Execution::Compile);
      const auto plain_t = gemm_times(gpt2, unpadded, 16, p, Execution::Compile);
      REQUIRE(padded_t.size() == plain_t.size());
      double padded_sum = 0, plain_sum = 0;
      for (size_t i = 0; i < padded_t.size(); ++i) {
        CHECK(padded_t[i] <= plain_t[i] * (1 + 1e-12));  // the faster of the two, never slower
        padded_sum += padded_t[i];
        plain_sum += plain_t[i];
      }
      if (p == Precision::BF16) {
        CHECK(padded_sum < plain_sum - 5e-3);  // the LM head's align1 matmuls
        // Its forward, the slowest matmul of the unpadded forward pass, the more than halved.
        const size_t fwd = gemm_times(gpt2, c, 16, p, Execution::Compile, Pass::Fwd).size();
        const size_t lm_head = static_cast<size_t>(std::max_element(plain_t.begin(), plain_t.begin() + fwd) - plain_t.begin());
        CHECK(padded_t[lm_head] < 0.5 * plain_t[lm_head]);
      }
      // Eager PyTorch runs the matmul as it is.
      CHECK(gemm_times(gpt2, c, 16, p, Execution::Eager) == gemm_times(gpt2, unpadded, 16, p, Execution::Eager));
    }
    // Aligned matmuls are untouched: the zoo's CNNs at even batches, their classifiers 1000 wide.
    for (const char* name : {"resnet50", "vgg16", "mobilenet_v2"}) {
      INFO(profile << " " << name);
      const Graph g = load_model(name);
      CHECK(iteration_s(g, c, 32, Precision::BF16, StepMode{MemoryFormat::Contiguous, Optimizer::Sgd, Execution::Compile}) ==
            iteration_s(g, unpadded, 32, Precision::BF16, StepMode{MemoryFormat::Contiguous, Optimizer::Sgd, Execution::Compile}));
    }
  }
}

TEST_CASE("a profile's compiled_shape_padding is checked") {
  const auto parse = [](const std::string& v) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"compiled_shape_padding":)" + v + "}"),
                           "fw.json");
  };
  const FrameworkProfile ok = parse(R"({"alignment_elements_16bit":8,"alignment_elements_fp32":4,"note":"Inductor's"})");
  CHECK(ok.compiled_gemm_alignment_16bit == 8);
  CHECK(ok.compiled_gemm_alignment_fp32 == 4);
  CHECK(parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0})"), "fw.json").compiled_gemm_alignment_16bit == 0);
  CHECK_THROWS_WITH(parse(R"({"alignment_elements_16bit":8})"), Catch::Contains("fw.json") && Catch::Contains("alignment_elements_fp32"));
  CHECK_THROWS_WITH(parse(R"({"alignment_elements_16bit":8.5,"alignment_elements_fp32":4})"), Catch::Contains("alignment_elements_16bit"));
  CHECK_THROWS_WITH(parse(R"({"alignment_elements_16bit":0,"alignment_elements_fp32":4})"), Catch::Contains("alignment_elements_16bit"));
  CHECK_THROWS_WITH(parse(R"({"alignment_elements_16bit":8,"alignment_elements_fp32":4,"note":3})"), Catch::Contains("note"));
  CHECK_THROWS_WITH(parse(R"({"alignment_elements_16bit":8,"alignment_elements_fp32":4,"pad":1})"), Catch::Contains("pad"));
  CHECK_THROWS_WITH(parse("3"), Catch::Contains("compiled_shape_padding"));
}
