// ONNX import of real PyTorch exports of the zoo's transformers and of ShuffleNet V2:
// tests/data/onnx_exports/, written by validation/pytorch/export_onnx.py with Debian's torch 1.13.1,
// torchvision 0.14.1 and onnx 1.12 (TorchScript exporter, TrainingMode.TRAINING, no constant folding,
// a dynamic batch; provenance.json there) and stripped to initializer dimensions. torchvision's
// vit_b_16 exports nn.MultiheadAttention in T x N x C with heads folded into the batch; gpt2_small and
// bert_base (validation/pytorch/transformer_models.py, attention written out) a causal mask through
// Trilu and BERT's token types gathered by constant ids; the *_opset14 files LayerNorm decomposed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"

using namespace dtsim;

namespace {

std::string export_file(const std::string& name) { return std::string(DTSIM_TEST_DATA) + "/onnx_exports/" + name + ".onnx"; }

Graph exported(const std::string& name, int64_t batch = 8) {
  ModelLoadOptions o;
  o.batch = batch;
  return load_model(export_file(name), o);
}

// The reference parameter counts: HuggingFace's GPT2LMHeadModel and BertForMaskedLM, torchvision's.
const std::map<std::string, int64_t> kTransformers = {{"vit_b_16", 86567656}, {"gpt2_small", 124439808}, {"bert_base", 109514298}};

// Layer by layer the same op, inputs, output shape, parameters, MACs and settings; only names differ.
void same_layers(const Graph& o, const Graph& z) {
  REQUIRE(o.layers.size() == z.layers.size());
  for (size_t i = 0; i < o.layers.size(); ++i) {
    const Layer &a = o.layers[i], &b = z.layers[i];
    INFO("layer " << i << ": " << a.name << " (export) vs " << b.name << " (zoo)");
    CHECK(a.op == b.op);
    CHECK(a.activation == b.activation);
    CHECK(a.out == b.out);
    CHECK(a.params() == b.params());
    CHECK(a.fwd_macs() == b.fwd_macs());
    CHECK(a.num_heads == b.num_heads);
    CHECK(a.causal == b.causal);
    CHECK(a.tied_to == b.tied_to);
    CHECK_FALSE(a.roofline_only);
    if (a.op == Op::Dropout) CHECK(a.dropout_p == Approx(b.dropout_p));  // (a zoo attention's dropout_p is not kept: it costs nothing)
    std::vector<int> x = a.inputs, y = b.inputs;  // an add's operands may come in the other order
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    CHECK(x == y);
  }
}

double iteration_s(const Graph& g) {
  TrainingConfig cfg;
  cfg.gpus = 8;
  cfg.batch_per_gpu = 8;
  cfg.precision = Precision::BF16;
  return predict(g, load_cluster("h100-sxm"), cfg).iteration_s;
}

}  // namespace

TEST_CASE("onnx exports: vit_b_16, gpt2_small and bert_base exported by PyTorch import as their zoo entries") {
  for (const auto& [name, params] : kTransformers) {
    for (const std::string& file : {name, name + "_opset14"}) {
      INFO(file);
      Graph o = exported(file), z = load_model(name);
      CHECK(o.params() == params);
      CHECK(z.params() == params);
      CHECK(o.param_tensors() == z.param_tensors());
      CHECK(o.fwd_macs_per_sample() == z.fwd_macs_per_sample());
      CHECK(o.input == z.input);
      CHECK(o.token_input == z.token_input);
      CHECK(o.notes.empty());
      same_layers(o, z);
      // Attention's dropout, read from the Dropout after its Softmax (none in ViT: p = 0 is not exported).
      for (const auto& l : o.layers)
        if (l.op == Op::Attention) {
          CHECK(l.dropout_p == Approx(name == "vit_b_16" ? 0.0 : 0.1));
          // nn.MultiheadAttention's sequence-first tensors mark its layout copies, as the zoo's "module" does
          CHECK(l.mha_layout == (name == "vit_b_16"));
        }
    }
  }
}

TEST_CASE("onnx exports: the exports predict the zoo entries' iteration times (8 x H100, batch 8, bf16)") {
  for (const auto& [name, params] : kTransformers) {
    const double zoo_s = iteration_s(load_model(name));
    for (const std::string& file : {name, name + "_opset14"}) {
      INFO(file);
      CHECK(iteration_s(exported(file)) == Approx(zoo_s).epsilon(0.005));
    }
  }
}

