// The ONNX importer (onnx_importer.hpp): patterns of several nodes that become one layer (attention, GELU
// and LayerNorm written out), found before the nodes are translated one by one.
#include "workload/onnx/onnx_importer.hpp"

#include <algorithm>
#include <iterator>

namespace dtsim::onnx_import {

// The nodes reading a tensor for its values (not only its shape).
std::vector<const onnx::NodeProto*> Importer::readers(const std::string& t) const {
  std::vector<const onnx::NodeProto*> r;
  auto it = users_.find(t);
  if (it != users_.end())
    for (const auto* u : it->second)
      if (!shape_op(*u)) r.push_back(u);
  return r;
}

const onnx::NodeProto* Importer::producer(const std::string& t) const {
  auto it = producer_.find(t);
  return it == producer_.end() || !default_domain(*it->second) ? nullptr : it->second;
}

std::vector<std::string> Importer::dynamic_inputs(const onnx::NodeProto& n) const {
  std::vector<std::string> r;
  for (const auto& in : n.input())
    if (per_sample_tensor(in) && std::find(r.begin(), r.end(), in) == r.end()) r.push_back(in);
  return r;
}

bool Importer::is_graph_output(const std::string& t) const {
  for (const auto& o : model_.graph().output())
    if (o.name() == t) return true;
  return false;
}

// Patterns that become one layer: attention (anchored at its Softmax) and GELU written out in
// elementwise operators (anchored at its Erf or Tanh). Their nodes are absorbed; node() adds the
// layer at the pattern's last node.
void Importer::recognise() {
  for (const auto& n : model_.graph().node()) {
    if (!default_domain(n) || absorbed_.count(&n) || !per_sample_tensor(n.output_size() ? n.output(0) : "")) continue;
    if (n.op_type() == "Softmax") find_attention(n);
    if (n.op_type() == "Erf" || n.op_type() == "Tanh") find_gelu(n);
    if (n.op_type() == "ReduceMean") find_layernorm(n);
  }
}

// LayerNorm as torch exports it below opset 17, over the last axis: ReduceMean(x) -> Sub(x, mean) ->
// Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(x - mean, ...) -> Mul(weight) -> Add(bias), each read
// only by the next (x - mean by Pow and Div): one layernorm, as LayerNormalization.
void Importer::find_layernorm(const onnx::NodeProto& r) {
  auto next = [&](const onnx::NodeProto* p, const char* op) -> const onnx::NodeProto* {
    auto rd = p ? readers(p->output(0)) : std::vector<const onnx::NodeProto*>{};
    return rd.size() == 1 && rd[0]->op_type() == op && !is_graph_output(p->output(0)) ? rd[0] : nullptr;
  };
  const std::string& x = r.input(0);
  const auto* xd = complete_shape(x);
  auto last_axis = [&](const onnx::NodeProto* p) {
    auto a = attr_ints(*p, "axes");
    return xd && a.size() == 1 && (a[0] == -1 || a[0] == static_cast<int64_t>(xd->size()) - 1) && attr_int(*p, "keepdims", 1);
  };
  const onnx::NodeProto* sub = next(&r, "Sub");
  if (!last_axis(&r) || !sub || sub->input(0) != x || sub->input(1) != r.output(0) || is_graph_output(sub->output(0))) return;
  auto rd = readers(sub->output(0));
  if (rd.size() != 2) return;
  const onnx::NodeProto *pow = rd[rd[0]->op_type() != "Pow"], *div = rd[rd[0]->op_type() == "Pow"];
  const onnx::NodeProto *var = next(pow, "ReduceMean"), *eps = next(var, "Add"), *sqrt = next(eps, "Sqrt"), *mul = next(div, "Mul"), *add = next(mul, "Add");
  if (pow->op_type() != "Pow" || const_scalar(*pow, 1) != 2.0 || !var || !last_axis(var) || !sqrt || dynamic_inputs(*eps).size() != 1 ||
      next(sqrt, "Div") != div || div->input(0) != sub->output(0) || !add)
    return;
  std::vector<std::string> affine;  // the weight and the bias: float initializers of C elements
  for (const auto* p : {mul, add}) {
    auto w = initializers_.find(canonical(p->input(per_sample_tensor(p->input(0)) ? 1 : 0)));
    if (w == initializers_.end() || !is_float_type(w->second->data_type()) || w->second->dims_size() != 1 || w->second->dims(0) != xd->back()) return;
    affine.push_back(w->first);
  }
  counted_.insert(affine.begin(), affine.end());
  const onnx::NodeProto* nodes[] = {&r, sub, pow, var, eps, sqrt, div, mul, add};
  absorbed_.insert(std::begin(nodes), std::end(nodes));
  Fused f;
  f.op = Op::LayerNorm;
  f.inputs = {x};
  f.output = add->output(0);
  f.anchor = &r;
  fused_[add] = f;
  ++layernorms_;
}

// GELU as torch exports it below opset 20: x * 0.5 * (1 + Erf(x / sqrt 2)), and the tanh forms
// (nn.GELU(approximate="tanh"); GPT-2's 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))): the
// pointwise nodes around one Erf or Tanh computed from one tensor x and constants, one of them
// (a Mul) read outside. Anything else is left to the operators one by one.
void Importer::find_gelu(const onnx::NodeProto& t) {
  static const std::set<std::string> pointwise = {"Add", "Sub", "Mul", "Div", "Pow", "Erf", "Tanh"};
  auto in_region = [&](const onnx::NodeProto* p) { return p && pointwise.count(p->op_type()) && !absorbed_.count(p); };
  // x: back from the Erf/Tanh through Mul, Div, Pow and Adds of two per-sample tensors (a bias Add ends it).
  std::set<const onnx::NodeProto*> region;
  std::set<std::string> roots;
  std::vector<const onnx::NodeProto*> todo = {&t};
  while (!todo.empty()) {
    const onnx::NodeProto* p = todo.back();
    todo.pop_back();
    if (!region.insert(p).second) continue;
    for (const auto& in : dynamic_inputs(*p)) {
      const onnx::NodeProto* q = producer(in);
      bool inner = in_region(q) && q->op_type() != "Erf" && q->op_type() != "Tanh" && ((q->op_type() != "Add" && q->op_type() != "Sub") || dynamic_inputs(*q).size() == 2);
      if (inner) todo.push_back(q);
      else roots.insert(in);
    }
  }
  if (roots.size() != 1) return;
  const std::string x = *roots.begin();
  // Forward: the pointwise nodes reading only x and the region's outputs (with constants).
  std::set<std::string> outs = {x};
  for (const auto* p : region) outs.insert(p->output(0));
  for (const auto& n : model_.graph().node()) {
    if (region.count(&n) || !in_region(&n) || !default_domain(n)) continue;
    auto ins = dynamic_inputs(n);
    bool only = !ins.empty();
    for (const auto& in : ins) only &= outs.count(in) > 0;
    if (only) region.insert(&n), outs.insert(n.output(0));  // 0.5 * x joins here, x * (1 + erf) here
  }
  const onnx::NodeProto* last = nullptr;
  for (const auto* p : region) {
    bool escapes = is_graph_output(p->output(0));
    for (const auto* r : readers(p->output(0))) escapes |= !region.count(r);
    if (escapes && last) return;
    if (escapes) last = p;
  }
  if (!last || last->op_type() != "Mul") return;
  // The region is what the last Mul computes from x: back from it again (0.5 * x joins here).
  std::set<const onnx::NodeProto*> nodes;
  todo = {last};
  int transcendental = 0;
  while (!todo.empty()) {
    const onnx::NodeProto* p = todo.back();
    todo.pop_back();
    if (!nodes.insert(p).second) continue;
    transcendental += p->op_type() == "Erf" || p->op_type() == "Tanh";
    for (const auto& in : dynamic_inputs(*p)) {
      if (in == x) continue;
      const onnx::NodeProto* q = producer(in);
      if (!in_region(q)) return;
      todo.push_back(q);
    }
  }
  if (transcendental != 1 || nodes.size() < 4 || !nodes.count(&t)) return;
  for (const auto* p : nodes) {
    if (p == last) continue;
    for (const auto* r : readers(p->output(0)))
      if (!nodes.count(r)) return;
  }
  absorbed_.insert(nodes.begin(), nodes.end());
  Fused f;
  f.activation = t.op_type() == "Erf" ? "gelu" : "gelu_tanh";
  f.inputs = {x};
  f.output = last->output(0);
  f.anchor = last;
  fused_[last] = f;
}

void Importer::partial_attention(const onnx::NodeProto& n, const std::string& why) const {
  fail_at(n, "attention pattern only partly recognised: " + why +
                 "; dtsim maps q, k, v projections -> Reshape/Transpose to heads -> MatMul(q, k^T) -> scale -> optional mask (Add or Where) -> Softmax -> "
                 "optional Dropout -> MatMul with v -> Transpose/Reshape back to N x T x C onto one attention layer");
}

// Back from a q, k or v operand of attention's matmuls through the views that split heads
// (Reshape, Transpose, Split, Slice, Gather, Squeeze, Unsqueeze) and a constant scale, to the tensor
// they start from: a projection's N x T x C output.
std::string Importer::heads_source(std::string t, std::vector<const onnx::NodeProto*>& nodes) const {
  static const std::set<std::string> layout = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Split", "Slice", "Gather", "Identity", "Cast", "Flatten", "Mul", "Div", "Concat",
                                                "Expand"};
  for (;;) {
    const onnx::NodeProto* p = producer(t);
    if (p && p->op_type() == "Add") {  // rotary embeddings on q or k: through to the heads they rotate
      std::string x = rotary_source(*p, nodes);
      if (x.empty()) return t;
      t = x;
      continue;
    }
    if (!p || !layout.count(p->op_type())) return t;
    auto ins = dynamic_inputs(*p);
    if (p->op_type() == "Concat" && p->input_size() != 1) return t;  // cat([x]): a past key/value cache left empty
    bool scale = p->op_type() == "Mul" || p->op_type() == "Div";
    if (ins.size() != 1 || (!scale && p->input(0) != ins[0]) || (p->op_type() == "Div" && p->input(0) != ins[0])) return t;
    nodes.push_back(p);
    t = ins[0];
  }
}

