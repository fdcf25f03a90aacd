#include <catch2/catch.hpp>

#include <map>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

TEST_CASE("zoo parameter counts equal torchvision's (and HuggingFace's) exactly") {
  const std::map<std::string, int64_t> expected = {
      {"alexnet", 61100840},    {"vgg11", 132863336},     {"vgg16", 138357544},   {"vgg19", 143667240},      {"resnet18", 11689512},
      {"resnet34", 21797672},   {"resnet50", 25557032},   {"resnet101", 44549160}, {"resnet152", 60192808},  {"densenet121", 7978856},
      {"mobilenet_v2", 3504872}, {"googlenet", 6624904}, {"inception_v3", 23834568},
      // torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4), as timm's resnext101_32x4d
      {"resnext101_32x4d", 44177704},
      // The transformers (tests/test_transformers.cpp): torchvision's vit_b_16, HuggingFace's
      // GPT2LMHeadModel (gpt2) and BertForMaskedLM (bert-base-uncased), tied weights counted once.
      {"vit_b_16", 86567656},   {"gpt2_small", 124439808}, {"bert_base", 109514298},
      // GPT-2's larger checkpoints, HuggingFace's counts (gpt2-medium, -large, -xl; lm_head tied to
      // wte). From the architecture: wte 50257 C + wpe 1024 C + L (12 C^2 + 13 C) + ln_f 2 C:
      //   medium C 1024, L 24: 51,463,168 + 1,048,576 + 24 x 12,596,224 + 2,048 = 354,823,168
      //   large  C 1280, L 36: 64,328,960 + 1,310,720 + 36 x 19,677,440 + 2,560 = 774,030,080
      //   xl     C 1600, L 48: 80,411,200 + 1,638,400 + 48 x 30,740,800 + 3,200 = 1,557,611,200
      {"gpt2_medium", 354823168}, {"gpt2_large", 774030080}, {"gpt2_xl", 1557611200},
      // HuggingFace's LlamaForCausalLM counts of meta-llama/Llama-2-7b-hf and Meta-Llama-3-8B (untied
      // lm_head). Embedding V C, per layer q, o C^2 each, k, v C x kv each, gate, up, down C F each,
      // two RMSNorms C each; final norm C; lm_head V C:
      //   Llama-2-7B (V 32000, C 4096, kv 4096, F 11008, 32 layers):
      //     131,072,000 + 32 x (2 x 16,777,216 + 2 x 16,777,216 + 3 x 45,088,768 + 8,192) + 4,096 + 131,072,000 = 6,738,415,616
      //   Llama-3-8B (V 128256, kv 8 heads x 128 = 1024, F 14336):
      //     525,336,576 + 32 x (2 x 16,777,216 + 2 x 4,194,304 + 3 x 58,720,256 + 8,192) + 4,096 + 525,336,576 = 8,030,261,248
      {"llama2_7b", 6738415616}, {"llama3_8b", 8030261248},
  };
  auto names = zoo_models();
  CHECK(names.size() == expected.size());
  for (const auto& [name, params] : expected) {
    INFO(name);
    CHECK(load_model(name).params() == params);
  }
}

TEST_CASE("zoo forward MACs match the published counts") {
  // Multiply-accumulates per 224x224 sample (299x299 for inception_v3), convolutions and linear
  // layers; torchvision's documented GFLOPS column counts these MACs.
  const std::map<std::string, double> gmacs = {{"alexnet", 0.71}, {"vgg16", 15.47}, {"resnet18", 1.81}, {"resnet50", 4.09},
                                               {"mobilenet_v2", 0.30}, {"densenet121", 2.83}, {"resnext101_32x4d", 8.0}, {"googlenet", 1.50}, {"inception_v3", 5.71},
                                               {"vit_b_16", 17.56}};
  for (const auto& [name, g] : gmacs) {
    INFO(name);
    CHECK(load_model(name).fwd_macs_per_sample() / 1e9 == Approx(g).epsilon(0.02));
  }
}

TEST_CASE("zoo feature maps before the classifier") {
  auto shape_of = [](const std::string& model, const std::string& layer) {
    for (const auto& l : load_model(model).layers)
      if (l.name == layer) return l.in[0].str();
    return std::string("missing");
  };
  CHECK(shape_of("resnet50", "avgpool") == "2048x7x7");
  CHECK(shape_of("inception_v3", "avgpool") == "2048x8x8");
  CHECK(shape_of("vgg16", "avgpool") == "512x7x7");
}

TEST_CASE("llama3_8b's grouped-query attention reads k and v of 8 heads") {
  const Graph g = load_model("llama3_8b");
  for (const auto& l : g.layers)
    if (l.name == "model.layers.0.self_attn.sdpa") {
      REQUIRE(l.in.size() == 3);
      CHECK(l.in[0].c == 4096);
      CHECK(l.in[1].c == 1024);
      CHECK(l.out.c == 4096);
      CHECK(l.attention_width() == 4096);
    }
  // The 7B model's attention has 32 key/value heads: q, k and v of one width.
  for (const auto& l : load_model("llama2_7b").layers)
    if (l.name == "model.layers.0.self_attn.sdpa") CHECK(l.in[1].c == 4096);
}

TEST_CASE("attention refuses k and v narrower than q by a part of a head") {
  auto attention = [](int kv) {
    const std::string layers = R"([{"name":"e","op":"embedding","num_embeddings":10,"embedding_dim":64},
      {"name":"q","op":"linear","out_features":64,"inputs":["e"]},
      {"name":"k","op":"linear","out_features":)" + std::to_string(kv) + R"(,"inputs":["e"]},
      {"name":"v","op":"linear","out_features":)" + std::to_string(kv) + R"(,"inputs":["e"]},
      {"name":"a","op":"attention","num_heads":4,"inputs":["q","k","v"]},
      {"name":"loss","op":"softmax_cross_entropy"}])";
    return parse_model(Json::parse(R"({"name":"t","input":{"sequence_length":8},"layers":)" + layers + "}"), "t.json");
  };
  CHECK(attention(32).layers[4].out.c == 64);  // 2 kv heads of 16, each shared by 2 q heads
  CHECK(attention(64).layers[4].out.c == 64);
  CHECK_THROWS_AS(attention(24), InputError);  // 1.5 heads
  CHECK_THROWS_AS(attention(48), InputError);  // 3 heads do not divide 4
}
