// Sharded data parallelism (sim/strategies/sharded.hpp), activation checkpointing and gradient
// accumulation: the bytes each strategy moves against the sources' formulas, per-GPU memory, and
// what checkpointing and accumulation change.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "study_cli.hpp"
#include "sim/memory.hpp"
#include "sim/predict.hpp"
#include "sim/strategies/sharded.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;

namespace {

TrainingConfig config(int64_t gpus, int64_t batch, const std::string& strategy, Precision precision = Precision::BF16) {
  TrainingConfig cfg;
  cfg.gpus = gpus;
  cfg.batch_per_gpu = batch;
  cfg.precision = precision;
  cfg.mode.optimizer = Optimizer::AdamW;
  cfg.compute_model = "roofline";  // fast, and the same for every case
  cfg.strategy = strategy;
  return cfg;
}

// gpt2_medium's accumulation cases: 16 GPUs at 2 samples each, `k` micro-batches a step.
TrainingConfig accumulating(const std::string& strategy, int k) {
  TrainingConfig cfg = config(16, 2, strategy);
  cfg.grad_accum_steps = k;
  return cfg;
}

MemoryFit fit(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  return memory_fit(g, cfg.batch_per_gpu, cfg.precision, cfg.gpus, c.gpu, default_memory_spec(), -1, cfg.mode.optimizer,
                    training_memory_layout(g, c, cfg));
}

const Graph& llama7b() {
  static const Graph g = [] {
    Graph m = load_model("llama2_7b");
    return m;  // its default sequence, 4096 tokens (max_position_embeddings)
  }();
  return g;
}

}  // namespace

TEST_CASE("sharded: llama2_7b at 4096 tokens on 64 H100s: DDP does not fit 80 GB, FSDP does and moves 1.5x DDP's bytes") {
  const Graph& g = llama7b();
  REQUIRE(g.tokens_per_sample() == 4096);
  const ClusterSpec c = load_cluster("h100-sxm");
  REQUIRE(c.gpu.memory_bytes == Approx(80e9).epsilon(0.1));
  const TrainingConfig ddp = config(64, 1, "dp"), fsdp = config(64, 1, "fsdp");
  const MemoryFit m_ddp = fit(g, c, ddp), m_fsdp = fit(g, c, fsdp);
  CHECK_FALSE(m_ddp.fits);
  CHECK(m_fsdp.fits);
  // DDP alone holds 4 + 4 + 8 bytes of weights, gradients and AdamW state and 4 of buckets per parameter.
  CHECK(m_ddp.device_bytes > 20.0 * 6738415616);
  const Prediction p_ddp = predict(g, c, ddp), p_fsdp = predict(g, c, fsdp);
  const double grad_bytes = 4.0 * 6738415616;
  CHECK(p_ddp.grad_bytes == Approx(grad_bytes));
  // DDP's ring all-reduce sends 2 (N-1)/N of the gradients; FSDP's two all-gathers and one
  // reduce-scatter 3 (N-1)/N, less one all-gather of the root unit (embeddings and head), which
  // stays gathered through the backward.
  CHECK(p_ddp.strategy.comm_bytes == Approx(2.0 * 63 / 64 * grad_bytes));
  CHECK(p_fsdp.strategy.comm_bytes >= 1.5 * grad_bytes);
  const double root = 4.0 * (2 * 131072000.0 + 4096);
  CHECK(p_fsdp.strategy.comm_bytes == Approx(63.0 / 64 * (3 * grad_bytes - root)));
  CHECK(p_fsdp.strategy.comm_bytes / p_ddp.strategy.comm_bytes == Approx(1.5 * (1 - root / (3 * grad_bytes))));
  CHECK(p_fsdp.strategy.name == "fsdp");
  CHECK(p_fsdp.iteration_s >= p_fsdp.compute_s);
}

TEST_CASE("sharded: per-GPU memory falls as GPUs are added, for every sharding") {
  const Graph& g = llama7b();
  const ClusterSpec c = load_cluster("h100-sxm");
  for (const char* s : {"fsdp", "zero1", "zero2", "zero3"}) {
    INFO(s);
    double last = 1e30;
    for (int gpus : {8, 16, 64, 256}) {
      const double bytes = fit(g, c, config(gpus, 1, s)).device_bytes;
      CHECK(bytes < last);
      last = bytes;
    }
  }
  // DDP's replicas do not shrink.
  CHECK(fit(g, c, config(8, 1, "dp")).device_bytes == Approx(fit(g, c, config(64, 1, "dp")).device_bytes));
}

