// PyTorch's foreach optimizers as multi-tensor launches (sim/multi_tensor.hpp) and the input copy of an
// in-place ReLU6 (FrameworkSpec::relu6_input_copy): what torch.profiler shows, as properties.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/framework.hpp"
#include "sim/multi_tensor.hpp"
#include "sim/predict.hpp"
#include "sim/schedule.hpp"
#include "sim/whatif.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

std::vector<int64_t> param_tensors(const Graph& g) {
  std::vector<int64_t> t;
  for (const Layer& l : g.layers)
    for (int64_t n : {l.weight_params(), l.bias_params()})
      if (n > 0) t.push_back(n);
  return t;
}

double optimizer_s(const std::string& model, const ClusterSpec& c, Optimizer o, int64_t batch) {
  TrainingConfig cfg;
  cfg.batch_per_gpu = batch;
  cfg.precision = Precision::BF16;
  cfg.mode.optimizer = o;
  return predict(load_model(model), c, cfg).optimizer_s;
}

}  // namespace

TEST_CASE("multi-tensor optimizer: PyTorch's launch rule gives torch.profiler's launch counts") {
  // multi_tensor_apply launches per optimizer step in the committed eager kernel lists
  // (validation/data/*/pytorch_modes/profiles, validation/data/h100-sxm/kernel_profile/transformers):
  // every pass of every profiled model, SGD (4 passes), AdamW (8) and Adam (7).
  const MultiTensorOptimizer& m = load_framework("pytorch").multi_tensor_optimizer;
  const std::map<std::pair<std::string, std::string>, size_t> measured = {
      {{"mobilenet_v2", "sgd"}, 12}, {{"resnet18", "sgd"}, 5},    {{"resnet50", "sgd"}, 13},   {{"densenet121", "sgd"}, 24},
      {{"vgg16", "sgd"}, 28},        {{"resnet50", "adamw"}, 26}, {{"resnet50", "adam"}, 23},  {{"bert_base", "adamw"}, 48},
      {{"gpt2_small", "adamw"}, 56}, {{"vit_b_16", "adamw"}, 40}};
  for (const auto& [key, launches] : measured) {
    const auto& [model, optimizer] = key;
    const std::vector<int64_t> tensors = param_tensors(load_model(model));
    size_t n = 0;
    for (const MultiTensorPass& pass : m.passes.at(optimizer)) {
      const std::vector<int64_t> l = multi_tensor_launches(m, pass, tensors);
      n += l.size();
      int64_t elements = 0;
      for (int64_t e : l) elements += e;
      CHECK(elements == load_model(model).params());  // every parameter once per pass
    }
    INFO(model << " " << optimizer);
    CHECK(n == launches);
  }
}

TEST_CASE("multi-tensor optimizer: never faster than streaming its bytes, never slower on faster memory, Adam never cheaper than SGD") {
  const ClusterSpec base = apply_framework(load_cluster("h100-sxm"), load_framework("pytorch"));
  const MultiTensorOptimizer& m = base.framework.multi_tensor_optimizer;
  for (const std::string model : {"mobilenet_v2", "resnet50", "densenet121", "vgg16", "gpt2_small"}) {
    const double params = static_cast<double>(load_model(model).params());
    double last = INFINITY;
    for (double scale : {0.5, 1.0, 2.0, 4.0}) {
      WhatIf w;
      w.memory_bandwidth_scale = scale;
      const ClusterSpec c = apply_what_if(base, w);
      double sgd_bytes = 0;
      for (const MultiTensorPass& p : m.passes.at("sgd")) sgd_bytes += p.bytes_per_param;
      const double sgd = optimizer_s(model, c, Optimizer::Sgd, 8);
      INFO(model << " at " << scale << "x memory bandwidth");
      CHECK(sgd >= params * sgd_bytes / c.gpu.memory_bandwidth_Bps);  // the datasheet rate bounds it
      CHECK(sgd <= last * (1 + 1e-12));
      CHECK(optimizer_s(model, c, Optimizer::AdamW, 8) >= sgd);
      CHECK(optimizer_s(model, c, Optimizer::Adam, 8) >= sgd);
      last = sgd;
    }
  }
}

TEST_CASE("multi-tensor optimizer: a profile's table is checked, and the harness keeps its fused kernel") {
  const auto parse = [](const std::string& mt) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"multi_tensor_optimizer":)" + mt + "}"),
                           "fw.json");
  };
  const std::string ok_head = R"({"chunk_elements":65536,"max_blocks":320,"launch_s":1e-5,"bandwidth_fraction":0.9,"passes":)";
  CHECK(parse(ok_head + R"({"sgd":[{"max_tensors":48,"bytes_per_param":12}]}})").multi_tensor_optimizer.passes.at("sgd").size() == 1);
  CHECK_THROWS_WITH(parse(ok_head + R"({"sgd":[]}})"), Catch::Contains("fw.json") && Catch::Contains("passes.sgd"));
  CHECK_THROWS_WITH(parse(ok_head + R"({"sgd":[{"max_tensors":0,"bytes_per_param":12}]}})"), Catch::Contains("max_tensors"));
  CHECK_THROWS_WITH(parse(ok_head + R"({"lamb":[{"max_tensors":4,"bytes_per_param":12}]}})"), Catch::Contains("lamb"));
  CHECK_THROWS_WITH(parse(R"({"chunk_elements":65536,"max_blocks":320,"launch_s":1e-5,"bandwidth_fraction":0,"passes":{}})"),
                    Catch::Contains("bandwidth_fraction"));
  CHECK(load_framework("harness").multi_tensor_optimizer.passes.empty());
}

TEST_CASE("relu6 input copy: PyTorch's eager steps copy each ReLU6's input, compiled and harness steps do not") {
  // mobilenet_v2 has 35 ReLU6; each eager forward gains a copy as long as the clamp.
  const Graph g = load_model("mobilenet_v2");
  auto forward_activations = [&](const std::string& framework, Execution e) {
    ClusterSpec c = apply_framework(load_cluster("h200-sxm"), load_framework(framework));
    TrainingConfig cfg;
    cfg.batch_per_gpu = 64;
    cfg.precision = Precision::BF16;
    cfg.mode.execution = e;
    cfg.record_kernels = true;
    const Prediction p = predict(g, c, cfg);
    size_t n = 0;
    for (const KernelSpan& k : p.timeline.kernels)
      if (k.kind == KernelKind::Activation && k.pass == Pass::Fwd) ++n;
    return n;
  };
  CHECK(forward_activations("harness", Execution::Eager) == 35);
  CHECK(forward_activations("pytorch", Execution::Eager) == 70);
  CHECK(forward_activations("pytorch", Execution::Compile) == 0);  // Inductor fuses the clamp
}
