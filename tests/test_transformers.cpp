// Sequences, the transformer layers, their kernels and memory, and the three
// zoo transformers (vit_b_16, gpt2_small, bert_base).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "compute/compute_model.hpp"
#include "helpers.hpp"
#include "network/cluster.hpp"
#include "report/report.hpp"
#include "sim/memory.hpp"
#include "sim/predict.hpp"
#include "study_cli.hpp"
#include "workload/kernel_spec.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;
using study_test::lines;
using study_test::run_dtsim;

namespace {

const Layer& layer(const Graph& g, const std::string& name) {
  for (const auto& l : g.layers)
    if (l.name == name) return l;
  FAIL("no layer " << name);
  return g.layers.front();
}

int index_of(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.layers.size(); ++i)
    if (g.layers[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<KernelDesc> kernels_of(const IterationKernels& k, int li) {
  std::vector<KernelDesc> out;
  for (const auto* list : {&k.forward, &k.backward})
    for (const auto& d : *list)
      if (d.layer == li) out.push_back(d);
  return out;
}

const KernelDesc* find_kernel(const std::vector<KernelDesc>& ks, KernelKind kind, Pass pass) {
  for (const auto& k : ks)
    if (k.kind == kind && k.pass == pass) return &k;
  return nullptr;
}

// A small language model: ids -> embedding -> positions -> pre-LN block -> tied head -> loss.
const char* kTinyLm = R"([
  {"name":"wte","op":"embedding","num_embeddings":100,"embedding_dim":64},
  {"name":"wpe","op":"positional_embedding","num_embeddings":32},
  {"name":"ln_1","op":"layernorm"},
  {"name":"c_attn","op":"linear","out_features":192},
  {"name":"sdpa","op":"attention","num_heads":4,"is_causal":true},
  {"name":"c_proj","op":"linear","out_features":64},
  {"name":"add","op":"add","inputs":["c_proj","wpe"]},
  {"name":"ln_f","op":"layernorm"},
  {"name":"act","op":"gelu","approximate":"tanh"},
  {"name":"lm_head","op":"linear","out_features":100,"bias":false,"tie_weight":"wte"},
  {"name":"loss","op":"softmax_cross_entropy"}])";

Graph tiny_lm(int64_t seq_len = 0) {
  const std::string doc = std::string(R"({"name":"tiny_lm","input":{"sequence_length":16},"layers":)") + kTinyLm + "}";
  return parse_model(Json::parse(doc), "tiny_lm.json", seq_len);
}

}  // namespace

TEST_CASE("transformers: the zoo's parameter counts are the reference implementations' exactly") {
  // torchvision.models.vit_b_16; HuggingFace GPT2LMHeadModel (gpt2, lm_head tied to wte and counted
  // once); BertForMaskedLM (bert-base-uncased: no pooler, decoder tied to the word embeddings, its
  // bias counted; the arithmetic layer by layer is in configs/models/gen_zoo.py bert_base()).
  CHECK(load_model("vit_b_16").params() == 86567656);
  CHECK(load_model("gpt2_small").params() == 124439808);
  CHECK(load_model("bert_base").params() == 109514298);
  // model.parameters() lists a tied weight once: GPT-2 has 148 tensors (wte, wpe, 12 x 12, ln_f).
  CHECK(load_model("gpt2_small").param_tensors() == 148);
}

TEST_CASE("transformers: forward MACs per sample match the published figures") {
  // torchvision documents vit_b_16 at 17.56 GFLOPS, counting multiply-accumulates as for its CNNs
  // (linear layers 16.73 G, attention's QK^T and PV 0.72 G, the patch embedding 0.12 G): 17.56 GMACs,
  // 35.1 GFLOPs.
  CHECK(load_model("vit_b_16").fwd_macs_per_sample() / 1e9 == Approx(17.56).epsilon(0.02));
  // A language model: about one MAC per parameter per token (2 * params * T FLOPs), plus attention's
  // 2 T^2 C per layer, counted dense even where causal.
  auto lm = [](double params, double layers, double t, double c) { return params * t + 2 * layers * t * t * c; };
  CHECK(static_cast<double>(load_model("gpt2_small").fwd_macs_per_sample()) == Approx(lm(124439808, 12, 1024, 768)).epsilon(0.02));
  CHECK(static_cast<double>(load_model("bert_base").fwd_macs_per_sample()) == Approx(lm(109514298, 12, 512, 768)).epsilon(0.02));
  // Exactly: GPT-2's linear layers (12 x 7,077,888 + lm_head 38,597,376 per token) and attention.
  CHECK(load_model("gpt2_small").fwd_macs_per_sample() == int64_t(123532032) * 1024 + int64_t(12) * 2 * 1024 * 1024 * 768);
}