TEST_CASE("sharded: each ZeRO stage holds less than the one before, as the ZeRO paper's figure 1 orders them") {
  const Graph g = load_model("gpt2_xl");
  const ClusterSpec c = load_cluster("h100-sxm");
  const double ddp = fit(g, c, config(64, 1, "dp")).device_bytes;
  const double z1 = fit(g, c, config(64, 1, "zero1")).device_bytes;
  const double z2 = fit(g, c, config(64, 1, "zero2")).device_bytes;
  const double z3 = fit(g, c, config(64, 1, "zero3")).device_bytes;
  CHECK(z1 < ddp);
  // zero2's sharded gradients lower the optimizer step's peak; the backward's peak, where most
  // activations are alive and few gradients made, may be the same.
  CHECK(z2 <= z1);
  CHECK(fit(g, c, config(64, 1, "zero2")).step_peak_bytes < fit(g, c, config(64, 1, "zero1")).step_peak_bytes);
  CHECK(z3 < z2);
  // The sharded states: AdamW's 8 bytes per parameter over 64 GPUs.
  const MemoryFit m1 = fit(g, c, config(64, 1, "zero1"));
  CHECK(m1.optimizer_bytes == Approx(8.0 * g.params() / 64));
  CHECK(m1.gradients_bytes == Approx(4.0 * g.params()));
  CHECK(fit(g, c, config(64, 1, "zero2")).gradients_bytes == Approx(4.0 * g.params() / 64));
  CHECK(fit(g, c, config(64, 1, "zero3")).weights_bytes == Approx(4.0 * g.params() / 64));
}

TEST_CASE("sharded: bytes per step of zero1, zero2, zero3, grad-op and hybrid") {
  const Graph g = load_model("gpt2_medium");
  const ClusterSpec c = load_cluster("h100-sxm");
  const double grads = 4.0 * g.params();
  const int N = 32;
  auto bytes = [&](const std::string& s, const std::string& shard = "") {
    TrainingConfig cfg = config(N, 2, s);
    cfg.strategy_params.shard = shard;
    return predict(g, c, cfg).strategy.comm_bytes;
  };
  const double ddp = bytes("dp");
  CHECK(ddp == Approx(2.0 * (N - 1) / N * grads));
  CHECK(bytes("zero1") == Approx(ddp));  // reduce-scatter + all-gather: DDP's bytes
  CHECK(bytes("zero2") == Approx(ddp));
  CHECK(bytes("fsdp", "grad-op") == Approx(ddp));
  CHECK(bytes("zero3") == Approx(bytes("fsdp", "full")));
  // 1.5x DDP less the root unit's second gather (gpt2_medium's embeddings: 15% of its parameters).
  const double root_params = 50257.0 * 1024 + 1024.0 * 1024 + 2 * 1024;
  CHECK(bytes("zero3") / ddp == Approx(1.5 * (1 - root_params / (3.0 * g.params()))));
  // Hybrid: sharded over the node's 8 GPUs (two all-gathers, a reduce-scatter), then each GPU's shard
  // all-reduced among the 4 nodes.
  const ClusterSpec h = load_cluster("h100-sxm");
  const double root = 4.0 * (50257.0 * 1024 + 1024.0 * 1024 + 2 * 1024);
  CHECK(bytes("fsdp", "hybrid") == Approx(7.0 / 8 * (3 * grads - root) + 2.0 * 3 / 4 * grads / 8));
  (void)h;
}

TEST_CASE("sharded: fsdp takes --shard, other strategies refuse it") {
  const Graph g = load_model("gpt2_small");
  const ClusterSpec c = load_cluster("h100-sxm");
  TrainingConfig cfg = config(8, 2, "fsdp");
  cfg.strategy_params.shard = "everything";
  CHECK_THROWS_AS(predict(g, c, cfg), InputError);
  cfg.strategy = "zero3";
  cfg.strategy_params.shard = "full";
  CHECK_THROWS_AS(predict(g, c, cfg), InputError);
}

TEST_CASE("activation checkpointing: memory falls and compute rises") {
  const ClusterSpec c = load_cluster("h100-sxm");
  for (const char* name : {"gpt2_small", "llama2_7b"}) {
    INFO(name);
    const Graph g = load_model(name);
    TrainingConfig plain = config(name == std::string("llama2_7b") ? 64 : 1, 2, name == std::string("llama2_7b") ? "fsdp" : "dp");
    TrainingConfig ckpt = plain;
    ckpt.mode.activation_checkpointing = true;
    const MemoryFit m0 = fit(g, c, plain), m1 = fit(g, c, ckpt);
    // What stays: each block's input, and what the layers outside the blocks save (gpt2_small's
    // logits and log-probabilities, B x T x 50257 x 6 bytes, most of it).
    CHECK(m1.activations_bytes < 0.6 * m0.activations_bytes);
    CHECK(m1.allocated_peak_bytes < m0.allocated_peak_bytes);
    const Prediction p0 = predict(g, c, plain), p1 = predict(g, c, ckpt);
    // The recomputed forward: about one more forward pass, a third more compute for a transformer.
    CHECK(p1.compute_s > 1.2 * p0.compute_s);
    CHECK(p1.compute_s < 1.5 * p0.compute_s);
    CHECK(p1.iteration_s > p0.iteration_s);
  }
}

