// Verdicts: they agree with the breakdown, and the sweep verdict finds the thresholds.
#include <catch2/catch.hpp>

#include "sim/framework.hpp"

#include "helpers.hpp"
#include "report/verdict_report.hpp"
#include "study/verdict.hpp"

using namespace dtsim;

static StudyRow predicted(const std::string& model, int64_t gpus, int64_t batch) {
  TrainingConfig cfg;
  cfg.gpus = gpus;
  cfg.batch_per_gpu = batch;
  return study_row(load_model(model), load_cluster("h100-sxm"), cfg, WhatIf{}, TrainGoal{}, false);
}

TEST_CASE("verdict: the bound is the largest part of the breakdown whose improvement helps, and says its share") {
  for (const char* m : {"resnet50", "mobilenet_v2", "vgg16", "alexnet"})
    for (int gpus : {1, 64, 1024})
      for (int batch : {1, 64, 256}) {
        INFO(m << " gpus=" << gpus << " batch=" << batch);
        StudyRow r = predicted(m, gpus, batch);
        IterationShares s = iteration_shares(r.p);
        CHECK(s.bound == r.p.bottleneck);
        CHECK(s.compute_bound_s + s.memory_bound_s + s.exposed_comm_s + s.host_idle_s == Approx(r.p.iteration_s).epsilon(1e-9));
        const double parts[] = {s.compute_bound_s, s.memory_bound_s, s.exposed_comm_s, s.host_idle_s};
        const double bound_part = s.bound == "compute" ? s.compute_bound_s : s.bound == "memory" ? s.memory_bound_s
                                : s.bound == "communication" ? s.exposed_comm_s : s.host_idle_s;
        // A larger part is passed over only where improving its resource 2x buys less than
        // kBottleneckGain of the iteration (mobilenet_v2 at batch 1: memory-bound kernels take 67%,
        // but the host sets the pace; twice the memory bandwidth buys 0.08%).
        for (int i = 0; i < 4; ++i)
          if (parts[i] > bound_part) {
            TrainingConfig cfg;
            cfg.gpus = gpus;
            cfg.batch_per_gpu = batch;
            const double better = predict(load_model(m), apply_what_if(load_cluster("h100-sxm"), improved(static_cast<Resource>(i))), cfg).iteration_s;
            INFO(resource_name(static_cast<Resource>(i)) << " is larger than the bound " << s.bound);
            CHECK(r.p.iteration_s - better < kBottleneckGain * r.p.iteration_s);
            CHECK(config_verdict(r).find("would shorten the iteration by less than 0.1%") != std::string::npos);
          }
        std::string v = config_verdict(r);
        std::string word = s.bound;
        word[0] = static_cast<char>(std::toupper(word[0]));
        CHECK(v.rfind(word + "-bound", 0) == 0);
        char share[16];
        std::snprintf(share, sizeof share, "(%.0f%%)", 100 * bound_part / r.p.iteration_s);
        CHECK(v.find(share) != std::string::npos);
        CHECK(short_verdict(r).rfind(s.bound + "-bound", 0) == 0);
        if (gpus > 1) CHECK(v.find(r.link) != std::string::npos);
      }
}

TEST_CASE("verdict: a host-bound and a communication-bound case say so") {
  // One sample per GPU on MobileNetV2 under eager PyTorch's measured host costs: the GPU finishes
  // each kernel before the host issues the next.
  TrainingConfig one;
  one.gpus = 1;
  one.batch_per_gpu = 1;
  StudyRow host = study_row(load_model("mobilenet_v2"), apply_framework(load_cluster("h100-sxm"), load_framework("pytorch")), one,
                            WhatIf{}, TrainGoal{}, false);
  CHECK(iteration_shares(host.p).bound == "host");
  CHECK(config_verdict(host).rfind("Host-bound", 0) == 0);
  // VGG-16's 553 MB of gradients across 64 GPUs when each node has one 1 Gb/s NIC.
  TrainingConfig cfg;
  cfg.gpus = 64;
  cfg.batch_per_gpu = 8;
  WhatIf slow;
  slow.nic_Gbps = 1;
  ClusterSpec c = apply_what_if(load_cluster("h100-sxm"), slow);
  c.inter.nics_per_node = 1;
  StudyRow comm = study_row(load_model("vgg16"), c, cfg, slow, TrainGoal{}, false);
  CHECK(iteration_shares(comm.p).bound == "communication");
  std::string v = config_verdict(comm);
  CHECK(v.rfind("Communication-bound", 0) == 0);
  CHECK(v.find("553.4 MB") != std::string::npos);
  CHECK(v.find("inter-node network") != std::string::npos);
}

