// ONNX import of the committed exports of models as their users build them (HuggingFace transformers,
// timm, torchvision: validation/data/h200-sxm/user_models/onnx/, README.md there): each a whole training
// step (inputs, labels and, for language models, an attention mask; the loss in the graph), gzip
// compressed, float initializers stripped to their dimensions. provenance.json there has each file's
// parameter count as torch counts it (tied weights once); the import must give the same.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

const std::string kFolder = std::string(DTSIM_SOURCE_DIR) + "/validation/data/h200-sxm/user_models/onnx/";

int64_t torch_parameters(const std::string& file) {
  std::ifstream in(kFolder + "provenance.json");
  REQUIRE(in.good());
  const auto p = nlohmann::json::parse(in);
  return p.at("files").at(file).at("torch_parameters").get<int64_t>();
}

Graph user_model(const std::string& file) {
  ModelLoadOptions o;
  o.batch = 2;
  return load_model(kFolder + file + ".gz", o);
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const auto& l : g.layers) n += l.op == op;
  return n;
}

bool all_attention(const Graph& g, bool causal) {
  bool all = count(g, Op::Attention) > 0;
  for (const auto& l : g.layers)
    if (l.op == Op::Attention) all &= l.causal == causal;
  return all;
}

Graph imports_with_torch_parameters(const std::string& file) {
  INFO(file);
  Graph g = user_model(file);
  CHECK(g.params() == torch_parameters(file));
  REQUIRE_FALSE(g.layers.empty());
  CHECK(g.layers.back().op == Op::SoftmaxCrossEntropy);  // the loss the graph computes, on the logits
  CHECK(count(g, Op::SoftmaxCrossEntropy) == 1);
  for (const auto& l : g.layers) CHECK_FALSE(l.roofline_only);
  return g;
}

}  // namespace

TEST_CASE("onnx user models: CNNs, vision transformers and encoders import from their gzip exports with torch's parameter count") {
  // One export of each family (two exporters where the family has both), with its in-graph loss.
  for (const std::string file : {"timm_convnext_tiny.onnx", "timm_regnety_016.onnx", "tv_efficientnet_b0.onnx", "tv_mobilenet_v3_large.onnx",
                                 "timm_seresnext26d.onnx", "tv_resnext50_32x4d.onnx", "tv_shufflenet_v2.onnx", "tv_googlenet.onnx", "timm_deit_small.onnx",
                                 "tv_vit_b_16.onnx", "hf_distilbert.onnx"})
    imports_with_torch_parameters(file);
  // Encoders and ViTs attend to every token (the mask input is taken as no padding).
  for (const std::string file : {"hf_bert_base.onnx", "hf_bert_base.dynamo.onnx", "hf_roberta_base.dynamo.onnx", "hf_vit_base.onnx"}) {
    INFO(file);
    CHECK(all_attention(imports_with_torch_parameters(file), false));
  }
  // ConvNeXt's channels-last LayerNorms (between permutes) are layernorm layers: 18 blocks', the stem's,
  // 3 downsampling ones and the head's.
  CHECK(count(imports_with_torch_parameters("tv_convnext_tiny.onnx"), Op::LayerNorm) == 23);
}

TEST_CASE("onnx user models: HuggingFace decoders (GPT-2, OPT, Llama with grouped-query attention and rotary embeddings) import with torch's parameter count") {
  for (const std::string file : {"hf_distilgpt2.onnx", "hf_opt_125m.onnx"}) {
    INFO(file);
    CHECK(all_attention(imports_with_torch_parameters(file), true));  // their masks compare query and key positions: causal
  }
  Graph llama = imports_with_torch_parameters("hf_llama_gqa.onnx");
  CHECK(all_attention(llama, true));
  bool rotary_noted = false;
  for (const auto& n : llama.notes) rotary_noted |= n.find("rotary position embeddings") != std::string::npos;
  CHECK(rotary_noted);
  // Grouped-query attention: k and v narrower than q.
  for (const auto& l : llama.layers)
    if (l.op == Op::Attention) {
      REQUIRE(l.in.size() == 3);
      CHECK(l.in[1].c < l.in[0].c);
      CHECK(l.in[1] == l.in[2]);
    }
}

TEST_CASE("onnx user models: a gzip file that does not decompress is refused in one line naming it") {
  const std::string tmp = "/tmp/dtsim_test_truncated_" + std::to_string(::getpid()) + ".onnx.gz";
  {
    std::ifstream in(kFolder + "tv_googlenet.onnx.gz", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(tmp, std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  ModelLoadOptions o;
  try {
    load_model(tmp, o);
    FAIL("a truncated .onnx.gz imported");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(tmp) != std::string::npos);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
  std::remove(tmp.c_str());
}
