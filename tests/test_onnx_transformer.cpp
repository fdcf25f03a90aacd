// Transformers from ONNX: graphs the test writes node by node with libonnx's protobuf
// classes, the way torch.onnx.export (TorchScript, opset 17) writes a GPT-2 block and a ViT block
// (there is no torch or python3-onnx on the build machines), imported onto dtsim's transformer layers
// and checked against hand counts and against the same model written in dtsim's JSON.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_writer.hpp"

#include "study_cli.hpp"

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "workload/model_json.hpp"

using dtsim::Graph;
using dtsim::InputError;
using dtsim::Layer;
using dtsim::load_model;
using dtsim::Op;
using dtsim::Shape;

namespace {

// A graph written node by node: one input (token ids or images, with a symbolic batch), Constant
// nodes for literals, weights as initializers without values unless given.
class Writer : public OnnxWriter {
 public:
  // The input's first dim is the dynamic "batch", as torch.onnx.export writes it with dynamic_axes.
  Writer(const std::string& name, std::vector<int64_t> input, int32_t type, int64_t opset = 17) : OnnxWriter(name, input, type, opset, true) {}

  // A bool initializer with values (GPT-2's causal `bias` buffer).
  std::string bools(const std::string& name, const std::vector<int64_t>& dims, const std::vector<bool>& values) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::BOOL);
    for (int64_t d : dims) t->add_dims(d);
    for (bool b : values) t->add_int32_data(b);
    return name;
  }
  // nn.Linear on a sequence as torch exports it: MatMul by the transposed weight, Add of the bias.
  std::string linear(const std::string& x, const std::string& name, int64_t in, int64_t out, bool bias = true) {
    std::string y = op("MatMul", {x, weight(name + ".weight_t", {in, out})}, "/" + name + "/MatMul");
    return bias ? op("Add", {weight(name + ".bias", {out}), y}, "/" + name + "/Add") : y;
  }
  std::string layernorm(const std::string& x, const std::string& name, int64_t c) {
    onnx::NodeProto* n = node("LayerNormalization", {x, weight(name + ".weight", {c}), weight(name + ".bias", {c})}, "/" + name + "/LayerNormalization");
    auto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(-1);
    return n->output(0);
  }
  std::string dropout(const std::string& x, const std::string& name) {
    return op("Dropout", {x, scalar(name + "/ratio", 0.1f), bool_scalar(name + "/training", true)}, name + "/Dropout");
  }
  // x.view(x.size(0), x.size(1), a, b) as torch traces it: the sizes from Shape, the rest constants.
  std::string view4(const std::string& x, const std::string& name, int64_t a, int64_t b) {
    std::string s = op("Shape", {x}, name + "/Shape");
    auto dim = [&](int64_t i) {
      return op("Unsqueeze", {op("Gather", {s, ints(name + "/i" + std::to_string(i), {i}, true)}, name + "/Gather_" + std::to_string(i), "axis", {0}),
                              ints(name + "/u" + std::to_string(i), {0})},
                "/" + name + "/Unsqueeze_" + std::to_string(i));
    };
    std::string shape = op("Concat", {dim(0), dim(1), ints(name + "/a", {a}), ints(name + "/b", {b})}, name + "/Concat", "axis", {0});
    return op("Reshape", {x, shape}, name + "/Reshape");
  }
};

// Sizes of the small GPT-2 and ViT blocks.
constexpr int64_t kT = 16, kC = 32, kHeads = 4, kD = kC / kHeads, kMlp = 4 * kC, kVocab = 100, kPositions = 32;

