// ONNX import (model/onnx_import.*): the torchvision-like graphs of tests/data/onnx/ (written by
// gen_onnx.py, see there) against the zoo and torchvision's published counts, and the error paths.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"
#include "workload/onnx/onnx_import.hpp"
#include "sim/predict.hpp"

using namespace dtsim;

static std::string onnx_file(const std::string& name) { return std::string(DTSIM_TEST_DATA) + "/onnx/" + name + ".onnx"; }

static Graph onnx(const std::string& name, int64_t batch = 1, bool allow_unknown = false) {
  ModelLoadOptions o;
  o.batch = batch;
  o.allow_unknown_ops = allow_unknown;
  return load_model(onnx_file(name), o);
}

// The InputError message of importing `name`, or "" if it imports.
static std::string import_error(const std::string& name, int64_t batch = 1, bool allow_unknown = false) {
  try {
    onnx(name, batch, allow_unknown);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

static bool has_note(const Graph& g, const std::string& text) {
  for (const auto& n : g.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

static int count_op(const Graph& g, Op op, const std::string& activation = "") {
  int n = 0;
  for (const auto& l : g.layers) n += l.op == op && (activation.empty() || l.activation == activation);
  return n;
}

static Prediction predict_on_h100(const Graph& g, int64_t gpus, int64_t batch) {
  TrainingConfig cfg;
  cfg.gpus = gpus;
  cfg.batch_per_gpu = batch;
  return predict(g, load_cluster("h100-sxm"), cfg);
}

TEST_CASE("onnx: exports of zoo models have the zoo's parameters, MACs and layers exactly") {
  const std::map<std::string, std::string> file_of = {
      {"resnet18", "resnet18"},       {"resnet50", "resnet50"},         {"mobilenet_v2", "mobilenet_v2"},
      {"alexnet", "zoo_alexnet"},     {"vgg16", "zoo_vgg16"},           {"densenet121", "zoo_densenet121"},
      {"googlenet", "zoo_googlenet"}, {"inception_v3", "zoo_inception_v3"},
  };
  for (const auto& [zoo_name, file] : file_of) {
    INFO(zoo_name);
    Graph z = load_model(zoo_name), o = onnx(file);
    CHECK(o.params() == z.params());
    CHECK(o.param_tensors() == z.param_tensors());
    CHECK(o.fwd_macs_per_sample() == z.fwd_macs_per_sample());
    CHECK(o.layers.size() == z.layers.size());
    CHECK(o.input == z.input);
    CHECK(o.notes.empty());
    CHECK(o.layers.back().op == Op::SoftmaxCrossEntropy);
  }
  // The builders are written from torchvision's code, not from the zoo: 11689512 is torchvision's count.
  CHECK(onnx("resnet18").params() == 11689512);
}

TEST_CASE("onnx: predictions for exports of zoo models agree with the zoo's within 1%") {
  for (const auto& [zoo_name, file] : std::map<std::string, std::string>{{"resnet18", "resnet18"}, {"mobilenet_v2", "mobilenet_v2"},
                                                                         {"densenet121", "zoo_densenet121"}, {"inception_v3", "zoo_inception_v3"}}) {
    for (int64_t gpus : {1, 16}) {
      INFO(zoo_name << " on " << gpus << " GPUs");
      double zoo_s = predict_on_h100(load_model(zoo_name), gpus, 64).iteration_s;
      double onnx_s = predict_on_h100(onnx(file, 64), gpus, 64).iteration_s;
      CHECK(onnx_s == Approx(zoo_s).epsilon(0.01));
    }
  }
}

TEST_CASE("onnx: classifiers outside the zoo import with torchvision's parameter counts and predict") {
  struct Expect {
    int64_t params;
    double gmacs;  // torchvision's weights meta "_ops" (GFLOPS, counted as multiply-accumulates)
  };
  const std::map<std::string, Expect> models = {
      {"squeezenet1_0", {1248424, 0.819}},  {"shufflenet_v2_x1_0", {2278604, 0.145}}, {"resnext50_32x4d", {25028904, 4.23}},
      {"efficientnet_b0", {5288548, 0.386}}, {"regnet_y_400mf", {4344144, 0.402}},
  };
  for (const auto& [name, e] : models) {
    INFO(name);
    Graph g = onnx(name, 32);
    CHECK(g.params() == e.params);
    CHECK(g.fwd_macs_per_sample() / 1e9 == Approx(e.gmacs).epsilon(0.02));
    CHECK(g.notes.empty());
    for (const auto& l : g.layers) CHECK_FALSE(l.roofline_only);
    Prediction p = predict_on_h100(g, 8, 32);
    CHECK(std::isfinite(p.iteration_s));
    CHECK(p.iteration_s > 0);
    CHECK(p.throughput_samples_per_s > 0);
  }
}

TEST_CASE("onnx: squeeze-and-excitation, SiLU, channel shuffle and stochastic depth map to dtsim layers") {
  Graph eff = onnx("efficientnet_b0");
  // x * sigmoid(x) is one silu; the SE gate's sigmoid stays a sigmoid and scales the map in a mul.
  CHECK(count_op(eff, Op::Activation, "silu") == 1 + 15 + 16 + 16 + 1);  // stem; expand (not in the first block), depthwise and SE of 16 blocks; head
  CHECK(count_op(eff, Op::Activation, "sigmoid") == 16);
  CHECK(count_op(eff, Op::Mul) == 16);
  CHECK(count_op(eff, Op::Activation, "mul") == 9);  // stochastic depth's noise on the 9 residual blocks
  for (const auto& l : eff.layers)
    if (l.op == Op::Mul) {
      CHECK(l.in[0].h == 1);  // torch's scale * x: the C x 1 x 1 gate first
      CHECK(l.out == l.in[1]);
    }

  Graph shuffle = onnx("shufflenet_v2_x1_0");
  int transposes = 0, views = 0;
  for (const auto& l : shuffle.layers) {
    transposes += l.op == Op::Eltwise && l.source_op == "Transpose";
    views += l.op == Op::View;
  }
  CHECK(transposes == 16);     // one channel shuffle per unit
  CHECK(views == 2 * 13);      // chunk(2) in the 13 stride-1 units: two views each
  IterationKernels k = lower_iteration(shuffle, 32, Precision::FP32);
  int eltwise = 0;
  for (const auto& kd : k.forward)
    if (kd.kind == KernelKind::Eltwise && std::string(kd.variant) == "Transpose") {
      ++eltwise;
      CHECK(kd.bytes > 0);
    }
  CHECK(eltwise == transposes);
}

TEST_CASE("onnx: MatMul + Add is a linear layer with bias: hardswish, PReLU and a final softmax") {
  Graph g = onnx("matmul_softmax");
  const Layer& fc = g.layers[g.layers.size() - 2];
  CHECK(fc.op == Op::Linear);
  CHECK(fc.bias);
  CHECK(fc.params() == 8 * 10 + 10);
  CHECK(g.layers.back().op == Op::SoftmaxCrossEntropy);  // the exported softmax is the loss's own
  CHECK(count_op(g, Op::Activation, "hardswish") == 1);
  CHECK(count_op(g, Op::Activation, "prelu") == 1);
  CHECK(g.params() == 216 + 16 + 8 + 90);  // conv, bn, PReLU's slope, fc
}

TEST_CASE("onnx: initializers the exporter deduplicated into Identity nodes are followed to the one initializer") {
  Graph g = onnx("identity_init");
  const Layer& fc = g.layers[g.layers.size() - 2];
  CHECK(fc.op == Op::Linear);
  CHECK(fc.bias);  // the zero bias, read through an Identity, still folds into the linear layer
  CHECK(count_op(g, Op::Add) == 0);
  CHECK(count_op(g, Op::Activation, "prelu") == 2);
  CHECK(g.params() == 216 + 16 + 8 + 90);  // conv, bn, the tied PReLU slope once (as PyTorch counts it), fc
}

TEST_CASE("onnx: the batch comes from the caller: an export that fixed it is an error") {
  CHECK(onnx("resnet18", 256).params() == 11689512);
  CHECK(import_error("fixed_batch", 1).empty());
  std::string e = import_error("fixed_batch", 8);
  CHECK(e.find("fixed_batch.onnx") != std::string::npos);
  CHECK(e.find("batch") != std::string::npos);
}

TEST_CASE("onnx: an operator dtsim cannot cost stops the import, naming it, its node and what is supported") {
  std::string e = import_error("unknown_op");
  CHECK(e.find("unknown_op.onnx: node '/lrn/LRN' (LRN)") != std::string::npos);
  CHECK(e.find("operator 'LRN' is not supported") != std::string::npos);
  CHECK(e.find("dtsim costs") != std::string::npos);
  CHECK(e.find("Conv") != std::string::npos);
  CHECK(e.find("--allow-unknown-ops") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);

  // --allow-unknown-ops: costed by roofline from its tensor sizes, and said so.
  Graph g = onnx("unknown_op", 16, true);
  const Layer* lrn = nullptr;
  for (const auto& l : g.layers)
    if (l.source_op == "LRN") lrn = &l;
  REQUIRE(lrn != nullptr);
  CHECK(lrn->op == Op::Eltwise);
  CHECK(lrn->roofline_only);
  CHECK(has_note(g, "roofline"));
  CHECK(has_note(g, "LRN"));
  IterationKernels k = lower_iteration(g, 16, Precision::FP32);
  int found = 0;
  for (const auto& kd : k.forward)
    if (kd.kind == KernelKind::Eltwise && std::string(kd.variant) == "LRN") {
      ++found;
      CHECK(kd.bytes == Approx(2.0 * 16 * 8 * 32 * 32 * 4));  // reads and writes 8x32x32 per sample, fp32
    }
  CHECK(found == 1);

  // A custom-domain operator: no ONNX schema, so no inferred shape, so not even a roofline cost.
  for (bool allow : {false, true}) {
    std::string c = import_error("custom_domain", 1, allow);
    CHECK(c.find("node '/fancy/FancyNorm' (FancyNorm): operator 'FancyNorm' of domain 'com.example' is not an ONNX operator") != std::string::npos);
    CHECK(c.find("even with --allow-unknown-ops") != std::string::npos);
  }

  // A known operator in a form dtsim does not cost.
  CHECK(import_error("conv1d").find("only 2-D convolutions") != std::string::npos);
  CHECK(import_error("conv1d", 1, true).empty());
}

TEST_CASE("onnx: eval-mode exports are detected and said so in one line") {
  Graph bn = onnx("eval_bn");
  REQUIRE(bn.notes.size() == 1);
  CHECK(bn.notes[0].find("eval-mode export") != std::string::npos);
  CHECK(bn.notes[0].find("TrainingMode.TRAINING") != std::string::npos);
  CHECK(bn.notes[0].find('\n') == std::string::npos);
  Graph folded = onnx("eval_folded");
  REQUIRE(folded.notes.size() == 1);
  CHECK(folded.notes[0].find("eval-mode export") != std::string::npos);
  CHECK(folded.notes[0].find("do_constant_folding=False") != std::string::npos);
  // Training-mode exports say nothing; neither does a network without batchnorm that has dropout.
  CHECK(onnx("squeezenet1_0").notes.empty());
  CHECK(onnx("zoo_vgg16").notes.empty());
}

TEST_CASE("onnx: asymmetric padding becomes the symmetric padding with the same output size") {
  Graph g = onnx("same_upper");
  CHECK(g.layers[0].op == Op::Conv2d);
  CHECK(g.layers[0].ph == 1);
  CHECK(g.layers[0].out.h == 16);
  CHECK(has_note(g, "asymmetric"));
}

TEST_CASE("onnx: bad files are InputErrors naming the file and the rule") {
  auto expect = [](const std::string& name, const std::string& text, bool allow = false) {
    INFO(name);
    std::string e = import_error(name, 1, allow);
    CHECK(e.find(name + ".onnx") != std::string::npos);
    CHECK(e.find(text) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  };
  expect("not_onnx", "not an ONNX model");
  expect("truncated", "not an ONNX model");
  expect("no_such_model", "no such file");
  expect("dangling", "reads 'conv1.weight', which no earlier node produces");
  expect("dynamic_hw", "symbolic ('height')");
  expect("two_inputs", "exactly one input");
  expect("zero_dim", "zero dimension");
  expect("zero_stride", "strides must be positive, got 0");  // a SIGFPE in libonnx's inference before
  expect("map_output", "vector of class scores");
  CHECK(import_error("map_output", 1, true).empty());
}