// Rotary position embeddings as HuggingFace writes them (rotate_half): x * cos + cat(-x2, x1) * sin,
// x1 and x2 the halves of x's last axis, cos and sin static. Returns x (its nodes appended to
// `nodes`, to be absorbed into the attention), or "" when `add` is not that.
std::string Importer::rotary_source(const onnx::NodeProto& add, std::vector<const onnx::NodeProto*>& nodes) const {
  if (dynamic_inputs(add).size() != 2 || add.input_size() != 2) return "";
  auto op = [&](const std::string& t, const char* type) {
    const onnx::NodeProto* p = producer(t);
    return p && p->op_type() == type ? p : nullptr;
  };
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto *m1 = op(add.input(k), "Mul"), *m2 = op(add.input(1 - k), "Mul");
    if (!m1 || !m2 || dynamic_inputs(*m1).size() != 1 || dynamic_inputs(*m2).size() != 1) continue;
    const std::string x = dynamic_inputs(*m1)[0];
    const onnx::NodeProto* cat = op(dynamic_inputs(*m2)[0], "Concat");
    if (!cat || cat->input_size() != 2) continue;
    const onnx::NodeProto *neg = op(cat->input(0), "Neg"), *x1 = op(cat->input(1), "Slice");
    const onnx::NodeProto* x2 = neg ? op(neg->input(0), "Slice") : nullptr;
    if (!x1 || !x2 || x1->input(0) != x || x2->input(0) != x) continue;
    for (const auto* p : {&add, m1, m2, cat, neg, x1, x2}) nodes.push_back(p);
    ++rotary_;
    return x;
  }
  return "";
}

