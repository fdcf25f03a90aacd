#include <catch2/catch.hpp>

#include <map>

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
