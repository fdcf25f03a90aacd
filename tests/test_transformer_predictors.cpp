// Measured predictors for the transformers' kernel kinds (layernorm, attention, embedding): their CSV
// files are read by their shape fields, featured, trained by dtsim train-predictors, and a trained
// predictor prices the kernels the lowering issues (priced_by says mlp). The data are synthetic: a
// made-up formula of the roofline time, which the predictors must learn back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mlp_skeleton.hpp"
#include "study_cli.hpp"

#include "compute/impl/mlp/dataset.hpp"
#include "compute/impl/mlp/features.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "compute/impl/roofline/roofline_model.hpp"
#include "core/error.hpp"
#include "hardware/gpu_spec.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;
using namespace dtsim::mlp;
namespace fs = std::filesystem;

namespace {

KernelDesc kernel(KernelKind kind, Pass pass, MathMode math, std::array<int64_t, kMaxShapeFields> shape) {
  KernelDesc k{kind, pass, math, -1, shape, "", 0, 0};
  set_cost(k);
  return k;
}

// The made-up truth: 1.3 x the H100 roofline time plus 3 us.
double synthetic_s(const KernelDesc& k) {
  static const RooflineModel roof(load_gpu("h100-sxm"));
  return roof.time(k).seconds * 1.3 + 3e-6;
}

const char* math_text(MathMode m) { return m == MathMode::BF16 ? "bf16" : "fp32"; }

// One row in the PyTorch script's layout: kind,pass,math_mode,dtype,<shape>,impl,time_median_s,
// time_min_s,time_spread_s,repeats,source,time_graph_s,graph_calls,split[,backend].
std::string row(const KernelDesc& k, const std::string& extra = "") {
  std::ostringstream o;
  o.precision(6);
  o << kind_name(k.kind) << "," << pass_name(k.pass) << "," << math_text(k.math) << "," << math_text(k.math);
  for (size_t i = 0; i < kernel_shape_fields(k.kind).size(); ++i) o << "," << k.shape[i];
  const double t = synthetic_s(k);
  o << ",torch," << t << "," << 0.95 * t << "," << 0.05 * t << ",30,synthetic," << 0.9 * t << ",20,train" << extra << "\n";
  return o.str();
}

std::string header(KernelKind kind, bool backend = false) {
  std::string h = "kind,pass,math_mode,dtype";
  for (const char* f : kernel_shape_fields(kind)) h += std::string(",") + f;
  return h + ",impl,time_median_s,time_min_s,time_spread_s,repeats,source,time_graph_s,graph_calls,split" + (backend ? ",backend,dropout_p" : "") + "\n";
}

// The shapes of each kind's synthetic file: about 50 per predictor, around GPT-2's and BERT's.
std::vector<KernelDesc> attention_kernels() {
  std::vector<KernelDesc> ks;
  for (Pass p : {Pass::Fwd, Pass::Bwd})
    for (MathMode m : {MathMode::FP32, MathMode::BF16})
      for (int64_t n : {1, 2, 4, 8})
        for (int64_t heads : {8, 12, 16})
          for (int64_t t : {128, 256, 512, 1024})
            for (const char* variant : {"", "dropout"}) {  // dropout inside the kernel: its own predictor
              ks.push_back(kernel(KernelKind::Attention, p, m, {n, heads, t, t == 512 ? 128 : 64, (n + heads + t / 128) % 2}));
              ks.back().variant = variant;
            }
  return ks;
}

std::vector<KernelDesc> layernorm_kernels() {
  std::vector<KernelDesc> ks;
  for (Pass p : {Pass::Fwd, Pass::Bwd})
    for (MathMode m : {MathMode::FP32, MathMode::BF16})
      for (int64_t rows : {128, 512, 1024, 2048, 4096, 8192, 16384})
        for (int64_t features : {256, 512, 768, 1024, 2048, 4096, 8192})
          ks.push_back(kernel(KernelKind::LayerNorm, p, m, {rows, features}));
  return ks;
}

std::vector<KernelDesc> embedding_kernels() {
  std::vector<KernelDesc> ks;
  for (Pass p : {Pass::Fwd, Pass::Bwd})
    for (int64_t rows : {128, 512, 2048, 8192})
      for (int64_t dim : {256, 512, 768, 1024})
        for (int64_t table : {1024, 30522, 50257})
          ks.push_back(kernel(KernelKind::Embedding, p, MathMode::FP32, {rows, dim, table}));
  return ks;
}

// The three files in `dir` (attention.csv with the backend column PyTorch reports).
void write_synthetic_data(const std::string& dir) {
  fs::create_directories(dir);
  {
    std::ofstream f(dir + "/attention.csv");
    f << header(KernelKind::Attention, true);
    for (const auto& k : attention_kernels())
      f << row(k, std::string(k.math == MathMode::BF16 ? ",flash" : ",efficient") + (*k.variant ? ",0.1" : ",0"));
  }
  {
    std::ofstream f(dir + "/layernorm.csv");
    f << header(KernelKind::LayerNorm);
    for (const auto& k : layernorm_kernels()) f << row(k);
  }
  {
    std::ofstream f(dir + "/embedding.csv");
    f << header(KernelKind::Embedding);
    for (const auto& k : embedding_kernels()) f << row(k);
  }
}

const KernelDesc* find_kernel(const std::vector<KernelDesc>& ks, KernelKind kind, Pass pass) {
  for (const auto& k : ks)
    if (k.kind == kind && k.pass == pass) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("datasets: layernorm, attention and embedding rows become the kernels the lowering issues") {
  study_test::TempDir dir("tfpred_read");
  write_synthetic_data(dir.path);
  const auto att = read_kernel_csv(dir.path + "/attention.csv");
  const auto ln = read_kernel_csv(dir.path + "/layernorm.csv");
  const auto emb = read_kernel_csv(dir.path + "/embedding.csv");
  CHECK(att.size() == attention_kernels().size());
  CHECK(ln.size() == layernorm_kernels().size());
  CHECK(emb.size() == embedding_kernels().size());
  auto keys = [](const std::vector<Sample>& v) {
    std::vector<std::string> k;
    for (const auto& s : v)
      if (std::find(k.begin(), k.end(), s.key) == k.end()) k.push_back(s.key);
    std::sort(k.begin(), k.end());
    return k;
  };
  CHECK(keys(att) == std::vector<std::string>{"attention/bwd/bf16", "attention/bwd/bf16/dropout", "attention/bwd/fp32",
                                              "attention/bwd/fp32/dropout", "attention/fwd/bf16", "attention/fwd/bf16/dropout",
                                              "attention/fwd/fp32", "attention/fwd/fp32/dropout"});
  // The layernorm file's math_mode is the tensors' dtype: bf16 rows are BF16 kernels with their own key.
  CHECK(keys(ln) == std::vector<std::string>{"layernorm/bwd/bf16", "layernorm/bwd/fp32", "layernorm/fwd/bf16", "layernorm/fwd/fp32"});
  CHECK(keys(emb) == std::vector<std::string>{"embedding/bwd/fp32", "embedding/fwd/fp32"});
  for (const auto& s : ln)
    if (s.key.find("bf16") != std::string::npos) CHECK(s.kernel.math == MathMode::BF16);

  // A row of GPT-2's attention, layernorm and token embedding (batch 2, 1024 tokens) is the lowered kernel.
  const IterationKernels lowered = lower_iteration(load_model("gpt2_small"), 2, Precision::BF16);
  const KernelDesc* a = find_kernel(lowered.forward, KernelKind::Attention, Pass::Fwd);
  const KernelDesc* l = find_kernel(lowered.forward, KernelKind::LayerNorm, Pass::Fwd);
  const KernelDesc* e = find_kernel(lowered.backward, KernelKind::Embedding, Pass::Bwd);
  REQUIRE(a);
  REQUIRE(l);
  REQUIRE(e);
  const std::string file = dir.file("gpt2.csv", header(KernelKind::Attention, true) + row(*a, ",flash,0.1"));
  dir.file("gpt2_ln.csv", header(KernelKind::LayerNorm) + row(*l));
  dir.file("gpt2_emb.csv", header(KernelKind::Embedding) + row(*e));
  for (const auto& [name, want] : {std::pair<std::string, const KernelDesc*>{"gpt2.csv", a}, {"gpt2_ln.csv", l}, {"gpt2_emb.csv", e}}) {
    INFO(name);
    const auto got = read_kernel_csv(dir.path + "/" + name);
    REQUIRE(got.size() == 1);
    CHECK(got[0].kernel.shape == want->shape);
    CHECK(got[0].kernel.math == want->math);
    CHECK(got[0].kernel.flops == want->flops);
    CHECK(got[0].kernel.bytes == want->bytes);
    CHECK(got[0].key == predictor_key(*want));
    CHECK(got[0].time_s == Approx(synthetic_s(*want)).epsilon(1e-5));
  }
  CHECK(predictor_key(*a) == "attention/fwd/bf16/dropout");  // GPT-2's attention dropout, 0.1
  CHECK(predictor_key(*l) == "layernorm/fwd/fp32");  // autocast runs layer_norm in FP32
}

TEST_CASE("datasets: malformed transformer rows are input errors naming file, line and field") {
  study_test::TempDir dir("tfpred_bad");
  const KernelDesc good = kernel(KernelKind::Attention, Pass::Fwd, MathMode::BF16, {2, 12, 256, 64, 1});
  std::string causal2 = row(good, ",flash,0");
  causal2.replace(causal2.find(",256,64,1,"), 10, ",256,64,2,");
  const std::string bad_causal = dir.file("attention.csv", header(KernelKind::Attention, true) + row(good, ",flash,0") + causal2);
  CHECK_THROWS_WITH(read_kernel_csv(bad_causal), Catch::Contains(bad_causal + ":3, column causal") && Catch::Contains("must be 0 or 1"));
  // A file without a shape column: the first row names it.
  std::string no_head_dim = header(KernelKind::Attention, true);
  no_head_dim.replace(no_head_dim.find(",head_dim"), 9, "");
  std::string r = row(good, ",flash,0");
  r.replace(r.find(",64,1,"), 6, ",1,");
  const std::string missing = dir.file("missing.csv", no_head_dim + r);
  CHECK_THROWS_WITH(read_kernel_csv(missing), Catch::Contains(missing + ":2") && Catch::Contains("no column 'head_dim'"));
  std::string zero_rows = row(kernel(KernelKind::LayerNorm, Pass::Fwd, MathMode::FP32, {512, 768}));
  zero_rows.replace(zero_rows.find(",512,768,"), 9, ",0,768,");
  const std::string zero = dir.file("layernorm.csv", header(KernelKind::LayerNorm) + zero_rows);
  CHECK_THROWS_WITH(read_kernel_csv(zero), Catch::Contains(zero + ":2") && Catch::Contains("rows must be positive"));
  std::string text_dim = row(kernel(KernelKind::Embedding, Pass::Fwd, MathMode::FP32, {512, 768, 50257}));
  text_dim.replace(text_dim.find(",768,"), 5, ",wide,");
  const std::string text = dir.file("embedding.csv", header(KernelKind::Embedding) + text_dim);
  CHECK_THROWS_WITH(read_kernel_csv(text), Catch::Contains(text + ":2, column dim") && Catch::Contains("not an integer"));

#ifdef DTSIM_HAVE_TRAINER
  // Through dtsim train-predictors: exit 2 and one line naming the file, line and field.
  for (const std::string& file : {"attention.csv", "missing.csv"}) {
    const auto run = study_test::run_dtsim("train-predictors --data " + dir.path + " --gpu h100-sxm --files " + file + " --validate");
    INFO(run.err);
    CHECK(run.code == 2);
    CHECK(study_test::lines(run.err) == 1);
    CHECK(run.err.find(file == "attention.csv" ? "attention.csv:3, column causal: must be 0 or 1" : "missing.csv:2: no column 'head_dim'") !=
          std::string::npos);
  }
#endif
}

TEST_CASE("features: every kernel kind has feature names, and the transformers' kernels one finite value each") {
  for (int i = 0; i < kKernelKinds; ++i) CHECK_FALSE(feature_names(static_cast<KernelKind>(i)).empty());
  const GpuSpec gpu = load_gpu("h100-sxm");
  const Baseline base = baseline_of(gpu);
  for (const char* m : {"gpt2_small", "bert_base", "vit_b_16"})
    for (Precision p : {Precision::FP32, Precision::BF16}) {
      const auto ks = lower_iteration(load_model(m), 4, p, StepMode{MemoryFormat::Contiguous, Optimizer::AdamW, Execution::Eager});
      for (const auto* list : {&ks.forward, &ks.backward, &ks.update})
        for (const auto& k : *list) {
          INFO(m << " " << kind_name(k.kind) << " " << pass_name(k.pass));
          std::vector<double> f;
          features(k, gpu.sm_count, base, f);
          REQUIRE(f.size() == feature_names(k.kind).size());
          for (double x : f) REQUIRE(std::isfinite(x));
        }
    }
  // Attention: FlashAttention-2's query blocks of 128 rows per (batch, head) and their waves over 132 SMs.
  const KernelDesc a = kernel(KernelKind::Attention, Pass::Fwd, MathMode::BF16, {4, 12, 1000, 64, 1});
  std::vector<double> f;
  features(a, gpu.sm_count, base, f);
  const auto& names = feature_names(KernelKind::Attention);
  auto at = [&](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    REQUIRE(it != names.end());
    return f[static_cast<size_t>(it - names.begin())];
  };
  const double ctas = 8.0 * 4 * 12;  // ceil(1000 / 128) = 8 blocks
  CHECK(at("query_blocks") == Approx(std::log2(ctas)));
  CHECK(at("waves") == Approx(std::log2(std::ceil(ctas / gpu.sm_count))));
  CHECK(at("last_wave_fill") == Approx(ctas / gpu.sm_count - std::floor(ctas / gpu.sm_count)));
  CHECK(at("causal") == 1);
  CHECK(at("head_elements") == Approx(std::log2(1000.0 * 64)));
  CHECK(at("T") == Approx(std::log2(1000.0)));
  CHECK(names.back() == "roofline_memory_us");  // the baseline's floors last, as for every kind
}

TEST_CASE("features: the shipped predictors see the features they were trained on") {
  // Byte for byte: adding kinds must not change any existing kind's feature list.
  for (const auto& gpu : pretrained_gpus()) {
    const PredictorSet set = load_predictors(pretrained_root() + "/" + gpu);
    for (const auto& [key, m] : set.by_key) {
      INFO(gpu << " " << key);
      const auto kind = parse_kind(key.substr(0, key.find('/')));
      REQUIRE(kind);
      std::vector<std::string> want = feature_names(*kind);
      if (m.feature_names.size() > want.size()) want.insert(want.end(), extra_feature_names(*kind).begin(), extra_feature_names(*kind).end());
      CHECK(m.feature_names == want);
    }
  }
}

TEST_CASE("layernorm: the forward's second read from memory once the resident rows overflow L2, rows of whole vectors, long rows seen at the trained length") {
  const GpuSpec gpu = load_gpu("h100-sxm");
  const Baseline base = baseline_of(gpu);
  REQUIRE(base.sm_count == gpu.sm_count);
  const double l2 = base.l2_cache_bytes, resident = 16.0 * gpu.sm_count;  // 128-thread blocks, one per row
  REQUIRE(l2 > 0);
  auto ln = [](Pass p, int64_t rows, int64_t features) { return kernel(KernelKind::LayerNorm, p, MathMode::FP32, {rows, features}); };
  // Forward: x and y of the resident rows against L2; past it x is read once more.
  const int64_t hit_rows = static_cast<int64_t>(l2 / (2 * 16384 * 4.0));  // all resident, x and y just fit
  CHECK(base.traffic_bytes(ln(Pass::Fwd, hit_rows, 16384)) == ln(Pass::Fwd, hit_rows, 16384).bytes);
  const KernelDesc miss = ln(Pass::Fwd, hit_rows + 1, 16384);
  CHECK(base.traffic_bytes(miss) == Approx(miss.bytes + (hit_rows + 1) * 16384 * 4.0));
  // Past a GPU's worth of rows only the resident ones count: a row that short always hits.
  const int64_t short_row = static_cast<int64_t>(l2 / (2 * resident * 4)) / 4 * 4 - 4;  // whole 4-element vectors
  CHECK(base.traffic_bytes(ln(Pass::Fwd, 100000, short_row)) == ln(Pass::Fwd, 100000, short_row).bytes);
  // A forward row of other lengths is two kernels: every row's x and y count.
  const KernelDesc two = ln(Pass::Fwd, 100000, short_row + 1);
  CHECK(base.traffic_bytes(two) == Approx(two.bytes + 100000.0 * (short_row + 1) * 4));
  // The backward as counted (its time per element shows no step with the row's length).
  const KernelDesc bwd = ln(Pass::Bwd, 100000, 4096);
  CHECK(base.traffic_bytes(bwd) == bwd.bytes);
  Baseline unknown = base;  // a manifest without the GPU's SMs: taken to hit L2
  unknown.sm_count = 0;
  CHECK(unknown.traffic_bytes(miss) == miss.bytes);
  // The vectorized feature, and the view of rows longer than the trained ones (keeping the remainder of 4).
  std::vector<double> f;
  features(ln(Pass::Fwd, 300, 9601), gpu.sm_count, base, f);
  const auto& names = feature_names(KernelKind::LayerNorm);
  CHECK(f[static_cast<size_t>(std::find(names.begin(), names.end(), "vectorized") - names.begin())] == 0);
  CHECK(layernorm_trained_view(ln(Pass::Fwd, 300, 16384), 8192).shape[1] == 8192);
  CHECK(layernorm_trained_view(ln(Pass::Fwd, 300, 9601), 8192).shape[1] == 8189);
  CHECK(layernorm_trained_view(ln(Pass::Fwd, 300, 9601), 8192).bytes == ln(Pass::Fwd, 300, 8189).bytes);
  CHECK(layernorm_trained_view(ln(Pass::Fwd, 300, 4096), 8192).shape[1] == 4096);
  const KernelDesc att = kernel(KernelKind::Attention, Pass::Fwd, MathMode::BF16, {4, 12, 16384, 64, 1});
  CHECK(layernorm_trained_view(att, 8192).shape[2] == 16384);
}

TEST_CASE("what-if: an attention predictor carries only to a GPU that runs it on tensor cores too") {
  study_test::TempDir dir("tfpred_carry");
  const GpuSpec h100 = load_gpu("h100-sxm");
  // A one-layer predictor per key (log ratio 0: the baseline time), enough to be found and carried.
  auto flat = [](const std::string& key, KernelKind kind) {
    return test_mlp::with_layers(key, kind, {test_mlp::RowMajor::Zero(1, test_mlp::features_of(kind))}, {Eigen::VectorXf::Zero(1)});
  };
  write_predictors(dir.path + "/h100-sxm", Json{{"format", 1}, {"gpu", "h100-sxm"}, {"baseline", baseline_json(baseline_of(h100), h100.sm_count)}},
                   {flat("attention/fwd/bf16", KernelKind::Attention), flat("layernorm/fwd/fp32", KernelKind::LayerNorm)});
  ::setenv("DTSIM_PREDICTOR_DIR", dir.path.c_str(), 1);
  const KernelDesc att = kernel(KernelKind::Attention, Pass::Fwd, MathMode::BF16, {4, 12, 1024, 64, 1});
  const KernelDesc ln = kernel(KernelKind::LayerNorm, Pass::Fwd, MathMode::FP32, {4096, 768});
  {
    MlpComputeModel own(h100), h200(load_gpu("h200-sxm"));
    CHECK(own.time(att).source == TimeSource::Mlp);
    CHECK(own.time(att).seconds == Approx(baseline_of(h100).seconds(att)).epsilon(1e-5));
    CHECK(h200.time(att).source == TimeSource::Mlp);  // closest measured GPU, scaled by the roofline ratio
    CHECK(h200.time(ln).source == TimeSource::Mlp);
    // A GPU whose bf16 runs at its FP32 rate (no tensor cores for it): attention takes its roofline.
    GpuSpec no_tc = h100;
    no_tc.name = "h100-without-bf16-tensor-cores";
    no_tc.peak_flops[static_cast<int>(MathMode::BF16)] = no_tc.peak_flops[static_cast<int>(MathMode::FP32)];
    MlpComputeModel other(no_tc);
    CHECK_FALSE(other.covers(att));
    CHECK(other.time(att).source == TimeSource::Roofline);
    CHECK(other.covers(ln));  // a memory-bound kernel carries
  }
  ::unsetenv("DTSIM_PREDICTOR_DIR");
}

#ifdef DTSIM_HAVE_TRAINER
TEST_CASE("train-predictors: synthetic layernorm, attention and embedding data train predictors that price the lowered kernels") {
  study_test::TempDir dir("tfpred_train");
  const std::string data = dir.path + "/h100-sxm", out = dir.path + "/pred/h100-sxm";
  write_synthetic_data(data);
  const std::string fast = " --steps 400 --hidden 32,32 --min-rows 16 --lr 1e-2";

  // Model selection (--validate): every key trains and reports its validation error; nothing written.
  auto v = study_test::run_dtsim("train-predictors --data " + data + fast + " --validate");
  REQUIRE(v.code == 0);
  for (const char* key : {"attention/fwd/bf16", "attention/bwd/fp32", "layernorm/bwd/bf16", "embedding/fwd/fp32"}) {
    INFO(key << "\n" << v.out);
    CHECK(v.out.find(key) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));

  // Attention is held to the matmuls' target, layernorm to the vector kernels': with a 0% matmul
  // target no attention predictor is written and every layernorm one is.
  auto t = study_test::run_dtsim("train-predictors --data " + data + " --files attention.csv,layernorm.csv --steps 50 --hidden 8 "
                                 "--min-rows 16 --target-matmul 0 --target-vector 10 --out " + dir.path + "/targets");
  REQUIRE(t.code == 0);
  // The trainer's line for a key that says it was not written, or "".
  auto not_written = [&](const std::string& key) {
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(key + " ", 0) == 0 && line.find("not written") != std::string::npos) return line;
    return std::string();
  };
  INFO(t.out);
  for (const char* key : {"attention/fwd/bf16", "attention/fwd/fp32", "attention/bwd/bf16", "attention/bwd/fp32"})
    CHECK(not_written(key).find("not written: held-out MAPE above its 0% target") != std::string::npos);
  CHECK(not_written("layernorm/fwd/fp32").empty());
  const PredictorSet targets = load_predictors(dir.path + "/targets");
  CHECK(targets.by_key.size() == 4);
  CHECK(targets.find("layernorm/fwd/bf16"));

  // Training proper, loose targets so that every predictor is written; the test bounds them below.
  auto r = study_test::run_dtsim("train-predictors --data " + data + fast + " --target-matmul 1 --target-vector 1 --out " + out);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const PredictorSet set = load_predictors(out);
  CHECK(set.by_key.size() == 14);
  for (const auto& [key, m] : set.by_key) {
    INFO(key);
    CHECK(m.feature_names == feature_names(*parse_kind(key.substr(0, key.find('/')))));
    CHECK(m.heldout.at("rows").get<int>() > 0);
    CHECK(m.heldout.at("mape").get<double>() < 0.25);
  }

  ::setenv("DTSIM_PREDICTOR_DIR", (dir.path + "/pred").c_str(), 1);
  {
    MlpComputeModel model(load_gpu("h100-sxm"));
    // Shapes between the measured ones, as a GPT-2 step at batch 3 and 768 tokens issues them.
    for (const KernelDesc& k : {kernel(KernelKind::Attention, Pass::Fwd, MathMode::BF16, {3, 12, 768, 64, 1}),
                                kernel(KernelKind::Attention, Pass::Bwd, MathMode::FP32, {3, 12, 768, 64, 1}),
                                kernel(KernelKind::LayerNorm, Pass::Fwd, MathMode::FP32, {2304, 768}),
                                kernel(KernelKind::LayerNorm, Pass::Bwd, MathMode::BF16, {2304, 768}),
                                kernel(KernelKind::Embedding, Pass::Fwd, MathMode::FP32, {2304, 768, 50257}),
                                kernel(KernelKind::Embedding, Pass::Bwd, MathMode::FP32, {2304, 768, 50257})}) {
      INFO(predictor_key(k));
      const KernelTime kt = model.time(k);
      CHECK(kt.source == TimeSource::Mlp);
      CHECK(kt.in_range);
      CHECK(kt.seconds == Approx(synthetic_s(k)).epsilon(0.25));
    }
  }
  // dtsim predict: the kernels of these kinds priced by the measured predictors, and said to be.
  auto p = study_test::run_dtsim("predict --model gpt2_small --gpus 1 --batch-per-gpu 2 --precision bf16 --seq-len 512 --format json",
                                 "DTSIM_PREDICTOR_DIR=" + dir.path + "/pred");
  REQUIRE(p.code == 0);
  const Json j = Json::parse(p.out);
  for (const char* kind : {"attention", "layernorm", "embedding"}) {
    INFO(kind);
    CHECK(j["priced_by"][kind]["mlp_s"].get<double>() > 0);
    CHECK(j["priced_by"][kind]["roofline_s"].get<double>() == 0);
  }
  ::unsetenv("DTSIM_PREDICTOR_DIR");
}
TEST_CASE("train-predictors --with-data: other GPUs' rows train beside the target's in one network, only the target's are written") {
  study_test::TempDir dir("tfpred_with");
  const std::string h100 = dir.path + "/h100-sxm", h200 = dir.path + "/h200-sxm", out = dir.path + "/pred/h200-sxm";
  write_synthetic_data(h100);
  write_synthetic_data(h200);
  const std::string other = " --with-data h100-sxm:" + h100 + "/layernorm.csv";
  const std::string fast = " --files layernorm.csv --steps 400 --hidden 32,32 --min-rows 16 --lr 1e-2";
  auto r = study_test::run_dtsim("train-predictors --data " + h200 + fast + " --joint layernorm --target-vector 1 --out " + out + other);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const PredictorSet set = load_predictors(out);
  CHECK(set.gpu == "h200-sxm");
  CHECK(set.by_key.size() == 4);  // the h200 keys; the KEY@h100-sxm groups trained beside them are not written
  for (const auto& [key, m] : set.by_key) {
    INFO(key);
    CHECK(key.find('@') == std::string::npos);
    // Scored through the exported MLP: the one-hot of its shared key folded into the first layer's bias.
    CHECK(m.heldout.at("mape").get<double>() < 0.25);
  }
  CHECK(set.manifest.at("trained_with").at("with_data").at(0).at("gpu") == "h100-sxm");
  CHECK(r.out.find("@h100-sxm") == std::string::npos);  // never scored or written as predictors of their own

  // Bad uses: exit 2 and one line naming the option and the rule.
  for (const auto& [args, rule] : std::vector<std::pair<std::string, std::string>>{
           {" --joint layernorm --with-data h100-sxm", "must be GPU:FILE"},
           {other, "needs --joint"},
           {" --joint layernorm --with-data h200-sxm:" + h200 + "/layernorm.csv", "names --gpu itself"},
           {" --evaluate" + other, "is for training"}}) {
    INFO(args);
    auto bad = study_test::run_dtsim("train-predictors --data " + h200 + fast + " --out " + dir.path + "/bad" + args);
    CHECK(bad.code == 2);
    CHECK(study_test::lines(bad.err) == 1);
    CHECK(bad.err.find("--with-data") != std::string::npos);
    CHECK(bad.err.find(rule) != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path + "/bad"));
  }
}
#endif