// A comparison of two index vectors along different axes (positions [.., T, 1] against [.., 1, T]):
// a triangle. A comparison with a scalar (RoBERTa's mask >= 0) is not.
bool Importer::grid_comparison(const onnx::NodeProto& p) const {
  if (p.input_size() != 2) return false;
  for (const auto& in : p.input()) {
    const auto* d = complete_shape(in);
    int64_t e = 1;
    for (int64_t x : d ? *d : std::vector<int64_t>{}) e *= x;
    if (!d || e < 2) return false;
  }
  return true;
}

Importer::Mask Importer::mask_kind(const std::string& mask, bool where, bool keep_true) const {
  std::set<std::string> seen;
  auto k = known_.find(mask);
  if (k == known_.end() || k->second.dims.size() < 2) {
    // is_causal=True exports Trilu(ConstantOfShape(...)) into Where(...): a triangle whatever its size.
    // HuggingFace's masks compare the key positions with the query positions (LessOrEqual of two
    // Ranges): causal too. A mask computed from an attention-mask input and nothing of the kind is
    // its padding, taken as none (the input's values are not known; unpadded sequences).
    static const std::set<std::string> compare = {"LessOrEqual", "Less", "GreaterOrEqual", "Greater"};
    // One computed from shapes and constants alone, with neither, keeps every position (HF ViT's).
    std::vector<std::string> stack = {mask};
    bool side = false, stored = false;
    while (!stack.empty()) {
      std::string s = stack.back();
      stack.pop_back();
      if (s.empty() || !seen.insert(s).second) continue;
      side |= side_inputs_.count(s) > 0;
      stored |= initializers_.count(s) && !known_.count(s);
      const onnx::NodeProto* p = producer(s);
      if (!p && !side_inputs_.count(s) && !initializers_.count(s) && !known_.count(s)) stored = true;  // not from a node
      if (!p || shape_op(*p) || per_sample_tensor(s)) continue;  // not back into the activations
      if (p->op_type() == "Trilu" || (compare.count(p->op_type()) && grid_comparison(*p))) return Mask::Causal;
      for (const auto& in : p->input()) stack.push_back(in);
    }
    return side ? Mask::Padding : stored ? Mask::Unknown : Mask::None;
  }
  const auto& d = k->second.dims;
  int64_t tq = d[d.size() - 2], tk = d.back();
  const auto& v = k->second.values;
  if (static_cast<int64_t>(v.size()) < tq * tk) return Mask::Other;
  bool causal = true, none = true;
  for (size_t off = 0; off < v.size(); off += static_cast<size_t>(tq * tk))
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        double x = v[off + static_cast<size_t>(i * tk + j)];
        bool keep = where ? (x != 0) == keep_true : x == 0;
        if (!where && x != 0 && x > -1e4) return Mask::Other;  // not an additive 0 / -inf mask
        causal &= keep == (j <= i + tk - tq);
        none &= keep;
      }
  return none ? Mask::None : causal ? Mask::Causal : Mask::Other;
}