// A series built by hand: one GPU takes 1 s; P GPUs take 1 / efficiency, the rest exposed communication.
static StudyRow row(int64_t gpus, double efficiency, bool fits = true, const std::string& model = "m", double flops_scale = 1) {
  StudyRow r;
  r.p.model = model;
  r.p.batch_per_gpu = 8;
  r.p.gpus = gpus;
  r.p.nodes = gpus > 8 ? gpus / 8 : 1;
  r.p.algo = "ring";
  r.p.single_gpu_iteration_s = 1;
  r.p.iteration_s = 1 / efficiency;
  r.p.scaling_efficiency = efficiency;
  r.p.exposed_comm_s = r.p.iteration_s - 1;
  r.p.comm_s = 2 * r.p.exposed_comm_s;
  r.p.grad_bytes = 100'000'000;
  r.p.throughput_samples_per_s = 8.0 * gpus / r.p.iteration_s;
  r.p.timeline.compute_bound_s = 1;
  r.p.timeline.buckets.resize(4);
  r.link = "inter-node network (test)";
  r.link_Bps = 400e9;
  r.memory.fits = fits;
  r.memory.capacity_bytes = 80e9;
  r.what_if.flops_scale = flops_scale;
  return r;
}

TEST_CASE("sweep verdict: where efficiency first drops below 90% and 75%, and why") {
  SweepResult res;
  res.cluster_name = "c";
  res.gpu_name = "g";
  res.precision = "fp32";
  const double eff[] = {1.0, 0.97, 0.91, 0.89, 0.92, 0.74, 0.5};  // not monotone: the first crossing counts
  const int64_t gpus[] = {1, 2, 4, 8, 16, 32, 64};
  for (int i = 0; i < 7; ++i) res.rows.push_back(row(gpus[i], eff[i]));
  auto series = sweep_series(res);
  REQUIRE(series.size() == 1);
  REQUIRE(series[0].drops.size() == 2);
  CHECK(series[0].drops[0].threshold == 0.90);
  CHECK(res.rows[series[0].drops[0].row].p.gpus == 8);
  CHECK(res.rows[*series[0].drops[0].previous].p.gpus == 4);
  CHECK(series[0].drops[1].threshold == 0.75);
  CHECK(res.rows[series[0].drops[1].row].p.gpus == 32);
  // Why: exposed communication, which collective, how many bytes, over which link.
  const std::string why = drop_reason(res, series[0].drops[0]);
  CHECK(why.find("exposed communication") != std::string::npos);
  CHECK(why.find("ring all-reduce of 100.0 MB") != std::string::npos);
  CHECK(why.find("inter-node network (test)") != std::string::npos);
  CHECK(why.find("the job now spans") == std::string::npos);  // 4 -> 8 GPUs stays on one node

  const SweepVerdict v = sweep_verdict(res);
  bool found = false;
  for (const auto& l : sweep_verdict_lines(res, v))
    if (l.find("first drops below 90% at 8 GPUs: 89.0% (91.0% at 4)") != std::string::npos) {
      found = true;
      CHECK(l.find("Below 75% at 32 GPUs (4 nodes): 74.0%") != std::string::npos);
    }
  CHECK(found);
  const Json json = sweep_verdict_json(res, v);
  CHECK(json["series"][0]["below"].size() == 2);
  CHECK(json["series"][0]["below"][1]["gpus"] == 32);
}

TEST_CASE("sweep verdict: both thresholds at once, never below, and no recommendation that does not fit") {
  SweepResult res;
  res.cluster_name = "c";
  res.gpu_name = "g";
  res.precision = "fp32";
  res.rows = {row(1, 1.0), row(8, 0.95), row(64, 0.6, false)};                    // crosses both at 64, which does not fit
  res.rows.push_back(row(1, 1.0, true, "m", 2));                                    // a what-if that never drops
  res.rows.push_back(row(64, 0.93, true, "m", 2));
  std::string text;
  for (const auto& l : sweep_verdict_lines(res, sweep_verdict(res))) text += l + "\n";
  CHECK(text.find("first drops below 90% and 75% at 64 GPUs (8 nodes): 60.0%") != std::string::npos);
  CHECK(text.find("stays at or above 90% up to 64 GPUs") != std::string::npos);
  CHECK(text.find("1 do not fit") != std::string::npos);
  // The fastest row that fits is 8 GPUs for the baseline (64 does not fit).
  CHECK(text.find("m: fastest that fits: batch 8 per GPU on 8 GPUs") != std::string::npos);
  CHECK(text.find("Does not fit: batch 8 per GPU.") != std::string::npos);
  // The what-if's effect at the largest GPU count: 0.93 / 0.6 - 1 = +55%.
  CHECK(text.find("What if FLOP/s x2: m +55% throughput at 64 GPUs") != std::string::npos);
}
