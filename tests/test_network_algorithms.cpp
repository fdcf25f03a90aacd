// Identities and invariants every collective algorithm must keep (docs/design.md §4, Collectives).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.hpp"
#include "workload/model_json.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "network/impl/nccl/nccl.hpp"
#include "network/topology.hpp"

using namespace dtsim;

static ClusterSpec h100() { return load_cluster("h100-sxm"); }

TEST_CASE("network: every algorithm costs nothing on one GPU or for no bytes") {
  auto c = h100();
  for (const auto& name : collective_algorithm_names()) {
    auto a = make_collective_algorithm(name);
    for (CollectiveOp op : all_collective_ops()) {
      if (!a->supports(op)) {
        CHECK_THROWS_AS(a->time_s(op, 1e6, place(c, 8), c), InputError);
        continue;
      }
      INFO(name << " " << collective_op_name(op));
      CHECK(a->time_s(op, 1e9, place(c, 1), c) == 0);
      CHECK(a->time_s(op, 0, place(c, 16), c) == 0);
    }
  }
}

TEST_CASE("network: monotone in bytes and in GPUs, finite everywhere") {
  auto c = h100();
  for (const auto& name : collective_algorithm_names()) {
    auto a = make_collective_algorithm(name);
    for (CollectiveOp op : all_collective_ops()) {
      if (!a->supports(op)) continue;
      INFO(name << " " << collective_op_name(op));
      for (int p : {2, 3, 8, 16, 64, 1024}) {
        double prev = 0;
        for (double n = 4; n <= 4e9; n *= 2) {
          double t = a->time_s(op, n, place(c, p), c);
          REQUIRE(std::isfinite(t));
          CHECK(t >= prev * (1 - 1e-12));
          prev = t;
        }
      }
      // NCCL's models run the cheapest pair, so no slack for them either.
      const double slack = 1e-12;
      for (double n : {4096.0, 64e6}) {
        double prev = 0;
        for (int p = 2; p <= 1024; p *= 2) {
          double t = a->time_s(op, n, place(c, p), c);
          CHECK(t >= prev * (1 - slack));
          prev = t;
        }
      }
    }
  }
}

TEST_CASE("network: p = 2 ring all-reduce is the direct exchange of halves") {
  auto c = h100();
  const AlphaBeta t = textbook_costs(place(c, 2), c);
  const double n = 1e8;
  // Each GPU sends half its buffer, reduces the half it got, sends the result back: 2 messages of n/2.
  const double direct = t.base_s + 2 * t.alpha_intra_s + n * t.beta_intra_s_per_byte + n / 2 * t.gamma_s_per_byte;
  CHECK(make_collective_algorithm("ring")->time_s(CollectiveOp::AllReduce, n, place(c, 2), c) == Approx(direct));
  CHECK(make_collective_algorithm("rabenseifner")->time_s(CollectiveOp::AllReduce, n, place(c, 2), c) == Approx(direct));
  CHECK(make_collective_algorithm("hierarchical")->time_s(CollectiveOp::AllReduce, n, place(c, 2), c) == Approx(direct));
  // Recursive doubling swaps the whole buffer once and reduces all of it.
  CHECK(make_collective_algorithm("recursive-doubling")->time_s(CollectiveOp::AllReduce, n, place(c, 2), c) ==
        Approx(t.base_s + t.alpha_intra_s + n * t.beta_intra_s_per_byte + n * t.gamma_s_per_byte));
}

TEST_CASE("network: textbook formulas at a power of two inside a node") {
  auto c = h100();
  const int p = 8;
  const auto w = place(c, p);
  const AlphaBeta t = textbook_costs(w, c);
  const double n = 64e6, a = t.alpha_intra_s, b = t.beta_intra_s_per_byte, g = t.gamma_s_per_byte, lg = 3;
  CHECK(make_collective_algorithm("recursive-doubling")->time_s(CollectiveOp::AllReduce, n, w, c) == Approx(t.base_s + lg * (a + n * b + n * g)));
  CHECK(make_collective_algorithm("rabenseifner")->time_s(CollectiveOp::AllReduce, n, w, c) ==
        Approx(t.base_s + 2 * lg * a + 2.0 * (p - 1) / p * n * b + double(p - 1) / p * n * g));
  CHECK(make_collective_algorithm("tree")->time_s(CollectiveOp::AllReduce, n, w, c) == Approx(t.base_s + 2 * lg * a + 2 * n * b + n * g));
  CHECK(make_collective_algorithm("recursive-doubling")->time_s(CollectiveOp::AllGather, n, w, c) ==
        Approx(t.base_s + lg * a + double(p - 1) / p * n * b));
}