// Back from the Softmax to the scores MatMul(q, k^T) through a scale (Mul, Div), a mask (Add, Where)
// and casts; none when the Softmax is not attention's.
const onnx::NodeProto* Importer::attention_scores(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f) {
  std::string t = s.input(0);
  for (;;) {
    const onnx::NodeProto* p = producer(t);
    if (!p) return nullptr;
    const std::string& op = p->op_type();
    auto ins = dynamic_inputs(*p);
    if (op == "MatMul") return ins.size() == 2 ? p : nullptr;
    if (ins.size() != 1 || (op != "Add" && op != "Where" && op != "Mul" && op != "Div" && op != "Cast" && op != "Identity")) return nullptr;
    if (op == "Add" || op == "Where") {
      bool where = op == "Where";
      const std::string& mask = where ? p->input(0) : (p->input(0) == ins[0] ? p->input(1) : p->input(0));
      if (where && p->input(0) == ins[0]) return nullptr;
      Mask m = mask_kind(mask, where, where && p->input(1) == ins[0]);
      if (m == Mask::Other) partial_attention(*p, "its mask '" + mask + "' is neither causal (a lower triangle) nor empty");
      if (m == Mask::Unknown)
        g_.notes.push_back(path_ + ": node '" + node_name(*p) + "': the values of attention mask '" + mask +
                           "' are not stored in the file or too large to read; taken as causal (a lower triangle)");
      if (m == Mask::Padding && !padding_mask_noted_) {
        padding_mask_noted_ = true;
        g_.notes.push_back(path_ + ": node '" + node_name(*p) + "': attention mask '" + mask +
                           "' is computed from an input whose values are not known at import time; taken as no padding (every token attends to every token)");
      }
      f.causal = m != Mask::None && m != Mask::Padding;
    }
    nodes.push_back(p);
    t = ins[0];
  }
}