TEST_CASE("transformers: shapes of the zoo's layers") {
  const Graph vit = load_model("vit_b_16");
  CHECK(layer(vit, "conv_proj").out.str() == "768x14x14");
  CHECK(layer(vit, "to_sequence").out.str() == "196 tokens x 768");
  CHECK(layer(vit, "class_token").out.str() == "197 tokens x 768");
  CHECK(layer(vit, "encoder.layers.encoder_layer_0.self_attention.in_proj").out.str() == "197 tokens x 2304");
  CHECK(layer(vit, "encoder.layers.encoder_layer_0.self_attention.sdpa").out.str() == "197 tokens x 768");
  CHECK(layer(vit, "encoder.layers.encoder_layer_11.mlp.0").out.str() == "197 tokens x 3072");
  CHECK(layer(vit, "select").out.str() == "768");
  CHECK(layer(vit, "heads.head").out.str() == "1000");
  CHECK_FALSE(vit.token_input);

  const Graph gpt = load_model("gpt2_small");
  CHECK(gpt.token_input);
  CHECK(gpt.tokens_per_sample() == 1024);
  CHECK(layer(gpt, "transformer.wte").out.str() == "1024 tokens x 768");
  CHECK(layer(gpt, "transformer.h.0.attn.c_attn").out.str() == "1024 tokens x 2304");
  CHECK(layer(gpt, "transformer.h.0.attn.sdpa").attention_width() == 768);
  CHECK(layer(gpt, "transformer.h.5.mlp.act").activation == "gelu_tanh");
  CHECK(layer(gpt, "lm_head").out.str() == "1024 tokens x 50257");
  CHECK(layer(gpt, "lm_head").params() == 0);  // tied to wte, no bias
  CHECK(layer(gpt, "transformer.wte").params() == 50257 * 768);
  CHECK(layer(gpt, "transformer.wpe").params() == 1024 * 768);

  const Graph bert = load_model("bert_base");
  CHECK(bert.tokens_per_sample() == 512);
  CHECK(layer(bert, "bert.encoder.layer.3.attention.self.sdpa").in.size() == 3);
  CHECK_FALSE(layer(bert, "bert.encoder.layer.3.attention.self.sdpa").causal);
  CHECK(layer(bert, "bert.encoder.layer.3.intermediate.dense").out.str() == "512 tokens x 3072");
  CHECK(layer(bert, "cls.predictions.decoder").params() == 30522);  // the bias; the weight is the word embeddings'
  CHECK(layer(bert, "bert.embeddings.token_type_embeddings").params() == 2 * 768);
}

TEST_CASE("transformers: a linear layer over a sequence is one GEMM over the batch's tokens") {
  const Graph g = load_model("gpt2_small");
  const int li = index_of(g, "transformer.h.0.mlp.c_fc");
  const IterationKernels k = lower_iteration(g, 8, Precision::BF16);
  const auto ks = kernels_of(k, li);
  const KernelDesc* fwd = find_kernel(ks, KernelKind::Gemm, Pass::Fwd);
  const KernelDesc* bwd_data = find_kernel(ks, KernelKind::Gemm, Pass::BwdData);
  const KernelDesc* bwd_weight = find_kernel(ks, KernelKind::Gemm, Pass::BwdWeight);
  REQUIRE(fwd);
  REQUIRE(bwd_data);
  REQUIRE(bwd_weight);
  // dtsim's row-major view (rows, out, in); in cuBLAS's terms M = out, N = B*T, K = in.
  CHECK(fwd->shape[0] == 8 * 1024);
  CHECK(fwd->shape[1] == 3072);
  CHECK(fwd->shape[2] == 768);
  CHECK(fwd->flops == Approx(2.0 * 8 * 1024 * 3072 * 768));
  CHECK(bwd_data->shape[0] == 8 * 1024);
  CHECK(bwd_weight->shape[2] == 8 * 1024);
  CHECK(fwd->math == MathMode::BF16);
}