// How the attention of a block is written.
struct AttentionStyle {
  bool fused_qkv = true;      // one c_attn projection split in three, or three projections
  bool causal = true;         // GPT-2's masked scores (Where with the sliced `bias` buffer)
  bool trilu = false;         // causal as scaled_dot_product_attention(is_causal=True) exports it: Trilu, Equal, Where, Add
  bool band = false;          // an additive mask that is neither causal nor empty (refused)
  bool sdpa_scale = false;    // scaled_dot_product_attention's export: q and k^T each times sqrt(scale)
  bool drop_softmax_matmul = false;  // leave out the MatMul with v: a partial pattern
  bool conv1d = false;        // c_attn and c_proj as HuggingFace's Conv1D: a Gemm over N*T rows
};

// HuggingFace's Conv1D: torch.addmm(bias, x.view(-1, in), weight).view(N, T, out).
std::string conv1d(Writer& w, const std::string& x, const std::string& m, int64_t in, int64_t out, int64_t tokens) {
  std::string rows = w.op("Reshape", {x, w.ints("/" + m + "/rows", {-1, in})}, "/" + m + "/Reshape");
  std::string y = w.op("Gemm", {rows, w.weight(m + ".weight", {in, out}), w.weight(m + ".bias", {out})}, "/" + m + "/Gemm");
  return w.op("Reshape", {y, w.ints("/" + m + "/back", {-1, tokens, out})}, "/" + m + "/Reshape_1");
}