// Forward from the Softmax through Dropout and casts to MatMul(probabilities, v).
const onnx::NodeProto* Importer::attention_values(const onnx::NodeProto& s, std::vector<const onnx::NodeProto*>& nodes, Fused& f) {
  std::string t = s.output(0);
  for (;;) {
    auto r = readers(t);
    // Where(IsNaN(p), 0, p): scaled_dot_product_attention's guard for rows masked whole.
    if (r.size() == 2 && !is_graph_output(t)) {
      const onnx::NodeProto* isnan = r[0]->op_type() == "IsNaN" ? r[0] : r[1];
      const onnx::NodeProto* where = isnan == r[0] ? r[1] : r[0];
      auto guarded = readers(isnan->output(0));
      if (isnan->op_type() == "IsNaN" && where->op_type() == "Where" && where->input_size() == 3 && where->input(0) == isnan->output(0) &&
          where->input(2) == t && guarded.size() == 1 && guarded[0] == where && !is_graph_output(isnan->output(0))) {
        nodes.push_back(isnan);
        nodes.push_back(where);
        t = where->output(0);
        continue;
      }
    }
    if (r.size() != 1 || is_graph_output(t))
      partial_attention(s, "its probabilities '" + t + "' are read by " + std::to_string(r.size()) + " nodes" + (is_graph_output(t) ? " and are a graph output" : "") +
                               ", expected one MatMul with v");
    const onnx::NodeProto* p = r[0];
    const std::string& op = p->op_type();
    if (op == "MatMul" && p->input(0) == t && per_sample_tensor(p->input(1))) return p;
    if (op != "Dropout" && op != "Cast" && op != "Identity") partial_attention(*p, "the attention probabilities go to " + op + ", not to a MatMul with v");
    if (op == "Dropout") {
      auto ratio = const_scalar(*p, 1);
      f.dropout = ratio ? *ratio : 0.5;
    }
    nodes.push_back(p);
    t = p->output(0);
  }
}

