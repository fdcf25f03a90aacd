// Calibration: reading measurements (the harness's JSON, nccl-tests' text), recovering known
// constants from synthetic data, and the CLI contract of `dtsim calibrate`.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.hpp"
#include "network/calibrate.hpp"
#include "network/cluster.hpp"
#include "network/measured.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("dtsim_net_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Points priced by a known tuning: what a perfect measurement of that machine would show.
std::vector<MeasuredPoint> synthetic(const ClusterSpec& c, const NcclTuning& truth, CollectiveOp op, int gpus, int nodes) {
  std::vector<MeasuredPoint> pts;
  for (double n = 4096; n <= (1 << 30); n *= 2) {
    MeasuredPoint m;
    m.op = op;
    m.bytes = n;
    m.gpus = gpus;
    m.nodes = nodes;
    m.time_s = predict_measured(c, truth, m).time_s;
    pts.push_back(m);
  }
  return pts;
}

}  // namespace

TEST_CASE("calibrate: recovers known intra-node constants from synthetic data") {
  ClusterSpec c = load_cluster("h200-sxm");
  c.collectives.nccl = default_nccl_tuning();
  NcclTuning truth = default_nccl_tuning();
  truth.channels = 24;
  truth.link_efficiency[kHwNvlink] = 0.71;
  truth.cost_latency_scale = {1.3, 1.0, 1.6};
  truth.cost_bandwidth_scale = {1.5, 0.9, 1.0};
  auto pts = synthetic(c, truth, CollectiveOp::AllReduce, 2, 1);
  auto more = synthetic(c, truth, CollectiveOp::AllReduce, 8, 1);
  pts.insert(pts.end(), more.begin(), more.end());
  CalibrationResult r = calibrate(c, pts);
  CHECK(r.max_abs_error < 0.01);
  CHECK(r.tuning.channels == 24);
  CHECK(r.tuning.link_efficiency[kHwNvlink] == Approx(0.71).epsilon(0.01));
  CHECK(r.max_abs_error_before > 0.1);  // the defaults were far off: the fit did the work
}

TEST_CASE("calibrate: recovers network constants from multi-node synthetic data") {
  ClusterSpec c = load_cluster("h100-sxm");
  NcclTuning truth = c.collectives.nccl;
  truth.link_efficiency[kHwNet] = 0.5;  // low enough that the network, not NVLink, limits
  for (auto& a : truth.hop_latency_s[kHwNet])
    for (double& x : a) x *= 1.5;
  auto pts = synthetic(c, truth, CollectiveOp::AllReduce, 16, 2);
  auto more = synthetic(c, truth, CollectiveOp::AllReduce, 64, 8);
  pts.insert(pts.end(), more.begin(), more.end());
  CalibrationResult r = calibrate(c, pts);
  CHECK(r.max_abs_error < 0.01);
  CHECK(r.tuning.link_efficiency[kHwNet] == Approx(0.5).epsilon(0.01));
  CHECK(r.tuning.hop_latency_s[kHwNet][kNcclRing][kNcclSimple] == Approx(truth.hop_latency_s[kHwNet][kNcclRing][kNcclSimple]).epsilon(0.02));
}

TEST_CASE("calibrate: on the preset's own H100 data no measurement ends worse than under the preset") {
  // One all-gather (reduce-scatter) factor serves 2 and 4 GPUs, whose bus bandwidths differ by 18% (all-reduce's by 9%):
  // least squares fitted it to 2 GPUs and made 4 GPUs at 1 GiB 24% slow, where the preset (fitted to
  // all-reduce) was within 2%.
  const ClusterSpec c = load_cluster("h100-sxm");
  const MeasuredSet s = read_measured(std::string(DTSIM_SOURCE_DIR) + "/validation/data/h100-sxm/collective");
  REQUIRE(s.points.size() > 200);
  const CalibrationResult r = calibrate(c, s.points);
  for (const auto& p : r.points) {
    INFO(collective_op_name(p.measured.op) << " " << p.measured.gpus << " GPUs, " << static_cast<int64_t>(p.measured.bytes) << " B: " << p.error_before() << " -> " << p.error());
    CHECK(std::fabs(p.error()) <= std::fabs(p.error_before()) + 0.02);
    if (p.measured.gpus == 4 && p.measured.bytes == (1 << 30) && (p.measured.op == CollectiveOp::AllGather || p.measured.op == CollectiveOp::ReduceScatter))
      CHECK(std::fabs(p.error()) < 0.04);
  }
  // Still a calibration: better on the whole, and it says what it held back from.
  CHECK(r.median_abs_error < r.median_abs_error_before);
  CHECK(r.max_abs_error <= r.max_abs_error_before);
  CHECK(r.held_back.find("allgather") != std::string::npos);
  CHECK(r.held_back.find('\n') == std::string::npos);
}