TEST_CASE("onnx exports: nn.MultiheadAttention's T x N x C layout imports at any batch") {
  // At batch 1 the sequence-first tensors are [197, 1, 768]; at 8, [197, 8, 768] and [1576, 768].
  for (int64_t batch : {1, 3, 8}) {
    INFO("batch " << batch);
    Graph v = exported("vit_b_16", batch);
    CHECK(v.params() == 86567656);
    CHECK(std::count_if(v.layers.begin(), v.layers.end(), [](const Layer& l) { return l.op == Op::Attention && l.num_heads == 12; }) == 12);
  }
}

TEST_CASE("onnx exports: ShuffleNet V2 imports as the graph gen_onnx.py writes for it") {
  // No zoo entry: the reference is torchvision's parameter count and tests/data/onnx/'s written graph.
  Graph o = exported("shufflenet_v2_x1_0"), w = load_model(std::string(DTSIM_TEST_DATA) + "/onnx/shufflenet_v2_x1_0.onnx", [] {
                                               ModelLoadOptions m;
                                               m.batch = 8;
                                               return m;
                                             }());
  CHECK(o.params() == 2278604);
  CHECK(o.fwd_macs_per_sample() == w.fwd_macs_per_sample());
  CHECK(o.notes.empty());
  same_layers(o, w);
  CHECK(iteration_s(o) == Approx(iteration_s(w)).epsilon(0.005));
}

TEST_CASE("onnx exports: provenance.json records the exporter's versions and each file's opset") {
  std::ifstream in(std::string(DTSIM_TEST_DATA) + "/onnx_exports/provenance.json");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  Json p = Json::parse(ss.str());
  CHECK(p["torch"].get<std::string>().rfind("1.13", 0) == 0);
  CHECK(p["torchvision"].get<std::string>().rfind("0.14", 0) == 0);
  CHECK(p["onnx"].get<std::string>() == "1.12.0");
  CHECK(p["do_constant_folding"].get<bool>() == false);
  CHECK(p["training"].get<std::string>() == "TRAINING");
  std::map<std::string, int64_t> all = kTransformers;
  all["shufflenet_v2_x1_0"] = 2278604;
  for (const auto& [name, params] : all) {
    for (const std::string& file : {name, name + "_opset14"}) {
      if (file == "shufflenet_v2_x1_0_opset14") continue;  // its opset-14 graph is the opset-17 one
      INFO(file);
      REQUIRE(p["files"].contains(file + ".onnx"));
      const Json& f = p["files"][file + ".onnx"];
      CHECK(f["opset_version"].get<int>() == (file == name ? 17 : 14));
      CHECK(f["torch_parameters"].get<int64_t>() == params);
      CHECK(f["bytes"].get<int64_t>() < 1000000);
    }
  }
}

TEST_CASE("onnx exports: PyTorch 2.11's TorchScript exporter, the zoo's transformers and ShuffleNet V2") {
  // tests/data/onnx_exports/torch2 (README there): the same models exported by PyTorch 2.11.
  for (const auto& [name, params] : kTransformers) {
    INFO(name);
    Graph o = exported("torch2/" + name + "_torch2"), z = load_model(name);
    CHECK(o.params() == params);
    CHECK(o.fwd_macs_per_sample() == z.fwd_macs_per_sample());
    same_layers(o, z);
    CHECK(iteration_s(o) == Approx(iteration_s(z)).epsilon(1e-9));
  }
  Graph s = exported("torch2/shufflenet_v2_x1_0_torch2"), t = exported("shufflenet_v2_x1_0");
  CHECK(s.params() == 2278604);
  same_layers(s, t);
}

TEST_CASE("onnx exports: PyTorch 2.11's dynamo exporter, what imports and what is refused") {
  // tests/data/onnx_exports/dynamo (README there). gpt2_small and bert_base are their zoo entries.
  for (const std::string name : {"gpt2_small", "bert_base"}) {
    INFO(name);
    Graph o = exported("dynamo/" + name + "_dynamo"), z = load_model(name);
    CHECK(o.params() == kTransformers.at(name));
    same_layers(o, z);
    CHECK(iteration_s(o) == Approx(iteration_s(z)).epsilon(1e-9));
  }
  // Opset 18 kept (the exporter's down-conversion failed): Split's num_outputs and ReduceMean's axes
  // input are read with opset-17 rules. Training-mode batchnorm comes decomposed: 56 fewer layers and
  // their scale and shift not counted as parameters (the README).
  Graph s = exported("dynamo/shufflenet_v2_x1_0_dynamo");
  CHECK(s.fwd_macs_per_sample() == exported("shufflenet_v2_x1_0").fwd_macs_per_sample());
  CHECK(s.layers.size() == 156);
  CHECK(s.params() == 2262424);
  // vit_b_16: refused with the node and the reason, not a crash.
  try {
    exported("dynamo/vit_b_16_dynamo");
    FAIL("vit_b_16's dynamo export imported");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("attention pattern only partly recognised") != std::string::npos);
  }
}