TEST_CASE("transformers: attention lowers to flash attention's fused kernels, causal halving the FLOPs") {
  const Graph gpt = load_model("gpt2_small");
  const IterationKernels k = lower_iteration(gpt, 4, Precision::BF16);
  const auto ks = kernels_of(k, index_of(gpt, "transformer.h.3.attn.sdpa"));
  // fwd and bwd, and the packed q/k/v's gradient concatenated: no T x T softmax, no other copies
  REQUIRE(ks.size() == 3);
  CHECK(std::string(ks[2].variant) == "qkv_split_grad");
  const KernelDesc* fwd = find_kernel(ks, KernelKind::Attention, Pass::Fwd);
  const KernelDesc* bwd = find_kernel(ks, KernelKind::Attention, Pass::Bwd);
  REQUIRE(fwd);
  REQUIRE(bwd);
  const double B = 4, H = 12, T = 1024, D = 64;
  CHECK(fwd->flops == Approx(4 * B * H * T * T * D / 2));  // causal: flash attention skips the masked half
  CHECK(bwd->flops == Approx(2.5 * fwd->flops));
  // Bytes: q, k, v read and o written (bf16) and the FP32 logsumexp; backward also reads o, dO and writes dq, dk, dv.
  CHECK(fwd->bytes == Approx(4 * B * T * H * D * 2 + B * H * T * 4));
  CHECK(bwd->bytes == Approx(8 * B * T * H * D * 2 + B * H * T * 4));
  CHECK(fwd->math == MathMode::BF16);

  const Graph vit = load_model("vit_b_16");
  const auto vk = kernels_of(lower_iteration(vit, 2, Precision::FP32), index_of(vit, "encoder.layers.encoder_layer_0.self_attention.sdpa"));
  const KernelDesc* vf = find_kernel(vk, KernelKind::Attention, Pass::Fwd);
  REQUIRE(vf);
  CHECK(vf->flops == Approx(4.0 * 2 * 12 * 197 * 197 * 64));  // not causal
  CHECK(vf->math == MathMode::FP32);                        // fp32: strict FP32 matmuls, as cuBLAS's
}

TEST_CASE("transformers: layernorm, embedding and the tied head's kernels") {
  const Graph g = tiny_lm();
  const IterationKernels k = lower_iteration(g, 2, Precision::BF16);
  const auto ln = kernels_of(k, index_of(g, "ln_1"));
  const KernelDesc* ln_fwd = find_kernel(ln, KernelKind::LayerNorm, Pass::Fwd);
  REQUIRE(ln_fwd);
  CHECK(ln_fwd->shape[0] == 2 * 16);
  CHECK(ln_fwd->shape[1] == 64);
  CHECK(ln_fwd->math == MathMode::FP32);  // autocast runs layer_norm in FP32
  REQUIRE(find_kernel(ln, KernelKind::LayerNorm, Pass::Bwd));

  const auto emb = kernels_of(k, index_of(g, "wte"));
  const KernelDesc* gather = find_kernel(emb, KernelKind::Embedding, Pass::Fwd);
  const KernelDesc* index_add = find_kernel(emb, KernelKind::Embedding, Pass::Bwd);
  REQUIRE(gather);
  REQUIRE(index_add);
  CHECK(gather->bytes == Approx(32 * 8 + 2.0 * 32 * 64 * 4));
  CHECK(index_add->bytes == Approx(32 * 8 + 32 * 64 * 4 + 100 * 64 * 4));  // the whole FP32 table gradient written
  // The tied weight's second gradient is added into the first: one FP32 add over the table.
  const KernelDesc* accumulate = find_kernel(emb, KernelKind::Add, Pass::Bwd);
  REQUIRE(accumulate);
  CHECK(accumulate->shape[0] == 100 * 64);
  // The tied head runs its three GEMMs and casts the (embedding's) weight under autocast.
  const auto head = kernels_of(k, index_of(g, "lm_head"));
  CHECK(find_kernel(head, KernelKind::Gemm, Pass::BwdWeight));
  int casts = 0;
  for (const auto& d : head) casts += d.kind == KernelKind::Eltwise && std::string(d.variant) == "autocast";
  CHECK(casts == 2);
  // The language model's loss: one row per token.
  const auto loss = kernels_of(k, index_of(g, "loss"));
  const KernelDesc* ce = find_kernel(loss, KernelKind::SoftmaxCE, Pass::Fwd);
  REQUIRE(ce);
  CHECK(ce->shape[0] == 2 * 16);
  CHECK(ce->shape[1] == 100);
  // The GELU is the tanh variant of the activation kind.
  const auto act = kernels_of(k, index_of(g, "act"));
  REQUIRE(find_kernel(act, KernelKind::Activation, Pass::Fwd));
  CHECK(std::string(find_kernel(act, KernelKind::Activation, Pass::Fwd)->variant) == "gelu_tanh");
  // The tied weight counts once: wte 6,400 + wpe 2,048 + 2 layernorms 256 + c_attn 12,480 + c_proj 4,160.
  CHECK(g.params() == 6400 + 2048 + 256 + 12480 + 4160);
}

