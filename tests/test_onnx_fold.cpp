// Constant evaluation of shape subgraphs (workload/onnx/onnx_fold.*), operator by operator, against
// the ONNX specification's rules; test_onnx_written.cpp tests it through whole imported graphs.
#include <catch2/catch.hpp>

#include <map>

#include "workload/onnx/onnx_fold.hpp"

using dtsim::onnx_fold::Known;
using T = onnx::TensorProto;

namespace {

Known i64(std::vector<double> v, std::vector<int64_t> dims) { return Known{std::move(dims), std::move(v), T::INT64}; }
Known i64(std::vector<double> v) { return i64(v, {static_cast<int64_t>(v.size())}); }
Known scalar(double v, int32_t type = T::INT64) { return Known{{}, {v}, type}; }

// Evaluates a node of `op` over named values (inputs "a", "b", "c", ... in order) and the shapes of
// tensors whose values are not known.
struct Eval {
  std::map<std::string, Known> values;
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t opset = 17;

  dtsim::onnx_fold::Result operator()(const std::string& op, const std::vector<std::string>& inputs,
                                      const std::map<std::string, int64_t>& int_attrs = {}) const {
    onnx::NodeProto n;
    n.set_op_type(op);
    for (const auto& i : inputs) n.add_input(i);
    n.add_output("y");
    for (const auto& [name, v] : int_attrs) {
      auto* a = n.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    dtsim::onnx_fold::Lookup lookup{[this](const std::string& t) -> const Known* {
                                      auto it = values.find(t);
                                      return it == values.end() ? nullptr : &it->second;
                                    },
                                    [this](const std::string& t) -> const std::vector<int64_t>* {
                                      auto it = shapes.find(t);
                                      return it == shapes.end() ? nullptr : &it->second;
                                    },
                                    opset};
    return dtsim::onnx_fold::evaluate(n, lookup);
  }
  // The value, failing the test if there is none.
  Known value(const std::string& op, const std::vector<std::string>& inputs, const std::map<std::string, int64_t>& attrs = {}) const {
    auto r = (*this)(op, inputs, attrs);
    INFO(op << ": " << r.why_not);
    REQUIRE(r.outputs.size() == 1);
    return r.outputs[0];
  }
};

}  // namespace

TEST_CASE("onnx_fold: Shape, Gather, Unsqueeze and Concat give a view's target shape") {
  Eval e;
  e.shapes["x"] = {32, 116, 28, 28};
  Known s = e.value("Shape", {"x"});
  CHECK(s.dims == std::vector<int64_t>{4});
  CHECK(s.values == std::vector<double>{32, 116, 28, 28});
  e.values["s"] = s;
  e.values["i"] = scalar(-1);
  Known w = e.value("Gather", {"s", "i"}, {{"axis", 0}});
  CHECK(w.dims.empty());  // a scalar index gives a scalar
  CHECK(w.values == std::vector<double>{28});
  e.values["w"] = w;
  e.values["axes"] = i64({0});
  Known u = e.value("Unsqueeze", {"w", "axes"});
  CHECK(u.dims == std::vector<int64_t>{1});
  e.values["u"] = u;
  e.values["c"] = i64({2, 58});
  CHECK(e.value("Concat", {"u", "c", "u"}, {{"axis", 0}}).values == std::vector<double>{28, 2, 58, 28});
  CHECK(e.value("Size", {"x"}).values == std::vector<double>{32.0 * 116 * 28 * 28});
  // A shape not (yet) known: no value and no reason (waiting), as for an unknown input value.
  auto r = e("Shape", {"unknown"});
  CHECK(r.outputs.empty());
  CHECK(r.why_not.empty());
}

TEST_CASE("onnx_fold: integer division truncates, and division by zero and overflow have no value") {
  Eval e;
  e.values["a"] = i64({7, -7, 116});
  e.values["b"] = scalar(2);
  CHECK(e.value("Div", {"a", "b"}).values == std::vector<double>{3, -3, 58});
  e.values["f"] = Known{{2}, {7, -7}, T::FLOAT};
  e.values["g"] = scalar(2, T::FLOAT);
  CHECK(e.value("Div", {"f", "g"}).values == std::vector<double>{3.5, -3.5});
  e.values["zero"] = scalar(0);
  CHECK(e("Div", {"a", "zero"}).why_not == "divides by zero");
  e.values["big"] = scalar(1e18);
  CHECK(e("Mul", {"big", "big"}).why_not == "overflows int64");
  CHECK(e.value("Mul", {"a", "b"}).values == std::vector<double>{14, -14, 232});
  CHECK(e.value("Sub", {"a", "b"}).values == std::vector<double>{5, -9, 114});
  CHECK(e.value("Max", {"a", "b"}).values == std::vector<double>{7, 2, 116});
}

TEST_CASE("onnx_fold: Cast, comparisons, Where and ConstantOfShape follow ONNX's rules") {
  Eval e;
  e.values["f"] = Known{{3}, {2.7, -2.7, 0}, T::FLOAT};
  Known c = e.value("Cast", {"f"}, {{"to", T::INT64}});
  CHECK(c.type == T::INT64);
  CHECK(c.values == std::vector<double>{2, -2, 0});  // toward zero
  CHECK(e.value("Cast", {"f"}, {{"to", T::BOOL}}).values == std::vector<double>{1, 1, 0});
  CHECK_FALSE(e("Cast", {"f"}, {{"to", T::STRING}}).why_not.empty());

  // torch's expand(-1, -1, h, w): Where(Equal(size, -1), 1, size).
  e.values["size"] = i64({-1, -1, 8, 8});
  e.values["minus"] = scalar(-1);
  e.values["one"] = scalar(1);
  Known eq = e.value("Equal", {"size", "minus"});
  CHECK(eq.type == T::BOOL);
  CHECK(eq.values == std::vector<double>{1, 1, 0, 0});
  e.values["eq"] = eq;
  CHECK(e.value("Where", {"eq", "one", "size"}).values == std::vector<double>{1, 1, 8, 8});

  e.values["shape"] = i64({2, 3});
  Known zeros = e.value("ConstantOfShape", {"shape"});  // no value attribute: float zeros
  CHECK(zeros.dims == std::vector<int64_t>{2, 3});
  CHECK(zeros.type == T::FLOAT);
  CHECK(zeros.values == std::vector<double>(6, 0.0));
  e.values["huge"] = i64({100000, 100000});
  CHECK(e("ConstantOfShape", {"huge"}).why_not.find("too large to evaluate") != std::string::npos);
}

TEST_CASE("onnx_fold: Slice with negative indices and steps, Squeeze, Reshape, Range, Expand and Tile") {
  Eval e;
  e.values["s"] = i64({32, 116, 28, 28});
  e.values["start"] = i64({-2});
  e.values["end"] = i64({9223372036854775807.0});  // INT64_MAX: to the end
  CHECK(e.value("Slice", {"s", "start", "end"}).values == std::vector<double>{28, 28});
  e.values["rstart"] = i64({-1});
  e.values["rend"] = i64({-9223372036854775807.0});
  e.values["axes"] = i64({0});
  e.values["steps"] = i64({-2});
  CHECK(e.value("Slice", {"s", "rstart", "rend", "axes", "steps"}).values == std::vector<double>{28, 116});
  e.values["zero_step"] = i64({0});
  CHECK(e("Slice", {"s", "start", "end", "axes", "zero_step"}).why_not == "has a step of 0");

  e.values["m"] = i64({1, 2, 3, 4, 5, 6}, {2, 1, 3});
  Known sq = e.value("Squeeze", {"m"});  // no axes: every dimension of 1
  CHECK(sq.dims == std::vector<int64_t>{2, 3});
  e.values["to"] = i64({0, -1});
  CHECK(e.value("Reshape", {"m", "to"}).dims == std::vector<int64_t>{2, 3});  // 0 copies the input's dimension
  e.values["idx"] = i64({2, 0});
  auto waits = e("Gather", {"sq", "idx"}, {{"axis", 1}});  // "sq" has no value yet
  CHECK(waits.outputs.empty());
  CHECK(waits.why_not.empty());
  e.values["sq"] = sq;
  Known cols = e.value("Gather", {"sq", "idx"}, {{"axis", 1}});
  CHECK(cols.dims == std::vector<int64_t>{2, 2});
  CHECK(cols.values == std::vector<double>{3, 1, 6, 4});

  e.values["r0"] = scalar(0);
  e.values["r1"] = scalar(10);
  e.values["r2"] = scalar(3);
  CHECK(e.value("Range", {"r0", "r1", "r2"}).values == std::vector<double>{0, 3, 6, 9});
  e.values["col"] = i64({1, 2}, {2, 1});
  e.values["target"] = i64({1, 3});
  Known x = e.value("Expand", {"col", "target"});  // broadcasts both ways: [2, 1] with [1, 3]
  CHECK(x.dims == std::vector<int64_t>{2, 3});
  CHECK(x.values == std::vector<double>{1, 1, 1, 2, 2, 2});
  e.values["reps"] = i64({1, 2});
  CHECK(e.value("Tile", {"col", "reps"}).values == std::vector<double>{1, 1, 2, 2});
  CHECK(e("NonZero", {"col"}).why_not == "operator 'NonZero' is not evaluated at import time");
}

TEST_CASE("onnx_fold: initializers are read from typed fields and raw data, and written back exactly") {
  T t;
  t.set_data_type(T::INT64);
  t.add_dims(2);
  int64_t raw[2] = {-1, INT64_MAX};
  t.set_raw_data(std::string(reinterpret_cast<const char*>(raw), sizeof raw));
  auto k = dtsim::onnx_fold::read_tensor(t);
  REQUIRE(k);
  CHECK(k->dims == std::vector<int64_t>{2});
  T back = dtsim::onnx_fold::write_tensor(*k, "t");
  REQUIRE(back.int64_data_size() == 2);
  CHECK(back.int64_data(0) == -1);
  CHECK(back.int64_data(1) == INT64_MAX);
  T big;
  big.set_data_type(T::FLOAT);
  big.add_dims(64);
  big.add_dims(64);
  big.add_dims(3);
  CHECK_FALSE(dtsim::onnx_fold::read_tensor(big));  // weights: more than 4096 elements
}

TEST_CASE("onnx_fold: Transpose of a small tensor, by perm or reversing the axes (F.pad's pads reordered)") {
  Eval e;
  // torch.nn.functional.pad(x, (0, 1, 0, 2)) pads as [[0, 1], [0, 2], ...] reversed; ONNX wants the
  // begins, then the ends: a Reshape to pairs, a Transpose, a Reshape back.
  e.values["a"] = i64({0, 1, 0, 2, 0, 0}, {3, 2});
  Known t = e.value("Transpose", {"a"});  // no perm: the axes reversed
  CHECK(t.dims == std::vector<int64_t>{2, 3});
  CHECK(t.values == std::vector<double>{0, 0, 0, 1, 2, 0});
  // A rank-3 perm.
  onnx::NodeProto n;
  n.set_op_type("Transpose");
  n.add_input("b");
  n.add_output("y");
  auto* perm = n.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {2, 0, 1}) perm->add_ints(p);
  const Known b = i64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  dtsim::onnx_fold::Lookup lookup{[&](const std::string& x) -> const Known* { return x == "b" ? &b : nullptr; },
                                  [](const std::string&) -> const std::vector<int64_t>* { return nullptr; }, 17};
  auto r = dtsim::onnx_fold::evaluate(n, lookup);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].dims == std::vector<int64_t>{2, 2, 3});
  // y[k][i][j] = b[i][j][k]
  CHECK(r.outputs[0].values == std::vector<double>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
  // Not a permutation: no value, and why.
  perm->set_ints(1, 2);
  auto bad = dtsim::onnx_fold::evaluate(n, lookup);
  CHECK(bad.outputs.empty());
  CHECK(bad.why_not.find("permutation") != std::string::npos);
}