// One attention block from x (N x T x C): the projections, the heads, the scores, the output projection.
std::string attention(Writer& w, const std::string& x, const std::string& m, const AttentionStyle& s) {
  std::string q, k, v;
  if (s.fused_qkv) {
    std::string qkv = s.conv1d ? conv1d(w, x, m + ".c_attn", kC, 3 * kC, kT) : w.linear(x, m + ".c_attn", kC, 3 * kC);
    onnx::NodeProto* split = w.node("Split", {qkv, w.ints(m + "/split", {kC, kC, kC})}, "/" + m + "/Split");
    auto* a = split->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(2);
    split->add_output(split->name() + "_output_1");
    split->add_output(split->name() + "_output_2");
    q = split->output(0), k = split->output(1), v = split->output(2);
  } else {
    q = w.linear(x, m + ".q_proj", kC, kC), k = w.linear(x, m + ".k_proj", kC, kC), v = w.linear(x, m + ".v_proj", kC, kC);
  }
  auto heads = [&](const std::string& t, const std::string& name, std::vector<int64_t> perm) {
    return w.op("Transpose", {w.view4(t, "/" + m + "/" + name, kHeads, kD)}, "/" + m + "/" + name + "/Transpose", "perm", perm);
  };
  std::string qh = heads(q, "q", {0, 2, 1, 3}), kt = heads(k, "k", {0, 2, 3, 1}), vh = heads(v, "v", {0, 2, 1, 3});
  std::string scores;
  if (s.sdpa_scale) {
    std::string root = w.op("Sqrt", {w.scalar("/" + m + "/scale", 1.0f / std::sqrt(float(kD)))}, "/" + m + "/Sqrt");
    scores = w.op("MatMul", {w.op("Mul", {qh, root}, "/" + m + "/Mul"), w.op("Mul", {kt, root}, "/" + m + "/Mul_1")}, "/" + m + "/MatMul");
  } else {
    scores = w.op("Div", {w.op("MatMul", {qh, kt}, "/" + m + "/MatMul"), w.scalar("/" + m + "/sqrt_d", std::sqrt(float(kD)))}, "/" + m + "/Div");
  }
  if (s.trilu) {  // ones(L, S).tril() from the shapes of q and v, then 0 / -inf added
    auto last2 = [&](const std::string& t, const std::string& name) {
      return w.op("Slice", {w.op("Shape", {t}, "/" + m + "/" + name + "/Shape"), w.ints("/" + m + "/" + name + "/a", {-2}), w.ints("/" + m + "/" + name + "/b", {-1})},
                  "/" + m + "/" + name + "/Slice");
    };
    onnx::NodeProto* ones = w.node("ConstantOfShape", {w.op("Concat", {last2(qh, "L"), last2(vh, "S")}, "/" + m + "/LS", "axis", {0})}, "/" + m + "/ConstantOfShape");
    auto* a = ones->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_float_data(1.0f);
    onnx::NodeProto* tril = w.node("Trilu", {ones->output(0)}, "/" + m + "/Trilu");
    auto* upper = tril->add_attribute();
    upper->set_name("upper");
    upper->set_type(onnx::AttributeProto::INT);
    upper->set_i(0);
    std::string zero = w.scalar("/" + m + "/zero", 0.0f);
    std::string masked = w.op("Equal", {tril->output(0), zero}, "/" + m + "/Equal");
    scores = w.op("Add", {scores, w.op("Where", {masked, w.scalar("/" + m + "/inf", -INFINITY), zero}, "/" + m + "/Where")}, "/" + m + "/Add");
  } else if (s.band) {  // each token sees itself and the next: not causal
    onnx::NodeProto* c = w.node("Constant", {}, "/" + m + "/band");
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_dims(kT);
    a->mutable_t()->add_dims(kT);
    for (int64_t i = 0; i < kT; ++i)
      for (int64_t j = 0; j < kT; ++j) a->mutable_t()->add_float_data(j == i || j == i + 1 ? 0.0f : -INFINITY);
    scores = w.op("Add", {scores, c->output(0)}, "/" + m + "/Add");
  } else if (s.causal) {  // self.bias[:, :, :T, :T], torch.where(mask, scores, finfo.min)
    std::vector<bool> tril;
    for (int64_t i = 0; i < kPositions; ++i)
      for (int64_t j = 0; j < kPositions; ++j) tril.push_back(j <= i);
    std::string bias = w.bools(m + ".bias", {1, 1, kPositions, kPositions}, tril);
    std::string mask = w.op("Slice", {bias, w.ints("/" + m + "/s0", {0, 0}), w.ints("/" + m + "/s1", {kT, kT}), w.ints("/" + m + "/s2", {2, 3})}, "/" + m + "/Slice");
    scores = w.op("Where", {mask, scores, w.scalar("/" + m + "/min", -3.4e38f)}, "/" + m + "/Where");
  }
  std::string p = w.dropout(w.op("Softmax", {scores}, "/" + m + "/Softmax", "axis", {-1}), "/" + m + "/attn_dropout");
  if (s.drop_softmax_matmul) return w.op("Relu", {p}, "/" + m + "/Relu");
  std::string o = w.op("Transpose", {w.op("MatMul", {p, vh}, "/" + m + "/MatMul_1")}, "/" + m + "/Transpose_out", "perm", {0, 2, 1, 3});
  o = w.op("Reshape", {o, w.ints("/" + m + "/merge", {0, 0, kC})}, "/" + m + "/Reshape_out");
  return s.conv1d ? conv1d(w, o, m + ".c_proj", kC, kC, kT) : w.linear(o, m + ".c_proj", kC, kC);
}

// GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as torch exports it.
std::string gelu_tanh(Writer& w, const std::string& x, const std::string& m) {
  std::string cube = w.op("Pow", {x, w.scalar(m + "/three", 3.0f)}, m + "/Pow");
  std::string inner = w.op("Add", {x, w.op("Mul", {w.scalar(m + "/kappa", 0.044715f), cube}, m + "/Mul")}, m + "/Add");
  std::string t = w.op("Tanh", {w.op("Mul", {w.scalar(m + "/beta", 0.7978845608f), inner}, m + "/Mul_1")}, m + "/Tanh");
  std::string half = w.op("Mul", {w.scalar(m + "/half", 0.5f), x}, m + "/Mul_2");
  return w.op("Mul", {half, w.op("Add", {w.scalar(m + "/one", 1.0f), t}, m + "/Add_1")}, m + "/Mul_3");
}

