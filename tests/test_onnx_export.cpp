// ONNX import of real torch.onnx.export files (tests/data/onnx/torch_export/, written by
// tests/data/onnx/export_torchvision.py with PyTorch 2.11; provenance.json there): torchvision's
// resnet18, mobilenet_v2 and googlenet exported in training mode, and resnet18 in eval mode. Unlike
// the gen_onnx.py graphs, these carry what the exporter really writes: the input named "input" with a
// symbolic batch ("batch"), BatchNormalization with three outputs, Constant nodes for Clip's bounds,
// and, in eval mode, Identity nodes that alias initializers the exporter found equal.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "core/json_util.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"

using namespace dtsim;

static std::string export_file(const std::string& name) { return std::string(DTSIM_TEST_DATA) + "/onnx/torch_export/" + name + ".onnx"; }

static Graph exported(const std::string& name, int64_t batch = 1) {
  ModelLoadOptions o;
  o.batch = batch;
  return load_model(export_file(name), o);
}

TEST_CASE("onnx export: real torch.onnx.export files have the zoo's parameters, MACs and layers") {
  const std::map<std::string, int64_t> torchvision_params = {{"resnet18", 11689512}, {"mobilenet_v2", 3504872}, {"googlenet", 6624904}};
  for (const auto& [name, params] : torchvision_params) {
    INFO(name);
    Graph o = exported(name), z = load_model(name);
    CHECK(o.params() == params);
    CHECK(z.params() == params);
    CHECK(o.param_tensors() == z.param_tensors());
    CHECK(o.fwd_macs_per_sample() == z.fwd_macs_per_sample());
    CHECK(o.layers.size() == z.layers.size());
    CHECK(o.input == z.input);
    CHECK(o.notes.empty());
    CHECK(o.layers.back().op == Op::SoftmaxCrossEntropy);
    for (const auto& l : o.layers) CHECK_FALSE(l.roofline_only);
  }
}

TEST_CASE("onnx export: the symbolic batch is set from the caller and predictions agree with the zoo's") {
  for (const char* name : {"resnet18", "mobilenet_v2", "googlenet"}) {
    for (int64_t gpus : {1, 16}) {
      INFO(name << " on " << gpus << " GPUs");
      TrainingConfig cfg;
      cfg.gpus = gpus;
      cfg.batch_per_gpu = 64;
      const ClusterSpec c = load_cluster("h100-sxm");
      double zoo_s = predict(load_model(name), c, cfg).iteration_s;
      double onnx_s = predict(exported(name, 64), c, cfg).iteration_s;
      CHECK(onnx_s == Approx(zoo_s).epsilon(0.01));
    }
  }
}

TEST_CASE("onnx export: an eval-mode export is said so: Identity-aliased initializers are counted once") {
  Graph e = exported("resnet18_eval");
  REQUIRE(e.notes.size() == 1);
  CHECK(e.notes[0].find("eval-mode export") != std::string::npos);
  CHECK(e.notes[0].find("20 of 20 BatchNormalization") != std::string::npos);
  CHECK(e.notes[0].find("TrainingMode.TRAINING") != std::string::npos);
  CHECK(e.notes[0].find('\n') == std::string::npos);
  // The exporter replaced equal initializers (batchnorm's ones and zeros) by Identity nodes of one
  // another; the parameters still come out as PyTorch counts them.
  Graph t = exported("resnet18");
  CHECK(e.params() == 11689512);
  CHECK(e.param_tensors() == t.param_tensors());
  CHECK(e.fwd_macs_per_sample() == t.fwd_macs_per_sample());
  CHECK(e.layers.size() == t.layers.size());
}

TEST_CASE("onnx export: provenance.json records the exporter's versions and options") {
  std::ifstream in(std::string(DTSIM_TEST_DATA) + "/onnx/torch_export/provenance.json");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  Json p = Json::parse(ss.str());
  CHECK(p["opset_version"].get<int>() == 17);
  CHECK(p["torch"].get<std::string>().rfind("2.", 0) == 0);
  CHECK(p["do_constant_folding"].get<bool>() == false);
  for (const char* f : {"resnet18.onnx", "mobilenet_v2.onnx", "googlenet.onnx", "resnet18_eval.onnx"}) {
    INFO(f);
    REQUIRE(p["files"].contains(f));
    CHECK(p["files"][f]["torch_parameters"].get<int64_t>() == exported(std::string(f).substr(0, std::string(f).size() - 5)).params());
  }
}