TEST_CASE("gradient accumulation: K micro-batches per step, the all-reduce's cost per sample divided by K") {
  const Graph g = load_model("gpt2_small");
  const ClusterSpec c = load_cluster("h100-ethernet-100g");
  TrainingConfig one = config(16, 4, "dp");
  one.overlap = false;  // the all-reduce after the backward: its whole time is in the step
  TrainingConfig four = one;
  four.grad_accum_steps = 4;
  const Prediction p1 = predict(g, c, one), p4 = predict(g, c, four);
  CHECK(p4.grad_accum_steps == 4);
  // One all-reduce per step either way: per sample, a quarter of it.
  CHECK(p4.comm_s == Approx(p1.comm_s));
  const double per_sample_1 = p1.comm_s / (4.0 * 16), per_sample_4 = p4.comm_s / (16.0 * 16);
  CHECK(per_sample_4 == Approx(per_sample_1 / 4));
  // The step: three more micro-batches of forward and backward, no optimizer, no communication.
  CHECK(p4.iteration_s > p1.iteration_s);
  CHECK(p4.iteration_s < 4 * p1.iteration_s);
  CHECK(p4.throughput_samples_per_s == Approx(4.0 * 4 * 16 / p4.iteration_s));
  CHECK(p4.throughput_samples_per_s > p1.throughput_samples_per_s);
  // Accumulated gradients are alive through the micro-batches' passes: a little more memory.
  CHECK(fit(g, c, four).allocated_peak_bytes > fit(g, c, one).allocated_peak_bytes);
  TrainingConfig bad = one;
  bad.grad_accum_steps = 0;
  CHECK_THROWS_AS(predict(g, c, bad), InputError);
}

TEST_CASE("gradient accumulation under zero2 reduce-scatters every micro-batch, under zero1 once per step") {
  const Graph g = load_model("gpt2_medium");
  const ClusterSpec c = load_cluster("h100-sxm");
  auto bytes = [&](const char* s, int k) { return predict(g, c, accumulating(s, k)).strategy.comm_bytes; };
  CHECK(bytes("zero1", 4) == Approx(bytes("zero1", 1)));
  const double rs = 15.0 / 16 * 4.0 * g.params();
  CHECK(bytes("zero2", 4) == Approx(bytes("zero2", 1) + 3 * rs));
  CHECK(bytes("zero3", 4) > bytes("zero3", 1));
}

TEST_CASE("sharded: dtsim predict says llama2_7b's DDP does not fit and its FSDP does, and takes the new flags") {
  const std::string base =
      "predict --model llama2_7b --seq-len 4096 --batch-per-gpu 1 --precision bf16 --optimizer adamw --gpus 64 --compute-model roofline "
      "--format json";
  const auto ddp = study_test::run_dtsim(base);
  REQUIRE(ddp.code == 0);
  const Json d = Json::parse(ddp.out);
  CHECK(d["fits"] == false);
  CHECK(d["memory"]["gpu_memory_bytes"].get<double>() == Approx(80e9).epsilon(0.1));
  const auto fsdp = study_test::run_dtsim(base + " --strategy fsdp");
  REQUIRE(fsdp.code == 0);
  const Json f = Json::parse(fsdp.out);
  CHECK(f["fits"] == true);
  CHECK(f["strategy"]["comm_bytes"].get<double>() >= 1.5 * d["grad_bytes"].get<double>());
  CHECK(f["memory"].contains("gathered_params_bytes"));
  CHECK_FALSE(d["memory"].contains("gathered_params_bytes"));  // DDP's memory keeps its fields
  const auto ck = study_test::run_dtsim(base + " --strategy fsdp --activation-checkpointing --grad-accum-steps 4");
  REQUIRE(ck.code == 0);
  const Json k = Json::parse(ck.out);
  CHECK(k["grad_accum_steps"] == 4);
  CHECK(k["activation_checkpointing"] == true);
  CHECK(k["global_batch"] == 256);
  CHECK(k["memory"]["allocated_peak_bytes"].get<double>() < f["memory"]["allocated_peak_bytes"].get<double>());
  // Bad input: one line naming the flag, exit code 2.
  for (const char* bad : {" --grad-accum-steps 0", " --strategy fsdp --shard half", " --shard full"}) {
    INFO(bad);
    const auto r = study_test::run_dtsim(base + bad);
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
  }
}

TEST_CASE("gradient accumulation: FSDP's no_sync holds unsharded gradients and reduces once, ZeRO-3 reduces every micro-batch") {
  const Graph g = load_model("gpt2_medium");
  const ClusterSpec c = load_cluster("h100-sxm");
  const auto cfg = accumulating;
  const double grads = 4.0 * g.params();
  CHECK(fit(g, c, cfg("fsdp", 4)).gradients_bytes == Approx(grads));
  CHECK(fit(g, c, cfg("fsdp", 1)).gradients_bytes == Approx(grads / 16));
  CHECK(fit(g, c, cfg("zero3", 4)).gradients_bytes == Approx(grads / 16));
  const double rs = 15.0 / 16 * grads;
  auto bytes = [&](const char* s, int k) { return predict(g, c, cfg(s, k)).strategy.comm_bytes; };
  CHECK(bytes("zero3", 4) - bytes("fsdp", 4) == Approx(3 * rs));
  CHECK(bytes("zero3", 1) == Approx(bytes("fsdp", 1)));
}