// nn.GELU() below opset 20: x * 0.5 * (1 + erf(x / sqrt 2)) as torch's symbolic writes it.
std::string gelu_erf(Writer& w, const std::string& x, const std::string& m) {
  std::string e = w.op("Erf", {w.op("Div", {x, w.scalar(m + "/sqrt2", 1.4142135f)}, m + "/Div")}, m + "/Erf");
  std::string y = w.op("Mul", {x, w.op("Add", {e, w.scalar(m + "/one", 1.0f)}, m + "/Add")}, m + "/Mul");
  return w.op("Mul", {y, w.scalar(m + "/half", 0.5f)}, m + "/Mul_1");
}

// A one-block GPT-2 (HuggingFace GPT2LMHeadModel's structure): wte and wpe, pre-LayerNorm attention
// and MLP with residuals, ln_f, and lm_head tied to wte (x @ wte.T).
void gpt2_block(Writer& w, const AttentionStyle& s, bool tied = true) {
  std::string tok = w.op("Gather", {w.weight("transformer.wte.weight", {kVocab, kC}), "x"}, "/wte/Gather");
  std::string len = w.op("Gather", {w.op("Shape", {"x"}, "/Shape"), w.ints("/one", {1}, true)}, "/Gather_len", "axis", {0});
  std::string positions = w.op("Unsqueeze", {w.op("Range", {w.ints("/start", {0}, true), len, w.ints("/step", {1}, true)}, "/Range"), w.ints("/axes", {0})}, "/Unsqueeze");
  std::string pos = w.op("Gather", {w.weight("transformer.wpe.weight", {kPositions, kC}), positions}, "/wpe/Gather");
  std::string h = w.dropout(w.op("Add", {tok, pos}, "/Add"), "/drop");
  std::string a = w.dropout(attention(w, w.layernorm(h, "h.0.ln_1", kC), "h.0.attn", s), "/h.0/attn/resid_dropout");
  h = w.op("Add", {a, h}, "/h.0/Add");
  std::string m = w.linear(w.layernorm(h, "h.0.ln_2", kC), "h.0.mlp.c_fc", kC, kMlp);
  m = w.dropout(w.linear(gelu_tanh(w, m, "/h.0/mlp/act"), "h.0.mlp.c_proj", kMlp, kC), "/h.0/mlp/dropout");
  h = w.op("Add", {m, h}, "/h.0/Add_1");
  h = w.layernorm(h, "ln_f", kC);
  std::string head = tied ? w.op("Transpose", {"transformer.wte.weight"}, "/lm_head/Transpose", "perm", {1, 0}) : w.weight("lm_head.weight_t", {kC, kVocab});
  w.output(w.op("MatMul", {h, head}, "/lm_head/MatMul"));
}

// The same block in dtsim's model JSON (docs/model-format.md).
const char* kGpt2Json = R"({"name": "gpt2_block", "input": {"sequence_length": 16}, "layers": [
  {"name": "wte", "op": "embedding", "num_embeddings": 100, "embedding_dim": 32},
  {"name": "wpe", "op": "positional_embedding", "num_embeddings": 32},
  {"name": "drop", "op": "dropout", "p": 0.1},
  {"name": "ln_1", "op": "layernorm"},
  {"name": "c_attn", "op": "linear", "out_features": 96},
  {"name": "sdpa", "op": "attention", "num_heads": 4, "is_causal": true, "dropout_p": 0.1},
  {"name": "c_proj", "op": "linear", "out_features": 32},
  {"name": "resid_dropout", "op": "dropout", "p": 0.1},
  {"name": "add_1", "op": "add", "inputs": ["resid_dropout", "drop"]},
  {"name": "ln_2", "op": "layernorm"},
  {"name": "c_fc", "op": "linear", "out_features": 128},
  {"name": "act", "op": "gelu", "approximate": "tanh"},
  {"name": "mlp_proj", "op": "linear", "out_features": 32},
  {"name": "mlp_dropout", "op": "dropout", "p": 0.1},
  {"name": "add_2", "op": "add", "inputs": ["mlp_dropout", "add_1"]},
  {"name": "ln_f", "op": "layernorm"},
  {"name": "lm_head", "op": "linear", "out_features": 100, "bias": false, "tie_weight": "wte"},
  {"name": "loss", "op": "softmax_cross_entropy"}]})";

