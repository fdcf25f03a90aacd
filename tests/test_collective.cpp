#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "workload/model_json.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "network/impl/ring.hpp"
#include "sim/whatif.hpp"

using namespace dtsim;

static ClusterSpec h100() { return load_cluster("h100-sxm"); }

TEST_CASE("ring all-reduce: p = 1 and n = 0 cost nothing") {
  auto c = h100();
  RingAlgorithm ring;
  CHECK(ring.time_s(CollectiveOp::AllReduce, 1e9, place(c, 1), c) == 0);
  CHECK(ring.time_s(CollectiveOp::AllReduce, 0, place(c, 8), c) == 0);
}

TEST_CASE("ring all-reduce follows the alpha-beta-gamma formula inside a node") {
  auto c = h100();
  RingAlgorithm ring;
  for (int p : {2, 4, 8}) {
    auto where = place(c, p);
    double n = 256e6;
    double a = c.intra.latency_s, b = 1 / c.intra.bandwidth_Bps, g = 3 / c.gpu.memory_bandwidth_Bps;
    double expect = c.collectives.base_latency_s + 2 * (p - 1) * a + 2.0 * (p - 1) / p * n * b + double(p - 1) / p * n * g;
    CHECK(ring.time_s(CollectiveOp::AllReduce, n, where, c) == Approx(expect));
    // Bus bandwidth stays below the link's: the formula's bandwidth term alone would equal it.
    double t = ring.time_s(CollectiveOp::AllReduce, n, where, c);
    double busbw = n / t * bus_bandwidth_factor(CollectiveOp::AllReduce, p);
    CHECK(busbw < c.intra.bandwidth_Bps);
    CHECK(busbw > 0.5 * c.intra.bandwidth_Bps);
  }
}

TEST_CASE("ring all-reduce is monotone in bytes and GPUs, and stays finite at huge p") {
  auto c = h100();
  RingAlgorithm ring;
  double prev = 0;
  for (int p = 2; p <= c.capacity_gpus(); p *= 2) {
    double t = ring.time_s(CollectiveOp::AllReduce, 100e6, place(c, p), c);
    CHECK(t > prev);
    prev = t;
  }
  CHECK(std::isfinite(prev));
  // Crossing from one node to two switches the bottleneck to the network.
  CHECK(ring.time_s(CollectiveOp::AllReduce, 1e9, place(c, 9), c) > ring.time_s(CollectiveOp::AllReduce, 1e9, place(c, 8), c));
  CHECK(RingAlgorithm::link_cost(place(c, 9), c).bottleneck == "inter-node network");
  double t1 = 0;
  for (double n = 1; n < 1e12; n *= 10) {
    double t = ring.time_s(CollectiveOp::AllReduce, n, place(c, 16), c);
    CHECK(t > t1);
    t1 = t;
  }
}

TEST_CASE("ring latency across nodes: network steps cost the network's latency") {
  auto c = h100();
  RingAlgorithm ring;
  // 32 GPUs on 4 nodes; a tiny message is all latency: 2 passes of 31 steps, 4 of each crossing the network.
  double t = ring.time_s(CollectiveOp::AllReduce, 4, place(c, 32), c);
  double expect = c.collectives.base_latency_s + 2 * (27 * c.intra.latency_s + 4 * c.inter.latency_s);
  CHECK(t == Approx(expect).epsilon(1e-3));
}

TEST_CASE("other ring collectives and nccl-tests bus bandwidth factors") {
  auto c = h100();
  RingAlgorithm ring;
  auto w = place(c, 4);
  double n = 64e6;
  double ar = ring.time_s(CollectiveOp::AllReduce, n, w, c);
  double rs = ring.time_s(CollectiveOp::ReduceScatter, n, w, c);
  double ag = ring.time_s(CollectiveOp::AllGather, n, w, c);
  CHECK(rs + ag == Approx(ar + c.collectives.base_latency_s));  // all-reduce is reduce-scatter then all-gather, in one call
  CHECK(bus_bandwidth_factor(CollectiveOp::AllReduce, 4) == Approx(1.5));
  CHECK(bus_bandwidth_factor(CollectiveOp::AllGather, 4) == Approx(0.75));
  CHECK(bus_bandwidth_factor(CollectiveOp::Broadcast, 4) == 1);
}

TEST_CASE("placement fills nodes and refuses jobs larger than the cluster") {
  auto c = h100();
  CHECK(place(c, 8).nodes == 1);
  CHECK(place(c, 9).nodes == 2);
  CHECK(place(c, 1024).nodes == 128);
  CHECK_THROWS_AS(place(c, 0), InputError);
  CHECK_THROWS_WITH(place(c, 1025), Catch::Matchers::Contains("--gpus"));
  CHECK_THROWS_AS(make_collective_algorithm("magic"), InputError);
}

// `dtsim collective` offers collective_what_if_axes(): every one must move some collective's time,
// and every axis left out must move none (a flag that changed nothing would be a silent no-op).
TEST_CASE("the what-if axes dtsim collective offers are exactly those that reach a collective") {
  const ClusterSpec base = h100();
  auto changed = [](const std::string& axis) {
    WhatIf w;
    const double value = axis == "intra_node_GBps" ? 100 : axis == "nic_Gbps" ? 100 : axis == "gpus_per_node" ? 4 : 2;
    set_what_if_axis(w, axis, value, axis);
    return w;
  };
  const auto& offered = collective_what_if_axes();
  for (const auto& axis : what_if_axes()) {
    const ClusterSpec c = apply_what_if(base, changed(axis));
    bool reaches = false;
    for (const auto& name : collective_algorithm_names()) {
      auto algo = make_collective_algorithm(name);
      for (CollectiveOp op : all_collective_ops())
        for (int gpus : {2, 16})
          for (double bytes : {4.0, 1048576.0, 1073741824.0})
            if (algo->supports(op)) reaches |= algo->time_s(op, bytes, place(c, gpus), c) != algo->time_s(op, bytes, place(base, gpus), base);
    }
    INFO(axis);
    CHECK(reaches == (std::find(offered.begin(), offered.end(), axis) != offered.end()));
  }
}

TEST_CASE("cluster files are validated field by field") {
  Json good = load_json_file(config_dir() + "/clusters/h100-sxm.json");
  CHECK_NOTHROW(parse_cluster(good, "c.json"));
  auto broken = [&](auto edit) {
    Json j = good;
    edit(j);
    try {
      parse_cluster(j, "c.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(broken([](Json& j) { j["nodes"] = 0; }), Contains("c.json: $.nodes"));
  CHECK_THAT(broken([](Json& j) { j["intra_node"]["bandwidth_GBps"] = -5; }), Contains("$.intra_node.bandwidth_GBps"));
  CHECK_THAT(broken([](Json& j) { j["inter_node"]["oversubscription"] = 0.5; }), Contains("$.inter_node.oversubscription"));
  CHECK_THAT(broken([](Json& j) { j["gpus_per_nod"] = 8; }), Contains("$.gpus_per_nod") && Contains("unknown field"));
  CHECK_THAT(broken([](Json& j) { j["gpu"] = "tpu-v9"; }), Contains("$.gpu") && Contains("unknown GPU"));
  CHECK_THAT(broken([](Json& j) { j["intra_node"]["kind"] = "ethernet"; }), Contains("$.intra_node.kind"));
  CHECK_THAT(broken([](Json& j) { j.erase("framework"); }), Contains("$.framework") && Contains("missing"));
  for (const auto& name : cluster_presets()) {
    INFO(name);
    CHECK_NOTHROW(load_cluster(name));
  }
  CHECK(cluster_presets().size() >= 4);
}
