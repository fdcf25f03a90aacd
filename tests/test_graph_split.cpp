// torch.compile's cut of a DDP graph at DDP's buckets (FrameworkSpec::compiled_ddp_split_copies): the
// activation gradients that cross a cut are copied, as torch.profiler and DDPOptimizer's log show
// (validation/data/h200-sxm/pytorch_modes/graph_split), and priced as bytes at a fraction of the
// memory bandwidth.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "network/cluster.hpp"
#include "sim/framework.hpp"
#include "sim/predict.hpp"
#include "sim/schedule.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

struct Split {
  std::map<std::string, int> copies_by_layer;
  double copy_s = 0;
  double copy_bytes = 0;
  double iteration_s = 0;
};

Split split_copies(const std::string& model, int64_t batch, Execution e, const ClusterSpec& c) {
  const Graph g = load_model(model);
  TrainingConfig cfg;
  cfg.batch_per_gpu = batch;
  cfg.precision = Precision::BF16;
  cfg.mode.execution = e;
  cfg.record_kernels = true;
  const Prediction p = predict(g, c, cfg);
  Split s;
  s.iteration_s = p.iteration_s;
  for (const KernelSpan& k : p.timeline.kernels)
    if (k.kind == KernelKind::Eltwise && std::string(k.variant) == "graph_split_copy") {
      ++s.copies_by_layer[g.layers[k.layer].name];
      s.copy_s += k.end_s - k.start_s;
      s.copy_bytes += 4.0 * batch * g.layers[k.layer].out.elements();  // bf16, read and written
    }
  return s;
}

ClusterSpec pytorch_h200() { return apply_framework(load_cluster("h200-sxm"), load_framework("pytorch")); }

}  // namespace

TEST_CASE("graph split: the copies DDPOptimizer's cuts cost resnet50, resnet18 and vgg16, none in eager or one-bucket steps") {
  const ClusterSpec c = pytorch_h200();
  // DDPOptimizer's log of compiled resnet50 b128 (graph_split/split): cuts inside layer4.1 and layer4.0
  // after conv1's ReLU and inside layer3.0 between the main path's bn3 and the downsample; each hands
  // over two activations. A block input that a layer before the cut also reads is copied three times,
  // the other twice: torch.profiler's 15 copies.
  const std::map<std::string, int> resnet50 = {{"layer4.0.relu_out", 2}, {"layer4.0.add", 1}, {"layer4.1.relu", 1}, {"layer4.1.bn1", 1},
                                               {"layer3.5.relu_out", 2}, {"layer3.5.add", 1}, {"layer4.0.relu", 1}, {"layer4.0.bn1", 1},
                                               {"layer2.3.relu_out", 2}, {"layer2.3.add", 1}, {"layer3.0.bn3", 2}};
  CHECK(split_copies("resnet50", 128, Execution::Compile, c).copies_by_layer == resnet50);
  CHECK(split_copies("resnet50", 128, Execution::CompileCudaGraphs, c).copies_by_layer == resnet50);
  // resnet18: one cut inside layer4.0, 5 copies; vgg16: cuts after features.11 and the pooling
  // features.23, whose gradient copy before the convolution's backward is of the pooling's input.
  CHECK(split_copies("resnet18", 128, Execution::Compile, c).copies_by_layer ==
        std::map<std::string, int>{{"layer3.1.relu_out", 2}, {"layer3.1.add", 1}, {"layer4.0.relu", 1}, {"layer4.0.bn1", 1}});
  CHECK(split_copies("vgg16", 64, Execution::Compile, c).copies_by_layer ==
        std::map<std::string, int>{{"features.23", 1}, {"features.21", 1}, {"features.11", 1}, {"features.10", 1}});
  // mobilenet_v2's one cut is before its classifier (a vector): nothing to copy.
  CHECK(split_copies("mobilenet_v2", 128, Execution::Compile, c).copies_by_layer.empty());
  CHECK(split_copies("resnet50", 128, Execution::Eager, c).copies_by_layer.empty());
  CHECK(split_copies("resnet50", 128, Execution::Compile, apply_framework(load_cluster("h200-sxm"), load_framework("harness")))
            .copies_by_layer.empty());
  ClusterSpec one_bucket = c;
  set_bucket_mb(one_bucket, 10000, "--bucket-mb");
  CHECK(split_copies("resnet50", 128, Execution::Compile, one_bucket).copies_by_layer.empty());  // the one cut is before fc
}

TEST_CASE("graph split: the copies stream their bytes at the profile's fraction of the bandwidth, and cost time") {
  const ClusterSpec c = pytorch_h200();
  const double fraction = c.framework.compiled_ddp_split_copy_bandwidth_fraction;
  REQUIRE(fraction > 0);
  for (const char* model : {"resnet50", "resnet18", "vgg16"})
    for (int64_t batch : {32, 128, 512}) {
      INFO(model << " b" << batch);
      const Split s = split_copies(model, batch, Execution::CompileCudaGraphs, c);
      REQUIRE(s.copy_s > 0);
      CHECK(s.copy_s == Approx(s.copy_bytes / (fraction * c.gpu.memory_bandwidth_Bps)).epsilon(1e-9));
      // More memory bandwidth: the copies never take longer, and the step never gets slower.
      for (double scale : {0.5, 2.0, 4.0}) {
        ClusterSpec faster = c;
        faster.gpu.memory_bandwidth_Bps *= scale;
        const Split f = split_copies(model, batch, Execution::CompileCudaGraphs, faster);
        CHECK(f.copy_s == Approx(s.copy_s / scale).epsilon(1e-9));
        if (scale > 1) CHECK(f.iteration_s <= s.iteration_s * (1 + 1e-12));
      }
      ClusterSpec none = c;
      none.framework.compiled_ddp_split_copy_bandwidth_fraction = 0;
      CHECK(split_copies(model, batch, Execution::CompileCudaGraphs, none).iteration_s < s.iteration_s);
    }
}

TEST_CASE("graph split: a profile's bandwidth fraction is checked") {
  const auto parse = [](const std::string& split) {
    return parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":1e-5,"iteration_overhead_s":0,"compiled_ddp_split_copies":)" + split + "}"),
                           "fw.json");
  };
  CHECK(parse(R"({"bandwidth_fraction":0.2})").compiled_ddp_split_copy_bandwidth_fraction == 0.2);
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0})"), Catch::Contains("fw.json") && Catch::Contains("bandwidth_fraction"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":1.5})"), Catch::Contains("bandwidth_fraction"));
  CHECK_THROWS_WITH(parse(R"({"bandwidth_fraction":0.2,"rate":1})"), Catch::Contains("rate"));
  CHECK_THROWS_WITH(parse("true"), Catch::Contains("compiled_ddp_split_copies"));
}