std::vector<const Layer*> layers_of(const Graph& g, Op op) {
  std::vector<const Layer*> r;
  for (const auto& l : g.layers)
    if (l.op == op) r.push_back(&l);
  return r;
}

std::string import_error(const std::string& path) { return ::import_error(path, 2); }

// The prediction's JSON without what names the model and its layers.
dtsim::Json prediction(const std::string& model) {
  auto r = study_test::run_dtsim("predict --model " + model + " --gpus 4 --batch-per-gpu 8 --format json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  dtsim::Json j = dtsim::Json::parse(r.out);
  j.erase("model");
  for (auto& l : j["layers"]) l.erase("name");
  return j;
}

}  // namespace

TEST_CASE("onnx transformer: a one-block GPT-2 imports as embedding, positions, layernorms, one causal attention, gelu_tanh and a tied lm_head") {
  Writer w("gpt2_block", {1, kT}, onnx::TensorProto::INT64);
  gpt2_block(w, AttentionStyle{});
  Graph g = load_model(w.write(), batch(2));
  INFO(g.notes.size());
  CHECK(g.token_input);
  CHECK(g.input == (Shape{1, kT, 1, false, true}));
  // wte, wpe, 3 layernorms (2C each), c_attn, c_proj, c_fc, mlp c_proj with biases; lm_head tied to wte.
  const int64_t params = kVocab * kC + kPositions * kC + 3 * 2 * kC + (kC * 3 * kC + 3 * kC) + (kC * kC + kC) + (kC * kMlp + kMlp) + (kMlp * kC + kC);
  CHECK(g.params() == params);
  const Shape seq{kC, kT, 1, false, true};
  auto emb = layers_of(g, Op::Embedding);
  REQUIRE(emb.size() == 1);
  CHECK(emb[0]->num_embeddings == kVocab);
  CHECK(emb[0]->out == seq);
  auto pos = layers_of(g, Op::PositionalEmbedding);
  REQUIRE(pos.size() == 1);
  CHECK(pos[0]->num_embeddings == kPositions);
  CHECK(layers_of(g, Op::LayerNorm).size() == 3);
  auto att = layers_of(g, Op::Attention);
  REQUIRE(att.size() == 1);
  CHECK(att[0]->num_heads == kHeads);
  CHECK(att[0]->causal);
  CHECK(att[0]->dropout_p == Approx(0.1));
  CHECK(att[0]->in.size() == 1);
  CHECK(att[0]->in[0] == (Shape{3 * kC, kT, 1, false, true}));
  CHECK(att[0]->out == seq);
  CHECK(att[0]->fwd_macs() == 2 * kT * kT * kC);
  auto lin = layers_of(g, Op::Linear);
  REQUIRE(lin.size() == 5);
  CHECK(lin[0]->out == (Shape{3 * kC, kT, 1, false, true}));
  CHECK(lin[2]->out == (Shape{kMlp, kT, 1, false, true}));
  CHECK(lin[4]->tied_to == emb[0] - g.layers.data());
  CHECK(lin[4]->out == (Shape{kVocab, kT, 1, false, true}));
  auto act = layers_of(g, Op::Activation);
  REQUIRE(act.size() == 1);
  CHECK(act[0]->activation == "gelu_tanh");
  CHECK(layers_of(g, Op::Dropout).size() == 3);
  CHECK(layers_of(g, Op::Eltwise).empty());
  CHECK(layers_of(g, Op::View).empty());
  CHECK(g.layers.back().op == Op::SoftmaxCrossEntropy);

  // The same block in the model JSON predicts the same step, kernel for kernel.
  study_test::TempDir dir("onnx_gpt2");
  std::string json = dir.file("gpt2_block.json", kGpt2Json);
  Graph j = load_model(json);
  CHECK(j.params() == params);
  CHECK(j.layers.size() == g.layers.size());
  CHECK(j.fwd_macs_per_sample() == g.fwd_macs_per_sample());
  CHECK(prediction(w.path()) == prediction(json));
}