TEST_CASE("transformers: --seq-len sets a language model's sequence, within its learned positions") {
  const Graph g = tiny_lm(8);
  CHECK(g.tokens_per_sample() == 8);
  CHECK(layer(g, "sdpa").out.str() == "8 tokens x 64");
  CHECK(tiny_lm(32).tokens_per_sample() == 32);
  CHECK_THROWS_WITH(tiny_lm(33), Catch::Contains("--seq-len") && Catch::Contains("32 learned positions"));
  ModelLoadOptions o;
  o.seq_len = 128;
  CHECK(load_model("gpt2_small", o).fwd_macs_per_sample() == int64_t(123532032) * 128 + int64_t(12) * 2 * 128 * 128 * 768);
  o.seq_len = 2048;
  CHECK_THROWS_WITH(load_model("gpt2_small", o), Catch::Contains("--seq-len") && Catch::Contains("1024 learned positions"));
  o.seq_len = 196;
  CHECK_THROWS_WITH(load_model("vit_b_16", o), Catch::Contains("--seq-len") && Catch::Contains("fixes its sequence of patches"));
  CHECK_THROWS_WITH(load_model("resnet50", o), Catch::Contains("--seq-len"));
}

TEST_CASE("transformers: bad layers are refused with the layer and the rule") {
  auto lm = [](const std::string& layers) {
    return parse_model(Json::parse(R"({"name":"t","input":{"sequence_length":16},"layers":)" + layers + "}"), "t.json");
  };
  const std::string emb = R"({"name":"e","op":"embedding","num_embeddings":10,"embedding_dim":12},)";
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"a","op":"attention","num_heads":5},{"name":"l","op":"softmax_cross_entropy"}])"),
                    Catch::Contains("$.layers[1]") && Catch::Contains("does not divide"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"e2","op":"embedding","num_embeddings":10,"embedding_dim":4}])"),
                    Catch::Contains("$.layers[1]") && Catch::Contains("token ids"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"h","op":"linear","out_features":11,"tie_weight":"e"}])"),
                    Catch::Contains("$.layers[1]") && Catch::Contains("tie_weight"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"n","op":"layernorm"},{"name":"h","op":"linear","out_features":10,"tie_weight":"n"}])"),
                    Catch::Contains("embedding layer"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"g","op":"gelu","approximate":"fast"}])"), Catch::Contains("approximate"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"s","op":"select","index":16}])"), Catch::Contains("beyond"));
  CHECK_THROWS_WITH(lm("[" + emb + R"({"name":"c","op":"conv2d","out_channels":4,"kernel":1}])"), Catch::Contains("needs a C x H x W input"));
  CHECK_THROWS_WITH(model_from(R"([{"name":"n","op":"layernorm"}])"), Catch::Contains("sequence or a vector"));
  CHECK_THROWS_WITH(model_from(R"([{"name":"e","op":"embedding","num_embeddings":10,"embedding_dim":4}])"), Catch::Contains("sequence"));
  CHECK_THROWS_WITH(lm(R"([{"name":"r","op":"relu","approximate":"tanh"}])"), Catch::Contains("approximate"));
}

TEST_CASE("transformers: the new kernels are priced by their measured predictors and said to be") {
  const ClusterSpec c = load_cluster("h100-sxm");
  TrainingConfig cfg;
  cfg.gpus = 8;
  cfg.batch_per_gpu = 8;
  cfg.precision = Precision::BF16;
  const Graph g = load_model("gpt2_small");
  const Prediction p = predict(g, c, cfg);
  for (KernelKind kind : {KernelKind::Attention, KernelKind::LayerNorm, KernelKind::Embedding}) {
    const KindPricing& kp = p.timeline.pricing[static_cast<int>(kind)];
    INFO(kind_name(kind));
    CHECK(kp.mlp_s > 0);  // kernels_transformer: measured through PyTorch on the H100
    CHECK(kp.roofline_s == 0);
  }
  CHECK(p.timeline.pricing[static_cast<int>(KernelKind::Gemm)].mlp_s > 0);  // the GEMMs still by their predictors
  const std::string priced = priced_by_text(p);
  CHECK(priced.find("attention measured") != std::string::npos);
  CHECK(priced.find("layernorm measured") != std::string::npos);
  CHECK(priced.find("embedding measured") != std::string::npos);
  CHECK(p.tokens_per_sample == 1024);
  CHECK(p.throughput_tokens_per_s == Approx(p.throughput_samples_per_s * 1024));
  const Json j = prediction_json(p);
  CHECK(j["sequence_length"] == 1024);
  CHECK(j["priced_by"]["attention"]["roofline_s"] == 0.0);
  // Image models keep their outputs' fields: no sequence fields.
  const Json r = prediction_json(predict(load_model("resnet18"), c, cfg));
  CHECK_FALSE(r.contains("sequence_length"));
  CHECK_FALSE(r.contains("throughput_tokens_per_s"));
}