TEST_CASE("calibrate: nccl-tests logs, with launcher prefixes and in-place columns") {
  const std::string log = temp_path("ar.log");
  write(log, R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
 0: #  Rank  0 Group  0 Pid 1 on nodeA device  0 [0x18] NVIDIA H100 80GB HBM3
 0: #  Rank  1 Group  0 Pid 2 on nodeA device  1 [0x2a] NVIDIA H100 80GB HBM3
 0: #  Rank  2 Group  0 Pid 3 on nodeB device  0 [0x18] NVIDIA H100 80GB HBM3
 0: #  Rank  3 Group  0 Pid 4 on nodeB device  1 [0x2a] NVIDIA H100 80GB HBM3
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
nodeA:12:12 [0] NCCL INFO some line that is not a result
 0:            0             0     float     sum      -1     6.36    0.00    0.00      0     6.40    0.00    0.00      0
 0:         4096          1024     float     sum      -1    18.74    0.22    0.33      0    18.28    0.22    0.34      0
 0:      1048576        262144     float     sum      -1    40.50   25.89   38.84    N/A    40.10   26.15   39.22    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 13.06
# Collective test concluded: all_reduce_perf
)");
  MeasuredSet s = read_measured(log);
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[0].op == CollectiveOp::AllReduce);
  CHECK(s.points[0].gpus == 4);
  CHECK(s.points[0].nodes == 2);
  CHECK(s.points[1].bytes == 1048576);
  CHECK(s.points[1].time_s == Approx(40.5e-6));
  // Without the closing line the collective must be named.
  const std::string bare = temp_path("bare.log");
  write(bare, "#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] X\n#  Rank  1 Group  0 Pid 1 on h device  1 [0x18] X\n"
              "        4096          1024     float    none      -1    18.74    0.22    0.33      0    18.28    0.22    0.34      0\n");
  CHECK_THROWS_WITH(read_measured(bare), Catch::Matchers::Contains("--op"));
  CHECK(read_measured(bare, CollectiveOp::AllGather).points.at(0).op == CollectiveOp::AllGather);
  const std::string wrong = temp_path("wrong.log");
  write(wrong, "#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] X\n        4096          1024     float     sum      -1    18.74    0.22    0.33      3    18.28    0.22    0.34      0\n");
  CHECK_THROWS_WITH(read_measured(wrong, CollectiveOp::AllReduce), Catch::Matchers::Contains(wrong + ":2") && Catch::Matchers::Contains("wrong"));
  for (const auto& f : {log, bare, wrong}) fs::remove(f);
}

TEST_CASE("calibrate: harness JSON, its errors named by JSON path") {
  const std::string dir = temp_path("dir");
  fs::create_directories(dir);
  write(dir + "/allreduce_2gpu.json", R"({"op": "allreduce", "gpus": 2, "provenance": {"gpu": {"name": "NVIDIA H200"}},
    "rows": [{"bytes": 4, "skipped": "too small"}, {"bytes": 4096, "time_s": 9.6e-6, "check": "ok"}, {"bytes": 8192, "time_s": 9.7e-6}]})");
  write(dir + "/provenance.json", R"({"gpu": {"name": "NVIDIA H200"}})");
  MeasuredSet s = read_measured(dir);
  CHECK(s.points.size() == 2);
  CHECK(s.gpu == "NVIDIA H200");
  write(dir + "/bad.json", R"({"op": "allreduce", "gpus": 2, "rows": [{"bytes": 4096, "time_s": -1}]})");
  CHECK_THROWS_WITH(read_measured(dir + "/bad.json"), Catch::Matchers::Contains("bad.json: $.rows[0].time_s"));
  write(dir + "/bad.json", R"({"op": "alltoall", "gpus": 2, "rows": []})");
  CHECK_THROWS_WITH(read_measured(dir + "/bad.json"), Catch::Matchers::Contains("$.op"));
  write(dir + "/bad.json", R"({"op": "allreduce", "gpus": 2, "rows": [{"bytes": 4096, "time_s": 1e-5, "check": "FAILED"}]})");
  CHECK_THROWS_WITH(read_measured(dir + "/bad.json"), Catch::Matchers::Contains("$.rows[0].check"));
  fs::remove_all(dir);
}