TEST_CASE("network: parameter server follows 2 n max(p/S, 1) b_server + 2 a") {
  auto c = h100();
  const auto& ps = c.collectives.parameter_server;
  const double b = 1 / (c.inter.nic_bandwidth_Bps / c.inter.oversubscription * ps.bandwidth_efficiency);
  for (int p : {4, 8, 64}) {
    const auto w = place(c, p);
    const double servers = ps.servers > 0 ? ps.servers : w.nodes;
    const double n = 1e8;
    CHECK(make_collective_algorithm("ps")->time_s(CollectiveOp::AllReduce, n, w, c) ==
          Approx(2 * n * std::max(p / servers, 1.0) * b + 2 * ps.latency_s));
  }
}

TEST_CASE("network: CUDA-aware MPI beats NCCL on small messages (Awan et al.: 5-17x over NCCL 2)") {
  auto c = h100();
  auto mpi = make_collective_algorithm("mpi");
  auto nccl = make_collective_algorithm("auto");
  for (int p : {2, 8, 64}) {
    INFO(p);
    CHECK(nccl->time_s(CollectiveOp::AllReduce, 4096, place(c, p), c) > 2 * mpi->time_s(CollectiveOp::AllReduce, 4096, place(c, p), c));
    // Large messages are bandwidth-bound for both: within a factor of two.
    double big = nccl->time_s(CollectiveOp::AllReduce, 1e9, place(c, p), c) / mpi->time_s(CollectiveOp::AllReduce, 1e9, place(c, p), c);
    CHECK(big > 0.5);
    CHECK(big < 2);
  }
}

TEST_CASE("network: auto says what NCCL runs and switches protocols with size") {
  auto c = h100();
  auto a = make_collective_algorithm("auto");
  auto small = a->estimate(CollectiveOp::AllReduce, 4096, place(c, 8), c);
  auto large = a->estimate(CollectiveOp::AllReduce, 1 << 30, place(c, 8), c);
  CHECK(small.algo == "ring");
  CHECK(small.protocol == "LL");
  CHECK(large.protocol == "Simple");
  CHECK(large.channels == c.collectives.nccl.channels);
  CHECK(small.channels < large.channels);
  // Across many nodes small all-reduces go up and down a tree (latency lg N, not N).
  CHECK(a->estimate(CollectiveOp::AllReduce, 4096, place(c, 256), c).algo == "tree");
  // Bus bandwidth stays below the link's line rate.
  double busbw = (1 << 30) / large.time_s * bus_bandwidth_factor(CollectiveOp::AllReduce, 8);
  CHECK(busbw < c.intra.bandwidth_Bps);
  CHECK(busbw > 0.5 * c.intra.bandwidth_Bps);
  // Only ring implements the other collectives; nccl-tree refuses them.
  CHECK(a->estimate(CollectiveOp::AllGather, 1e6, place(c, 8), c).algo == "ring");
  CHECK_THROWS_WITH(make_collective_algorithm("nccl-tree")->time_s(CollectiveOp::AllGather, 1e6, place(c, 8), c), Catch::Matchers::Contains("--algo"));
}

TEST_CASE("network: topology — NVLink vs PCIe, NICs, oversubscription, placement") {
  auto c = h100();
  auto a = make_collective_algorithm("auto");
  // Halving the network (oversubscription 2) slows multi-node all-reduce, not single-node.
  ClusterSpec thin = c;
  thin.inter.oversubscription = 8;
  CHECK(a->time_s(CollectiveOp::AllReduce, 1e9, place(thin, 64), thin) > 1.5 * a->time_s(CollectiveOp::AllReduce, 1e9, place(c, 64), c));
  CHECK(a->time_s(CollectiveOp::AllReduce, 1e9, place(thin, 8), thin) == a->time_s(CollectiveOp::AllReduce, 1e9, place(c, 8), c));
  CHECK(comm_bottleneck(place(thin, 64), thin) == "inter-node network");
  CHECK(comm_bottleneck(place(c, 8), c) == "intra-node nvswitch");
  CHECK(comm_bottleneck(place(c, 1), c) == "none");
  // PCIe inside the node prices steps at PCIe's hop latency and a slower link.
  ClusterSpec pcie = c;
  pcie.intra.kind = "pcie";
  pcie.intra.bandwidth_Bps = 32e9;
  CHECK(a->time_s(CollectiveOp::AllReduce, 1e8, place(pcie, 8), pcie) > 5 * a->time_s(CollectiveOp::AllReduce, 1e8, place(c, 8), c));
  const NcclJob j = nccl_job(place(c, 12), c);
  CHECK(j.nodes == 2);
  CHECK(j.local == 8);
  // A node with fewer GPUs than NICs uses one NIC per GPU.
  CHECK(nccl_job(place(c, 1), c).node_net_bandwidth_Bps == Approx(c.inter.nic_bandwidth_Bps));
}