TEST_CASE("transformers: every new kernel kind keeps the physics floor and names its shape fields") {
  for (const std::string& gpu : {"h100-sxm", "h200-sxm", "v100-sxm2"}) {
    const GpuSpec spec = load_gpu(gpu);
    for (const char* model : {"auto", "roofline"}) {
      auto cm = make_compute_model(model, spec);
      for (const auto& name : {"gpt2_small", "vit_b_16", "bert_base"}) {
        const IterationKernels k = lower_iteration(load_model(name), 4, Precision::FP32);
        for (const auto* list : {&k.forward, &k.backward})
          for (const auto& d : *list) {
            INFO(gpu << " " << model << " " << name << " " << kind_name(d.kind) << " " << pass_name(d.pass));
            CHECK(cm->time(d).seconds >= physics_floor_s(d, spec) * (1 - 1e-12));
          }
      }
    }
  }
  for (KernelKind kind : {KernelKind::LayerNorm, KernelKind::Attention, KernelKind::Embedding}) {
    CHECK(parse_kind(kind_name(kind)) == kind);
    CHECK_FALSE(kernel_shape_fields(kind).empty());
  }
  const KernelDesc k = parse_kernel_spec({"attention", "bwd", "bf16", "N=8,heads=12,T=1024,head_dim=64,causal=1", "", "contiguous"});
  CHECK(k.flops == Approx(10.0 * 8 * 12 * 1024 * 1024 * 64 / 2));
  CHECK_THROWS_WITH(parse_kernel_spec({"attention", "fwd", "bf16", "N=8,heads=12,T=1024,head_dim=64,causal=2", "", "contiguous"}),
                    Catch::Contains("causal"));
  CHECK(parse_kernel_spec({"activation", "fwd", "bf16", "elements=1024", "gelu_tanh", "contiguous"}).variant == std::string("gelu_tanh"));
}

TEST_CASE("transformers: memory keeps what flash attention saves, linear in the sequence length") {
  // Flash attention saves q, k, v, o and the logsumexp, never the T x T scores: every tensor kept
  // for backward grows with T, so twice the tokens keep twice the activations.
  ModelLoadOptions o;
  o.seq_len = 512;
  const double a512 = saved_activation_bytes(load_model("gpt2_small", o), 4, Precision::BF16);
  o.seq_len = 1024;
  const double a1024 = saved_activation_bytes(load_model("gpt2_small", o), 4, Precision::BF16);
  CHECK(a1024 / a512 == Approx(2.0).epsilon(1e-9));
  // GPT-2 small at batch 1 x 1024 tokens, bf16: per layer and token 38 C bytes (the two layernorms'
  // FP32 inputs 2 x 4C, c_attn's input's bf16 cast 2C, q k v 6C and o 2C, c_fc's input's cast 2C, the
  // GELU's input 8C and c_proj's input 8C, two dropout masks 2 x C) and 64 bytes of statistics (mean,
  // rstd, logsumexp): 29.9 MB per layer, 359 MB for 12; the loss's bf16 log-softmax and the FP32 copy
  // nll_loss keeps under autocast, 1024 x 50257 x (2 + 4) = 309 MB.
  o.seq_len = 0;
  const double a = saved_activation_bytes(load_model("gpt2_small", o), 1, Precision::BF16);
  const double per_layer = 1024.0 * (38 * 768 + 64), log_softmax = 1024.0 * 50257 * (2 + 4);
  CHECK(a > 12 * per_layer + log_softmax);
  CHECK(a < 1.05 * (12 * per_layer + log_softmax));
  const ClusterSpec c = load_cluster("h100-sxm");
  const MemoryFit m = memory_fit(load_model("gpt2_small"), 8, Precision::BF16, 8, c.gpu);
  CHECK(m.fits);
  // Token ids and labels (int64, one each per token) are the input data.
  CHECK(m.input_bytes == Approx(8.0 * 1024 * 8 * 2));
}