// Attention as torch.onnx.export writes scaled_dot_product_attention or a module written out
// (GPT-2, ViT): q, k and v from N x T x C projections (three, or one fused N x T x 3C split), split
// into heads by Reshape and Transpose, MatMul(q, k^T), a scale, an optional causal mask, Softmax,
// optional Dropout, MatMul with v, and Transpose and Reshape back to N x T x C. Anchored at the
// Softmax: a Softmax not fed by a MatMul of two activations is not attention; once it is, a pattern
// only partly there is an error naming the node where it stops.
void Importer::find_attention(const onnx::NodeProto& s) {
  Fused f;
  f.op = Op::Attention;
  f.anchor = &s;
  std::vector<const onnx::NodeProto*> nodes = {&s};
  const onnx::NodeProto* qk = attention_scores(s, nodes, f);
  if (!qk) return;
  const onnx::NodeProto* pv = attention_values(s, nodes, f);
  nodes.push_back(qk);
  nodes.push_back(pv);
  std::string q = heads_source(qk->input(0), nodes), k = heads_source(qk->input(1), nodes), v = heads_source(pv->input(1), nodes);
  const auto* qd = complete_shape(q);
  const auto* hd = complete_shape(qk->input(0));
  auto qs = sample(q);
  if (!qs || !hd || !qs->seq)
    partial_attention(*qk, "q '" + qk->input(0) + "' does not come from an N x T x C tensor by Reshape, Transpose, Split or Slice (it starts at '" + q + "'" +
                               (qd ? " " + dims_str(*qd) : " of unknown shape") + ")");
  bool fused_qkv = q == k && k == v;
  if (!fused_qkv && (q == k || k == v || q == v)) partial_attention(*qk, "q, k and v come from " + q + ", " + k + " and " + v + ": one fused projection or three are supported");
  int64_t tokens = qs->h, width = fused_qkv ? qs->c / 3 : qs->c, head_dim = hd->back();
  // Grouped-query attention: k and v of fewer heads (repeated to q's by Expand and Reshape).
  auto kvs = sample(k);
  for (const auto& t : {k, v})
    if (!fused_qkv && !(sample(t) == qs) && !(kvs && sample(t) == kvs && kvs->seq && kvs->h == qs->h && kvs->c < qs->c && qs->c % kvs->c == 0))
      partial_attention(*pv, "k or v '" + t + "' is not an N x T x C tensor like q's " + dims_str(*qd) + " (or one of fewer heads, grouped-query attention)");
  if (head_dim <= 0 || width % head_dim) partial_attention(*qk, "heads of " + std::to_string(head_dim) + " do not divide the width " + std::to_string(width));
  f.heads = width / head_dim;
  auto qb = qd ? batch_axis(q, *qd) : std::nullopt;
  f.mha_layout = qb && qb->first != 0;
  // Back to N x T x C: Transpose and Reshape.
  std::string out = pv->output(0);
  const onnx::NodeProto* last = pv;
  for (;;) {
    if (sample(out) == std::optional<Shape>(Shape{width, tokens, 1, false, true})) break;
    auto r = readers(out);
    static const std::set<std::string> back = {"Transpose", "Reshape", "Flatten", "Identity", "Cast"};
    if (r.size() != 1 || !back.count(r[0]->op_type()) || r[0]->input(0) != out || is_graph_output(out))
      partial_attention(*last, "its output '" + out + "' is not brought back to N x T x C " + dims_str({opt_.batch, tokens, width}) + " by Transpose and Reshape");
    last = r[0];
    nodes.push_back(last);
    out = last->output(0);
  }
  std::set<const onnx::NodeProto*> inside(nodes.begin(), nodes.end());
  for (const auto* p : nodes)
    for (const auto& o : p->output()) {
      if (o.empty() || o == out) continue;
      for (const auto* r : readers(o))
        if (!inside.count(r)) partial_attention(*r, "it reads '" + o + "', a tensor inside the attention between q, k, v and its output");
      if (is_graph_output(o)) partial_attention(*p, "its output '" + o + "' inside the attention is a graph output");
    }
  for (const auto* p : nodes)
    if (absorbed_.count(p)) partial_attention(*p, "the node belongs to two attention patterns");
  absorbed_.insert(nodes.begin(), nodes.end());
  f.inputs = fused_qkv ? std::vector<std::string>{q} : std::vector<std::string>{q, k, v};
  f.output = out;
  fused_[last] = f;
}

}  // namespace dtsim::onnx_import