TEST_CASE("onnx transformer: HuggingFace's Conv1D, a Gemm over the N*T rows of x.view(-1, C), is a linear layer per token") {
  AttentionStyle conv;
  conv.conv1d = true;
  Writer w("gpt2_conv1d", {1, kT}, onnx::TensorProto::INT64);
  gpt2_block(w, conv);
  for (int64_t b : {1, 2, 5}) {
    INFO("batch " << b);
    Graph g = load_model(w.write(), batch(b));
    CHECK(layers_of(g, Op::Linear).at(0)->out == (Shape{3 * kC, kT, 1, false, true}));
    CHECK(layers_of(g, Op::View).empty());
    CHECK(layers_of(g, Op::Attention).size() == 1);
  }
  study_test::TempDir dir("onnx_gpt2_conv1d");
  CHECK(prediction(w.path()) == prediction(dir.file("gpt2_block.json", kGpt2Json)));
}

TEST_CASE("onnx transformer: three projections, scaled_dot_product_attention's scaling and an untied head") {
  Writer w("gpt2_three", {1, kT}, onnx::TensorProto::INT64);
  gpt2_block(w, AttentionStyle{false, true, true}, /*tied=*/false);
  Graph g = load_model(w.write(), batch(2));
  auto att = layers_of(g, Op::Attention);
  REQUIRE(att.size() == 1);
  CHECK(att[0]->in.size() == 3);
  CHECK(att[0]->num_heads == kHeads);
  CHECK(att[0]->causal);
  auto lin = layers_of(g, Op::Linear);
  REQUIRE(lin.size() == 7);
  CHECK(lin.back()->tied_to == -1);
  const int64_t params = kVocab * kC + kPositions * kC + 3 * 2 * kC + 4 * (kC * kC + kC) + (kC * kMlp + kMlp) + (kMlp * kC + kC) + kC * kVocab;
  CHECK(g.params() == params);
}