TEST_CASE("transformers: step modes run on the sequence models") {
  StepMode cl;
  cl.memory_format = MemoryFormat::ChannelsLast;
  const Graph vit = load_model("vit_b_16");
  for (const auto& d : lower_iteration(vit, 8, Precision::BF16, cl).forward) {
    INFO(vit.layers[d.layer].name);
    if (std::string(d.variant) == "autocast") continue;  // the weight's cast: not an activation tensor
    CHECK((d.format == MemoryFormat::ChannelsLast) == (vit.layers[d.layer].name == "conv_proj"));  // only the patch embedding is over an image
  }
  const ClusterSpec c = load_cluster("h100-sxm");
  for (const char* name : {"gpt2_small", "bert_base", "vit_b_16"}) {
    for (Execution e : {Execution::Eager, Execution::Compile, Execution::CompileCudaGraphs}) {
      TrainingConfig cfg;
      cfg.batch_per_gpu = 4;
      cfg.precision = Precision::BF16;
      cfg.mode.execution = e;
      cfg.mode.optimizer = Optimizer::AdamW;
      const Prediction p = predict(load_model(name), c, cfg);
      INFO(name << " " << execution_name(e));
      CHECK(p.iteration_s > 0);
      CHECK(std::isfinite(p.iteration_s));
    }
  }
}

TEST_CASE("cli: predict and sweep --seq-len, tokens per second, and one-line errors") {
  auto r = run_dtsim("predict --model gpt2_small --gpus 8 --batch-per-gpu 8 --precision bf16");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tokens/s") != std::string::npos);
  CHECK(r.out.find("sequences of 1024 tokens") != std::string::npos);
  CHECK(r.out.find("attention measured") != std::string::npos);
  r = run_dtsim("predict --model gpt2_small --batch-per-gpu 8 --precision bf16 --seq-len 256 --format json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["sequence_length"] == 256);
  CHECK(j["throughput_tokens_per_s"].get<double>() == Approx(j["throughput_samples_per_s"].get<double>() * 256));
  r = run_dtsim("sweep --model gpt2_small,bert_base --gpus 1,8 --batch-per-gpu 4 --seq-len 128 --precision bf16 --format csv");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("throughput_tokens_per_s") != std::string::npos);
  CHECK(lines(r.out) == 5);
  r = run_dtsim("sweep --model resnet18 --gpus 1 --batch-per-gpu 4 --format csv");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("tokens") == std::string::npos);  // image models' columns as they were
  for (const std::string& bad : {"predict --model vit_b_16 --batch-per-gpu 8 --seq-len 196", "predict --model gpt2_small --batch-per-gpu 8 --seq-len 4096",
                                 "predict --model gpt2_small --batch-per-gpu 8 --seq-len 0", "predict --model resnet50 --batch-per-gpu 8 --seq-len 64",
                                 "sweep --model gpt2_small,resnet50 --gpus 1 --batch-per-gpu 8 --seq-len 64"}) {
    INFO(bad);
    r = run_dtsim(bad);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("--seq-len") != std::string::npos);
    CHECK(r.out.empty());
  }
  r = run_dtsim("models --model gpt2_small --seq-len 64");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("64 token ids") != std::string::npos);
  CHECK(r.out.find("weight tied to transformer.wte") != std::string::npos);
}

namespace {
int count_variant(const std::vector<KernelDesc>& ks, Pass pass, const std::string& variant) {
  int c = 0;
  for (const auto& k : ks) c += k.pass == pass && k.kind == KernelKind::Eltwise && variant == k.variant;
  return c;
}
double total_bytes(const IterationKernels& k) {
  double b = 0;
  for (const auto* list : {&k.forward, &k.backward, &k.update})
    for (const auto& d : *list) b += d.bytes;
  return b;
}
}  // namespace