TEST_CASE("network: hierarchical all-reduce beats a flat ring across many nodes for small messages") {
  auto c = h100();
  auto w = place(c, 256);
  CHECK(make_collective_algorithm("hierarchical")->time_s(CollectiveOp::AllReduce, 1e6, w, c) <
        make_collective_algorithm("ring")->time_s(CollectiveOp::AllReduce, 1e6, w, c));
}

TEST_CASE("network: cluster files reject bad collectives.nccl fields") {
  Json good = load_json_file(config_dir() + "/clusters/h200-sxm.json");
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
  CHECK_THAT(broken([](Json& j) { j["collectives"]["nccl"]["channels"] = 0; }), Contains("$.collectives.nccl.channels"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["nccl"]["link_efficiency"]["nvlink"] = 1.5; }), Contains("$.collectives.nccl.link_efficiency.nvlink"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["nccl"]["base_latency_s"]["ring"]["ll"] = -1; }), Contains("base_latency_s.ring.ll"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["nccl"]["enabled"]["ring"] = {"LL256"}; }), Contains("unknown protocol"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["nccl"]["tree_max_per_channel_GBps"] = {1, 2}; }), Contains("array of 3"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["mpi"]["latency_s"] = "fast"; }), Contains("$.collectives.mpi.latency_s"));
  CHECK_THAT(broken([](Json& j) { j["collectives"]["parameter_server"]["servrs"] = 2; }), Contains("unknown field"));
  // A cluster without the section gets NCCL's own tables.
  Json bare = good;
  bare["collectives"] = {{"base_latency_s", 8.4e-6}};
  CHECK(parse_cluster(bare, "c.json").collectives.nccl.channels == default_nccl_tuning().channels);
}

TEST_CASE("network: NVLS and NVLSTree run where the cluster enables them, PAT with one GPU per node") {
  ClusterSpec c = h100();
  auto a = make_collective_algorithm("auto");
  // The preset keeps NVLS off (its measured runs disabled it): a large all-reduce on one node is a ring.
  REQUIRE_FALSE(c.collectives.nccl.nvls.enabled);
  const double n = 8.0 * (1 << 30);
  const CollectiveEstimate off = a->estimate(CollectiveOp::AllReduce, n, place(c, 8), c);
  CHECK(off.algo != "nvls");
  ClusterSpec on = c;
  on.collectives.nccl.nvls.enabled = true;
  const CollectiveEstimate one = a->estimate(CollectiveOp::AllReduce, n, place(on, 8), on);
  CHECK(one.algo == "nvls");
  CHECK(one.time_s < off.time_s);
  // NCCL's maintainer: ~480 GB/s of bus bandwidth on 8 H100s with NVLS (the preset's efficiency is fitted to it).
  CHECK(n / one.time_s * bus_bandwidth_factor(CollectiveOp::AllReduce, 8) == Approx(480e9).epsilon(0.05));
  // Two nodes: NVLSTree beats the network's ring (each node sends half its reduced buffer to the other).
  const CollectiveEstimate two = a->estimate(CollectiveOp::AllReduce, n, place(on, 16), on);
  CHECK(two.algo == "nvlstree");
  const double ring_busbw = n / make_collective_algorithm("nccl-ring")->time_s(CollectiveOp::AllReduce, n, place(on, 16), on) *
                            bus_bandwidth_factor(CollectiveOp::AllReduce, 16);
  CHECK(n / two.time_s * bus_bandwidth_factor(CollectiveOp::AllReduce, 16) > 1.15 * ring_busbw);
  // nccl-ring and nccl-tree stay what they say.
  CHECK(make_collective_algorithm("nccl-ring")->estimate(CollectiveOp::AllReduce, n, place(on, 8), on).algo == "ring");
  // PAT: all-gather over many single-GPU nodes at a mid size, where the ring pays N network steps.
  ClusterSpec single = c;
  single.gpus_per_node = 1;
  single.nodes = 1024;
  CHECK(a->estimate(CollectiveOp::AllGather, 16 << 20, place(single, 512), single).algo == "pat");
  CHECK(a->estimate(CollectiveOp::AllGather, 16 << 20, place(c, 512), c).algo == "ring");
}