TEST_CASE("calibrate: the CLI writes a cluster that loads, and refuses bad input with exit 2") {
  const std::string meas = temp_path("m.json"), out = temp_path("c.json"), log = temp_path("log");
  ClusterSpec c = load_cluster("h200-sxm");
  Json rows = Json::array();
  for (const auto& p : synthetic(c, c.collectives.nccl, CollectiveOp::AllReduce, 2, 1)) rows.push_back({{"bytes", p.bytes}, {"time_s", p.time_s * 1.1}});
  write(meas, Json({{"op", "allreduce"}, {"gpus", 2}, {"rows", rows}}).dump());
  auto run = [&](const std::string& args) {
    int st = std::system((std::string(DTSIM_BINARY) + " calibrate " + args + " >" + log + " 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  REQUIRE(run("--measured " + meas + " --cluster h200-sxm --out " + out) == 0);
  ClusterSpec cal = load_cluster(out);
  CHECK(cal.collectives.nccl.calibration["points"] == rows.size());
  // 10% slower everywhere: the fit follows (NCCL's switch points move on a grid, hence not exactly).
  CHECK(cal.collectives.nccl.calibration["median_abs_error"].get<double>() < 0.02);
  CHECK(cal.collectives.nccl.calibration["max_abs_error"].get<double>() < 0.1);
  write(meas, "{\"op\": \"allreduce\", \"gpus\": 2, \"rows\": [{\"bytes\": 4096}]}");
  CHECK(run("--measured " + meas + " --cluster h200-sxm") == 2);
  std::ifstream in(log);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(all.find(meas + ": $.rows[0].time_s") != std::string::npos);
  for (const auto& f : {meas, out, log}) fs::remove(f);
}

TEST_CASE("calibrate: on healthy socket logs every fitted constant stays inside its range, and what the data cannot pin is named") {
  // Two socket logs (2 and 4 emulated nodes, 7 sizes each) on which the fit once ran a latency
  // correction to 2444, beyond the format's [0.001, 1000], and then refused its own answer.
  const ClusterSpec c = load_cluster("h100-sxm");
  std::vector<MeasuredPoint> pts;
  for (const char* f : {"allreduce_2gpu.json", "allreduce_4gpu.json"}) {
    MeasuredSet s = read_measured(std::string(DTSIM_TEST_DATA) + "/calibrate_sockets/" + f, std::nullopt, std::nullopt);
    for (auto& p : s.points) p.nodes = p.gpus;  // --gpus-per-node 1
    pts.insert(pts.end(), s.points.begin(), s.points.end());
  }
  REQUIRE(pts.size() == 14);
  const CalibrationResult r = calibrate(c, pts);
  // The stored constants read back through the cluster parser (which enforces every range).
  CHECK_NOTHROW(parse_nccl_tuning(nccl_tuning_json(r.tuning), "calibration", "$"));
  for (int p = 0; p < kNcclProtos; ++p) {
    CHECK(r.tuning.cost_latency_scale[p] >= 1e-3);
    CHECK(r.tuning.cost_latency_scale[p] <= 1e3);
    CHECK(r.tuning.cost_bandwidth_scale[p] >= 1e-3);
  }
  // The fit improves on the preset (which knows nothing of sockets) and says what it could not pin.
  CHECK(r.median_abs_error < r.median_abs_error_before);
  REQUIRE_FALSE(r.unpinned.empty());
  for (const auto& u : r.unpinned) CHECK(u.find("measure ") != std::string::npos);
}