TEST_CASE("transformers: autocast's dtype flow keeps the residual stream FP32 and casts linear inputs") {
  const Graph g = load_model("gpt2_small");
  const IterationKernels k = lower_iteration(g, 2, Precision::BF16);
  const std::string p = "transformer.h.0.";
  // The residual adds (FP32 stream + bf16 projection) run in FP32, forward and their gradient accumulations.
  for (const char* add : {"add_1", "add_2"}) {
    const auto ks = kernels_of(k, index_of(g, p + add));
    const KernelDesc* f = find_kernel(ks, KernelKind::Add, Pass::Fwd);
    REQUIRE(f);
    CHECK(f->math == MathMode::FP32);
    CHECK(f->bytes == Approx(2.0 * 1024 * 768 * (4 + 2 + 4)));  // FP32 stream and bf16 branch read, FP32 written
    REQUIRE(find_kernel(ks, KernelKind::Add, Pass::Bwd));
    CHECK(find_kernel(ks, KernelKind::Add, Pass::Bwd)->math == MathMode::FP32);
  }
  // Dropouts on bf16 outputs stay bf16; the embeddings' dropout runs on the FP32 sum.
  CHECK(find_kernel(kernels_of(k, index_of(g, p + "attn.resid_dropout")), KernelKind::Dropout, Pass::Fwd)->math == MathMode::BF16);
  // Each linear layer fed by a layernorm casts its input (fwd) and its input's gradient (bwd); others don't.
  const double el = 2.0 * 1024 * 768;
  for (const std::string lin : {p + "attn.c_attn", p + "mlp.c_fc", std::string("lm_head")}) {
    const auto ks = kernels_of(k, index_of(g, lin));
    CHECK(count_variant(ks, Pass::Fwd, "autocast_cast") == 1);
    CHECK(count_variant(ks, Pass::Bwd, "autocast_cast") == 1);
    for (const auto& d : ks)
      if (std::string(d.variant) == "autocast_cast") CHECK(d.bytes == Approx(el * 6));  // FP32 read, bf16 written or back
  }
  for (const std::string lin : {p + "attn.c_proj", p + "mlp.c_proj"}) {
    const auto ks = kernels_of(k, index_of(g, lin));
    CHECK(count_variant(ks, Pass::Fwd, "autocast_cast") + count_variant(ks, Pass::Bwd, "autocast_cast") == 0);
  }
  // fp32: no flow, no casts.
  const IterationKernels f32 = lower_iteration(g, 2, Precision::FP32);
  CHECK(count_variant(f32.forward, Pass::Fwd, "autocast_cast") + count_variant(f32.backward, Pass::Bwd, "autocast_cast") == 0);
  for (bool b : autocast_fp32_outputs(g, Precision::FP32)) CHECK_FALSE(b);
  // The saved activations grow with the FP32 stream (the layernorms save FP32 inputs).
  CHECK(saved_activation_bytes(g, 2, Precision::BF16) < saved_activation_bytes(g, 2, Precision::FP32));
}

TEST_CASE("transformers: a CNN's autocast lowering has no FP32 activations (unchanged by the dtype flow)") {
  const Graph g = load_model("resnet18");
  for (bool b : autocast_fp32_outputs(g, Precision::BF16)) CHECK_FALSE(b);
  const IterationKernels k = lower_iteration(g, 32, Precision::BF16);
  // The lowering's before the dtype flow (243 kernels, 3,267,756,736 bytes), plus the loss as autocast
  // runs it: the log-probabilities' cast to FP32 for nll_loss, its FP32 gradient's fill and cast back (3
  // kernels over 32 x 1000: 512,000 bytes), the log_softmax kernels on 16-bit logits (256,000 fewer).
  CHECK(k.forward.size() + k.backward.size() + k.update.size() == 243 + 3);
  CHECK(total_bytes(k) == Approx(3267756736.0 + 512000 - 256000).epsilon(1e-12));
}

TEST_CASE("transformers: nn.MultiheadAttention's layout copies on vit_b_16 only") {
  const Graph vit = load_model("vit_b_16");
  const int li = index_of(vit, "encoder.layers.encoder_layer_0.self_attention.sdpa");
  CHECK(vit.layers[li].mha_layout);
  const auto ks = kernels_of(lower_iteration(vit, 2, Precision::BF16), li);
  for (const char* v : {"mha_input_transpose", "mha_qkv_contiguous", "mha_output_permute"}) {
    CHECK(count_variant(ks, Pass::Fwd, v) == 1);
    CHECK(count_variant(ks, Pass::Bwd, v) == 1);
  }
  const double el = 2.0 * 197 * 768;
  for (const auto& d : ks) {
    if (std::string(d.variant) == "mha_qkv_contiguous") CHECK(d.bytes == Approx(2 * 3 * el * 2));
    if (std::string(d.variant) == "mha_input_transpose") CHECK(d.bytes == Approx(2 * el * 2));
  }
  const Graph gpt = load_model("gpt2_small");
  const IterationKernels gk = lower_iteration(gpt, 2, Precision::BF16);
  for (const auto* list : {&gk.forward, &gk.backward})
    for (const auto& d : *list) CHECK(std::string(d.variant).rfind("mha_", 0) == std::string::npos);
}

