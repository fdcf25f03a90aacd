#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "helpers.hpp"

using namespace dtsim;

static const Layer& last(const Graph& g) { return g.layers.back(); }

TEST_CASE("conv2d output follows stride, padding, dilation and groups") {
  auto g = model_from(R"([{"name":"c","op":"conv2d","out_channels":8,"kernel":3,"stride":2,"padding":1,"bias":false}])");
  CHECK(last(g).out == Shape{8, 16, 16, false});
  CHECK(last(g).params() == 8 * 3 * 9);
  g = model_from(R"([{"name":"c","op":"conv2d","out_channels":6,"kernel":[3,5],"dilation":2,"groups":3,"bias":true}])");
  // H: 32 - 2*(3-1) = 28, W: 32 - 2*(5-1) = 24; weights 6 x (3/3) x 3 x 5 + 6 biases
  CHECK(last(g).out == Shape{6, 28, 24, false});
  CHECK(last(g).params() == 6 * 1 * 15 + 6);
  CHECK(last(g).fwd_macs() == 6 * 28 * 24 * 15);
}

TEST_CASE("pooling shapes, including ceil mode and adaptive pooling") {
  auto g = model_from(R"([{"name":"p","op":"maxpool2d","kernel":3,"stride":2,"padding":1}])", R"({"channels":4,"height":112,"width":112})");
  CHECK(last(g).out == Shape{4, 56, 56, false});
  // googlenet: 112 -> maxpool(3, 2, ceil_mode) -> 56; 14 -> maxpool(2, 2, ceil) -> 7
  g = model_from(R"([{"name":"p","op":"maxpool2d","kernel":3,"stride":2,"ceil_mode":true}])", R"({"channels":4,"height":112,"width":112})");
  CHECK(last(g).out == Shape{4, 56, 56, false});
  g = model_from(R"([{"name":"p","op":"maxpool2d","kernel":3,"stride":2,"ceil_mode":true}])", R"({"channels":4,"height":28,"width":27})");
  CHECK(last(g).out == Shape{4, 14, 13, false});
  // ceil mode never starts a window past the input: 5 with k=2, s=2, p=1 -> 3 + ... PyTorch gives 3
  g = model_from(R"([{"name":"p","op":"avgpool2d","kernel":2,"stride":2,"padding":1,"ceil_mode":true}])", R"({"channels":1,"height":5,"width":4})");
  CHECK(last(g).out == Shape{1, 3, 3, false});
  g = model_from(R"([{"name":"p","op":"adaptive_avgpool2d","output":[6,6]}])", R"({"channels":256,"height":13,"width":13})");
  CHECK(last(g).out == Shape{256, 6, 6, false});
}

TEST_CASE("elementwise, concat, add, flatten, linear and loss shapes") {
  auto g = model_from(R"([
    {"name":"a","op":"conv2d","out_channels":4,"kernel":1,"bias":false},
    {"name":"b","op":"conv2d","inputs":["input"],"out_channels":6,"kernel":1,"bias":false},
    {"name":"cat","op":"concat","inputs":["a","b"]},
    {"name":"bn","op":"batchnorm2d"},
    {"name":"r","op":"relu6"},
    {"name":"s","op":"sigmoid"},
    {"name":"sum","op":"add","inputs":["r","s"]},
    {"name":"d","op":"dropout","p":0.2},
    {"name":"f","op":"flatten"},
    {"name":"fc","op":"linear","out_features":10},
    {"name":"loss","op":"softmax_cross_entropy"}])");
  CHECK(g.layers[2].out == Shape{10, 32, 32, false});
  CHECK(g.layers[3].params() == 20);
  CHECK(g.layers[6].out == Shape{10, 32, 32, false});
  CHECK(g.layers[8].out == Shape{10240, 1, 1, true});
  CHECK(g.layers[9].out == Shape{10, 1, 1, true});
  CHECK(g.layers[9].params() == 10240 * 10 + 10);
  CHECK(g.layers[10].out.elements() == 1);
  CHECK(g.layers[3].consumers == 1);
  CHECK(g.layers[4].consumers == 2);  // the sigmoid and the add
  CHECK(g.params() == 4 * 3 + 6 * 3 + 20 + 102410);
}

TEST_CASE("tiny test model loads from its file") {
  Graph g = tiny();
  CHECK(g.params() == 4266);
  CHECK(g.layers.back().op == Op::SoftmaxCrossEntropy);
}

static std::string error_of(const std::string& layers, const std::string& input = R"({"channels":3,"height":32,"width":32})") {
  try {
    model_from(layers, input);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("bad models are rejected with file, path and rule") {
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of(R"([{"name":"x","op":"conv3d","kernel":3}])"), Contains("test.json: $.layers[0].op") && Contains("unknown op 'conv3d'"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"relu","inputs":["nope"]}])"), Contains("$.layers[0].inputs") && Contains("not a layer defined earlier"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"relu"},{"name":"x","op":"relu"}])"), Contains("$.layers[1].name"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"conv2d","out_channels":4,"kernel":3,"stirde":2}])"), Contains("$.layers[0].stirde") && Contains("unknown field"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"conv2d","out_channels":0,"kernel":3}])"), Contains("$.layers[0].out_channels"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"conv2d","out_channels":4,"kernel":64}])"), Contains("kernel larger than the padded input"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"linear","out_features":4}])"), Contains("needs a vector input"));
  CHECK_THAT(error_of(R"([{"name":"a","op":"conv2d","out_channels":4,"kernel":1},{"name":"s","op":"add","inputs":["a","input"]}])"),
             Contains("add inputs differ in shape"));
  CHECK_THAT(error_of(R"([{"name":"a","op":"conv2d","out_channels":4,"kernel":1,"groups":2}])"), Contains("not divisible by groups"));
  CHECK_THAT(error_of(R"([{"name":"f","op":"flatten"},{"name":"l","op":"softmax_cross_entropy"},{"name":"r","op":"relu"}])"),
             Contains("must be the last layer"));
  CHECK_THAT(error_of(R"([])"), Contains("$.layers") && Contains("at least one layer"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"relu"}])", R"({"channels":3,"height":-1,"width":32})"), Contains("$.input.height"));
  CHECK_THAT(error_of(R"([{"name":"x","op":"maxpool2d","kernel":[2,2,2]}])"), Contains("exactly two elements"));
}

TEST_CASE("unknown model names and unreadable files are input errors") {
  CHECK_THROWS_AS(load_model("no-such-model"), InputError);
  CHECK_THROWS_AS(load_model("/nonexistent/model.json"), InputError);
  CHECK_THROWS_WITH(parse_model(Json::parse("[1,2]"), "m.json"), Catch::Matchers::Contains("m.json: $") && Catch::Matchers::Contains("must be an object"));
}