TEST_CASE("onnx transformer: a ViT block imports as conv, to_sequence, class token, positions, attention without a mask, gelu and select") {
  for (bool gelu_op : {true, false}) {
    INFO((gelu_op ? "Gelu (opset 20)" : "Erf pattern (opset 17)"));
    const int64_t image = 16, patch = 4, tokens = (image / patch) * (image / patch) + 1, classes = 10;
    Writer w("vit_block", {1, 3, image, image}, onnx::TensorProto::FLOAT, gelu_op ? 20 : 17);
    onnx::NodeProto* conv = w.node("Conv", {"x", w.weight("conv_proj.weight", {kC, 3, patch, patch}), w.weight("conv_proj.bias", {kC})}, "/conv_proj/Conv");
    for (const char* a : {"kernel_shape", "strides"}) {
      auto* at = conv->add_attribute();
      at->set_name(a);
      at->set_type(onnx::AttributeProto::INTS);
      at->add_ints(patch);
      at->add_ints(patch);
    }
    // x.flatten(2).transpose(1, 2): torch writes the flatten as a Reshape (ONNX's Flatten is always 2-D)
    std::string x = w.op("Transpose", {w.op("Reshape", {conv->output(0), w.ints("/flat", {0, 0, -1})}, "/Reshape")}, "/Transpose", "perm", {0, 2, 1});
    // class_token.expand(n, -1, -1): n from x.size(0)
    std::string n = w.op("Unsqueeze", {w.op("Gather", {w.op("Shape", {x}, "/Shape"), w.ints("/i0", {0}, true)}, "/Gather_n", "axis", {0}), w.ints("/u0", {0})}, "/Unsqueeze");
    std::string cls = w.op("Expand", {w.weight("class_token", {1, 1, kC}), w.op("Concat", {n, w.ints("/1C", {1, kC})}, "/Concat_shape", "axis", {0})}, "/Expand");
    x = w.op("Concat", {cls, x}, "/Concat", "axis", {1});
    x = w.op("Add", {x, w.weight("encoder.pos_embedding", {1, tokens, kC})}, "/encoder/Add");
    std::string a = attention(w, w.layernorm(x, "encoder.ln_1", kC), "encoder.self_attention", AttentionStyle{true, false});
    x = w.op("Add", {a, x}, "/encoder/Add_1");
    std::string m = w.linear(w.layernorm(x, "encoder.ln_2", kC), "encoder.mlp.0", kC, kMlp);
    m = gelu_op ? w.op("Gelu", {m}, "/encoder/mlp/Gelu") : gelu_erf(w, m, "/encoder/mlp/act");
    x = w.op("Add", {w.linear(m, "encoder.mlp.3", kMlp, kC), x}, "/encoder/Add_2");
    x = w.op("Gather", {w.layernorm(x, "encoder.ln", kC), w.ints("/zero", {0}, true)}, "/Gather", "axis", {1});
    onnx::NodeProto* head = w.node("Gemm", {x, w.weight("heads.head.weight", {classes, kC}), w.weight("heads.head.bias", {classes})}, "/heads/head/Gemm");
    auto* tb = head->add_attribute();
    tb->set_name("transB");
    tb->set_type(onnx::AttributeProto::INT);
    tb->set_i(1);
    w.output(head->output(0));
    Graph g = load_model(w.write(), batch(2));
    const int64_t params = kC * 3 * patch * patch + kC + kC + tokens * kC + 3 * 2 * kC + (kC * 3 * kC + 3 * kC) + (kC * kC + kC) + (kC * kMlp + kMlp) +
                           (kMlp * kC + kC) + (kC * classes + classes);
    CHECK(g.params() == params);
    CHECK_FALSE(g.token_input);
    std::vector<Op> ops;
    for (const auto& l : g.layers) ops.push_back(l.op);
    const std::vector<Op> expect = {Op::Conv2d, Op::ToSequence, Op::ClassToken, Op::PositionalEmbedding, Op::LayerNorm, Op::Linear, Op::Attention,
                                    Op::Linear, Op::Add, Op::LayerNorm, Op::Linear, Op::Activation, Op::Linear, Op::Add, Op::LayerNorm,
                                    Op::Select, Op::Linear, Op::SoftmaxCrossEntropy};
    CHECK(ops == expect);
    const Shape seq{kC, tokens, 1, false, true};
    auto att = layers_of(g, Op::Attention);
    REQUIRE(att.size() == 1);
    CHECK_FALSE(att[0]->causal);
    CHECK(att[0]->num_heads == kHeads);
    CHECK(att[0]->out == seq);
    CHECK(layers_of(g, Op::ClassToken)[0]->out == seq);
    CHECK(layers_of(g, Op::PositionalEmbedding)[0]->num_embeddings == tokens);
    CHECK(layers_of(g, Op::Activation)[0]->activation == "gelu");
    CHECK(layers_of(g, Op::Select)[0]->out == (Shape{kC, 1, 1, true}));
    for (const auto& n : g.notes) CHECK(n.find("eval-mode") == std::string::npos);
  }
}