TEST_CASE("transformers: nn.MultiheadAttention's permuted residual stream: LayerNorm copies, strided adds, the q/k/v selects' backward") {
  const Graph vit = load_model("vit_b_16");
  const IterationKernels k = lower_iteration(vit, 2, Precision::BF16);
  auto count = [](const std::vector<KernelDesc>& ks, KernelKind kind, const std::string& v) {
    int c = 0;
    for (const auto& d : ks) c += d.kind == kind && v == d.variant;
    return c;
  };
  // 12 encoder layers: every LayerNorm after the first attention reads the permuted stream (ln_2 of
  // layer 0 onwards and the encoder's final one: 24), each attention's output gradient one more.
  CHECK(count(k.forward, KernelKind::Eltwise, "permuted_stream_copy") == 24);
  CHECK(count(k.backward, KernelKind::Eltwise, "permuted_stream_copy") == 24 + 12);
  for (const auto& d : k.forward)
    if (std::string(d.variant) == "permuted_stream_copy") CHECK(d.math == MathMode::FP32);
  // The attention's residual add in layer 0 reads the contiguous FP32 input out of order; the MLP's
  // adds read their 16-bit branch so; later attention adds have both operands permuted alike.
  CHECK(count(k.forward, KernelKind::Add, "strided_wide") == 1);
  CHECK(count(k.forward, KernelKind::Add, "strided") == 12);
  CHECK(count(k.forward, KernelKind::Add, "") == 11);
  CHECK(count(k.backward, KernelKind::Eltwise, "mha_qkv_grad_fill") == 36);
  CHECK(count(k.backward, KernelKind::Eltwise, "mha_qkv_grad_copy") == 36);
  CHECK(count(k.backward, KernelKind::Eltwise, "mha_qkv_grad_add") == 24);
  const double qkv = 2.0 * 197 * 3 * 768;  // batch 2, packed q, k, v at 2 bytes
  for (const auto& d : k.backward)
    if (std::string(d.variant) == "mha_qkv_grad_add") CHECK(d.bytes == Approx(3 * qkv * 2));
  // In FP32 training the strided adds read FP32 either way.
  const IterationKernels f = lower_iteration(vit, 2, Precision::FP32);
  CHECK(count(f.forward, KernelKind::Add, "strided_wide") == 13);
  // gpt2_small runs scaled_dot_product_attention on contiguous heads: none of this.
  const IterationKernels gk = lower_iteration(load_model("gpt2_small"), 2, Precision::BF16);
  for (const auto* list : {&gk.forward, &gk.backward})
    for (const auto& d : *list) {
      CHECK(std::string(d.variant) != "permuted_stream_copy");
      CHECK(std::string(d.variant).rfind("strided", 0) == std::string::npos);
    }
}

TEST_CASE("transformers: backward casts each residual add's gradient to its 16-bit branch and concatenates a packed q/k/v's") {
  const Graph gpt = load_model("gpt2_small");
  auto count = [](const std::vector<KernelDesc>& ks, const std::string& v) {
    int c = 0;
    for (const auto& d : ks) c += d.kind == KernelKind::Eltwise && v == d.variant;
    return c;
  };
  const IterationKernels b = lower_iteration(gpt, 2, Precision::BF16), f = lower_iteration(gpt, 2, Precision::FP32);
  // 12 blocks x 2 residual adds of a bf16 branch into the FP32 stream, beside the casts of the 25
  // linear layers' FP32 inputs (c_attn, c_fc and lm_head read a layernorm's FP32 output).
  CHECK(count(b.backward, "autocast_cast") == 24 + 25);
  CHECK(count(f.backward, "autocast_cast") == 0);
  CHECK(count(b.backward, "qkv_split_grad") == 12);
  CHECK(count(f.backward, "qkv_split_grad") == 12);
  // BERT's q, k and v come from three linear layers: nothing to concatenate.
  CHECK(count(lower_iteration(load_model("bert_base"), 2, Precision::BF16).backward, "qkv_split_grad") == 0);
}