TEST_CASE("onnx transformer: scaled_dot_product_attention's is_causal export (Trilu) is causal, a band mask is refused") {
  AttentionStyle s{false, false, true};
  s.trilu = true;
  Writer w("gpt2_trilu", {1, kT}, onnx::TensorProto::INT64);
  gpt2_block(w, s);
  Graph g = load_model(w.write(), batch(2));
  auto att = layers_of(g, Op::Attention);
  REQUIRE(att.size() == 1);
  CHECK(att[0]->causal);
  CHECK(att[0]->in.size() == 3);
  CHECK(g.notes.empty());

  s.trilu = false;
  s.band = true;
  Writer b("gpt2_band", {1, kT}, onnx::TensorProto::INT64);
  gpt2_block(b, s);
  std::string e = import_error(b.write());
  INFO(e);
  CHECK(e.find(b.path() + ": node '/h.0.attn/Add' (Add): attention pattern only partly recognised: its mask '/h.0.attn/band_output_0' is neither causal") == 0);
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("onnx transformer: a partial attention pattern and a MatMul of two activations outside attention are refused in one line") {
  Writer w("partial_attention", {1, kT}, onnx::TensorProto::INT64);
  AttentionStyle s;
  s.drop_softmax_matmul = true;
  gpt2_block(w, s);
  std::string e = import_error(w.write());
  INFO(e);
  CHECK(e.find(w.path() + ": node '/h.0.attn/Relu' (Relu): attention pattern only partly recognised: the attention probabilities go to Relu, not to a MatMul with v") == 0);
  CHECK(e.find('\n') == std::string::npos);

  // x @ x^T of a sequence: no Softmax, no attention.
  Writer m("matmul_two", {1, kT}, onnx::TensorProto::INT64);
  std::string x = m.op("Gather", {m.weight("wte", {kVocab, kC}), "x"}, "/wte/Gather");
  std::string y = m.op("MatMul", {x, m.op("Transpose", {x}, "/Transpose", "perm", {0, 2, 1})}, "/MatMul");
  m.output(m.linear(y, "head", kT, kVocab));
  e = import_error(m.write());
  INFO(e);
  CHECK(e.find(m.path() + ": node '/MatMul' (MatMul): MatMul of two activations is supported only inside attention") == 0);
  CHECK(e.find('\n') == std::string::npos);
  auto r = study_test::run_dtsim("models --model " + m.path());
  CHECK(r.code == 2);
  CHECK(study_test::lines(r.err) == 1);
}

TEST_CASE("onnx transformer: LayerNorm decomposed (exports below opset 17) is one layernorm, another such chain operator by operator") {
  for (float power : {2.0f, 3.0f}) {  // x - mean squared is LayerNorm's variance; cubed it is not
    INFO("power " << power);
    Writer w("ln_decomposed", {1, kT}, onnx::TensorProto::INT64);
    std::string x = w.op("Gather", {w.weight("wte", {kVocab, kC}), "x"}, "/wte/Gather");
    std::string mean = w.op("ReduceMean", {x}, "/ln/ReduceMean", "axes", {-1});
    std::string d = w.op("Sub", {x, mean}, "/ln/Sub");
    std::string var = w.op("ReduceMean", {w.op("Pow", {d, w.scalar("/ln/two", power)}, "/ln/Pow")}, "/ln/ReduceMean_1", "axes", {-1});
    std::string std_ = w.op("Sqrt", {w.op("Add", {var, w.scalar("/ln/eps", 1e-5f)}, "/ln/Add")}, "/ln/Sqrt");
    std::string y = w.op("Div", {d, std_}, "/ln/Div");
    y = w.op("Add", {w.op("Mul", {y, w.weight("ln.weight", {kC})}, "/ln/Mul"), w.weight("ln.bias", {kC})}, "/ln/Add_1");
    w.output(w.linear(y, "head", kC, kVocab, false));
    Graph g = load_model(w.write(), batch(2));
    CHECK(layers_of(g, Op::LayerNorm).size() == (power == 2 ? 1u : 0u));
    CHECK(g.layers.size() == (power == 2 ? 4u : 12u));  // embedding, layernorm (or 9 operators), linear, loss
    CHECK(g.params() == kVocab * kC + 2 * kC + kC * kVocab);
    CHECK(layers_of(g, Op::Linear).at(0)->in[0] == (Shape{kC, kT, 1, false, true}));
  }
}
