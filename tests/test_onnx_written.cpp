// ONNX models the test writes itself with libonnx's protobuf classes (tests/data/onnx/gen_onnx.py
// needs python3-onnx, which the build machines lack): graphs dtsim must refuse cleanly, and shapes
// computed at run time by shape subgraphs (Shape -> Gather -> Concat -> Reshape, as torch.onnx.export
// writes x.view(x.size(0), ...)), which the importer evaluates.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_writer.hpp"

#include "study_cli.hpp"

#include "core/error.hpp"
#include "workload/model_json.hpp"

using dtsim::Graph;
using dtsim::InputError;
using dtsim::Layer;
using dtsim::load_model;
using dtsim::Op;
using dtsim::Shape;

namespace {

// A small model with an If node (what torch.jit.script exports for Python control flow): x -> If(cond)
// whose branches are Relu(x) and Identity(x), both reading x from the outer graph.
std::string write_if_model(const std::string& path) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("dtsim test");
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("if_model");
  auto tensor_info = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  tensor_info(g->add_input(), "x", {1, 3, 8, 8});
  onnx::TensorProto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  auto branch = [&](onnx::AttributeProto* a, const std::string& name, const std::string& op) {
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* b = a->mutable_g();
    b->set_name(name);
    onnx::NodeProto* n = b->add_node();
    n->set_op_type(op);
    n->set_name("/" + name + "/" + op);
    n->add_input("x");  // the outer graph's input
    n->add_output(name + "_y");
    tensor_info(b->add_output(), name + "_y", {1, 3, 8, 8});
  };
  onnx::NodeProto* node = g->add_node();
  node->set_op_type("If");
  node->set_name("/gate/If");
  node->add_input("cond");
  node->add_output("y");
  branch(node->add_attribute(), "then_branch", "Relu");
  branch(node->add_attribute(), "else_branch", "Identity");
  tensor_info(g->add_output(), "y", {1, 3, 8, 8});
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

}  // namespace

TEST_CASE("onnx: a control-flow operator (If) is refused in one line naming it and its node") {
  const std::string path = (std::filesystem::temp_directory_path() / ("dtsim_if_" + std::to_string(::getpid()) + ".onnx")).string();
  write_if_model(path);
  std::string e;
  try {
    load_model(path);
  } catch (const InputError& err) {
    e = err.what();
  }
  std::filesystem::remove(path);
  INFO(e);
  CHECK(e.find(path + ": node '/gate/If' (If): control-flow operator If is not supported") != std::string::npos);
  CHECK(e.find("topolog") == std::string::npos);  // the checker's reading of the branches' outer names
  CHECK(e.find('\n') == std::string::npos);
}

namespace {

// Writes a small graph node by node, as torch.onnx.export (TorchScript, opset 17) writes one: an image
// input x, Constant nodes for literals, weights as initializers without values (dtsim reads only their
// dimensions). Each node's output is named after the node.
class Writer : public OnnxWriter {
 public:
  Writer(const std::string& name, std::vector<int64_t> input) : OnnxWriter(name, input) {}

  // x.size(i) as torch traces it: a Gather of the Shape; Unsqueeze makes it a list element.
  std::string size(const std::string& shape, int64_t i, const std::string& name) {
    return op("Gather", {shape, ints(name + "/Constant", {i}, true)}, name + "/Gather", "axis", {0});
  }
  std::string unsqueeze(const std::string& x, const std::string& name) { return op("Unsqueeze", {x, ints(name + "/Constant", {0})}, name + "/Unsqueeze"); }

  std::string conv(const std::string& x, const std::string& name, int64_t cin, int64_t cout, int64_t k) {
    onnx::NodeProto* n = node("Conv", {x, weight(name + ".weight", {cout, cin, k, k})}, "/" + name + "/Conv");
    ints_attr(n, "kernel_shape", {k, k});
    ints_attr(n, "pads", {k / 2, k / 2, k / 2, k / 2});
    return n->output(0);
  }
  // Global average pooling, flatten and a linear layer to 10 classes: the graph's output.
  void head(const std::string& x, int64_t c) {
    std::string y = op("Flatten", {op("GlobalAveragePool", {x}, "/avgpool/GlobalAveragePool")}, "/Flatten", "axis", {1});
    onnx::NodeProto* fc = node("Gemm", {y, weight("fc.weight", {10, c}), weight("fc.bias", {10})}, "/fc/Gemm");
    auto* a = fc->add_attribute();
    a->set_name("transB");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
    output(fc->output(0));
  }
};

const Layer* find_layer(const Graph& g, const std::string& source_op) {
  for (const auto& l : g.layers)
    if (l.source_op == source_op) return &l;
  return nullptr;
}

const Layer* find_layer(const Graph& g, Op op, int k = 0) {
  for (const auto& l : g.layers)
    if (l.op == op && k-- == 0) return &l;
  return nullptr;
}

std::string import_error(const std::string& path) { return ::import_error(path, 4); }

// ShuffleNet V2's channel_shuffle(x, 2) as torch.onnx.export writes it: batchsize, num_channels,
// height, width = x.size(); channels_per_group = num_channels // groups (Div, then the Casts of
// torch's truncating division); x.view(batchsize, groups, channels_per_group, height, width);
// transpose(1, 2); x.view(batchsize, -1, height, width). `divisor` is groups' Constant. With
// `floor`, the division is torch.div(num_channels, groups, rounding_mode="floor"), which torch exports
// as a truncating Div corrected by Less, Xor, Equal, Not, And and Where for negative quotients.
std::string channel_shuffle(Writer& w, const std::string& x, const std::string& m = "/shuffle", int64_t divisor = 2, bool floor = false) {
  std::string s = w.op("Shape", {x}, m + "/Shape");
  std::string n = w.size(s, 0, m + "/n"), c = w.size(s, 1, m + "/c"), h = w.size(s, 2, m + "/h"), wd = w.size(s, 3, m + "/w");
  std::string groups = w.ints(m + "/groups", {divisor}, true);
  std::string cpg = w.op("Div", {c, groups}, m + "/Div");
  if (floor) {
    std::string zero = w.ints(m + "/zero", {0}, true);
    std::string negative = w.op("Xor", {w.op("Less", {c, zero}, m + "/Less"), w.op("Less", {groups, zero}, m + "/Less_1")}, m + "/Xor");
    std::string mod = w.op("Sub", {c, w.op("Mul", {cpg, groups}, m + "/Mul")}, m + "/Sub");
    std::string fixup = w.op("And", {negative, w.op("Not", {w.op("Equal", {mod, zero}, m + "/Equal")}, m + "/Not")}, m + "/And");
    cpg = w.op("Where", {fixup, w.op("Sub", {cpg, w.ints(m + "/one", {1}, true)}, m + "/Sub_1"), cpg}, m + "/Where");
  } else {
    cpg = w.op("Cast", {w.op("Cast", {cpg}, m + "/Cast", "to", {onnx::TensorProto::INT64})}, m + "/Cast_1", "to", {onnx::TensorProto::INT64});
  }
  std::string five = w.op("Concat", {w.unsqueeze(n, m + "/u0"), w.ints(m + "/two", {2}), w.unsqueeze(cpg, m + "/u1"), w.unsqueeze(h, m + "/u2"), w.unsqueeze(wd, m + "/u3")},
                          m + "/Concat", "axis", {0});
  std::string y = w.op("Reshape", {x, five}, m + "/Reshape");
  y = w.op("Transpose", {y}, m + "/Transpose", "perm", {0, 2, 1, 3, 4});
  std::string four = w.op("Concat", {w.unsqueeze(n, m + "/u4"), w.ints(m + "/minus_one", {-1}), w.unsqueeze(h, m + "/u5"), w.unsqueeze(wd, m + "/u6")},
                          m + "/Concat_1", "axis", {0});
  return w.op("Reshape", {y, four}, m + "/Reshape_1");
}

}  // namespace

TEST_CASE("onnx: a channel shuffle whose view shapes come from x.size() and a division imports with its shapes and parameters") {
  Writer w("channel_shuffle", {1, 3, 8, 8});
  std::string y = w.conv("x", "conv1", 3, 8, 3);
  y = w.conv(channel_shuffle(w, y), "conv2", 8, 16, 1);
  w.head(y, 16);
  Graph g = load_model(w.write(), batch(4));
  CHECK(g.params() == 8 * 3 * 9 + 16 * 8 + 10 * 16 + 10);
  CHECK(g.input == (Shape{3, 8, 8, false}));
  CHECK(g.notes.empty());
  const Layer* t = find_layer(g, "Transpose");
  REQUIRE(t != nullptr);
  CHECK(t->op == Op::Eltwise);
  CHECK(t->out == (Shape{8, 8, 8, false}));  // [N, 4, 2, 8, 8] per sample, as dtsim folds rank 5
  CHECK_FALSE(t->roofline_only);
  const Layer* conv2 = find_layer(g, Op::Conv2d, 1);
  REQUIRE(conv2 != nullptr);
  CHECK(conv2->in[0] == (Shape{8, 8, 8, false}));
  CHECK(conv2->out == (Shape{16, 8, 8, false}));
  CHECK(find_layer(g, Op::View) == nullptr);  // both views keep the per-sample shape: no layer
  CHECK(g.layers.size() == 7);                 // conv1, transpose, conv2, pool, flatten, fc, loss

  // 16 shuffles in a row (ShuffleNet V2 x1.0 has 16), each reading the shape of the previous one's
  // output, which ONNX infers only once the previous shuffle's values are given to it: each inference
  // pass gets one shuffle further.
  Writer chain("shuffle_chain", {1, 3, 8, 8});
  y = chain.conv("x", "conv1", 3, 8, 3);
  for (int u = 0; u < 16; ++u) y = channel_shuffle(chain, y, "/stage" + std::to_string(u));
  chain.head(y, 8);
  Graph c = load_model(chain.write(), batch(4));
  int transposes = 0;
  for (const auto& l : c.layers) transposes += l.source_op == "Transpose" && l.out == (Shape{8, 8, 8, false});
  CHECK(transposes == 16);
  CHECK(c.params() == 8 * 3 * 9 + 10 * 8 + 10);

  Writer floor("shuffle_floor_div", {1, 3, 8, 8});
  floor.head(floor.conv(channel_shuffle(floor, floor.conv("x", "conv1", 3, 8, 3), "/shuffle", 2, true), "conv2", 8, 16, 1), 16);
  Graph f = load_model(floor.write(), batch(4));
  REQUIRE(find_layer(f, "Transpose") != nullptr);
  CHECK(find_layer(f, "Transpose")->out == (Shape{8, 8, 8, false}));
  CHECK(f.params() == g.params());
  CHECK(f.layers.size() == g.layers.size());
}

TEST_CASE("onnx: Resize with sizes from Shape, Slice and Concat, or with constant scales, gives the upsampled H and W") {
  for (bool sizes : {true, false}) {
    INFO((sizes ? "sizes" : "scales"));
    Writer w(sizes ? "resize_sizes" : "resize_scales", {1, 3, 8, 8});
    std::string y = w.conv("x", "conv1", 3, 8, 3);
    onnx::NodeProto* r;
    if (sizes) {  // F.interpolate(x, size=(16, 16)): x.shape[:2] + the size
      std::string nc = w.op("Slice", {w.op("Shape", {y}, "/up/Shape"), w.ints("/up/start", {0}), w.ints("/up/end", {2}), w.ints("/up/axes", {0})}, "/up/Slice");
      std::string hw = w.op("Concat", {nc, w.ints("/up/size", {16, 16})}, "/up/Concat", "axis", {0});
      r = w.node("Resize", {y, "", "", hw}, "/up/Resize");
    } else {  // nn.Upsample(scale_factor=2, mode="bilinear"): an empty roi and constant scales
      r = w.node("Resize", {y, w.floats("/up/roi", {}), w.floats("/up/scales", {1, 1, 2, 2})}, "/up/Resize");
      Writer::string_attr(r, "mode", "linear");
    }
    y = w.conv(r->output(0), "conv2", 8, 16, 3);
    w.head(y, 16);
    Graph g = load_model(w.write(), batch(4));
    const Layer* up = find_layer(g, "Resize");
    REQUIRE(up != nullptr);
    CHECK(up->op == Op::Eltwise);
    CHECK_FALSE(up->roofline_only);
    CHECK(up->in[0] == (Shape{8, 8, 8, false}));
    CHECK(up->out == (Shape{8, 16, 16, false}));
    CHECK(up->extra_params == 0);  // scales are not parameters
    CHECK(find_layer(g, Op::Conv2d, 1)->out == (Shape{16, 16, 16, false}));
    CHECK(g.params() == 8 * 3 * 9 + 16 * 8 * 9 + 10 * 16 + 10);
  }
}

TEST_CASE("onnx: Expand to a computed shape (expand_as, and expand with -1 sizes) imports with the expanded shape") {
  Writer w("expand", {1, 3, 8, 8});
  std::string y = w.conv("x", "conv1", 3, 8, 3);
  std::string g = w.op("GlobalAveragePool", {y}, "/gate/GlobalAveragePool");
  // g.expand_as(y): Expand to Shape(y).
  std::string a = w.op("Expand", {g, w.op("Shape", {y}, "/gate/Shape")}, "/gate/Expand");
  // g.expand(-1, -1, h, w) as torch's symbolic writes it: -1 becomes 1 through ConstantOfShape, Mul,
  // Equal and Where, and Expand broadcasts [N, 8, 1, 1] with [1, 1, 8, 8].
  std::string s = w.op("Shape", {y}, "/gate/Shape_1");
  std::string size = w.op("Concat", {w.ints("/gate/keep", {-1, -1}), w.unsqueeze(w.size(s, 2, "/gate/h"), "/gate/u0"), w.unsqueeze(w.size(s, 3, "/gate/w"), "/gate/u1")},
                          "/gate/Concat", "axis", {0});
  onnx::NodeProto* ones = w.node("ConstantOfShape", {w.op("Shape", {size}, "/gate/Shape_2")}, "/gate/ConstantOfShape");
  auto* one = ones->add_attribute();
  one->set_name("value");
  one->set_type(onnx::AttributeProto::TENSOR);
  one->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  one->mutable_t()->add_dims(1);
  one->mutable_t()->add_int64_data(1);
  std::string minus = w.op("Mul", {ones->output(0), w.ints("/gate/minus_one", {-1}, true)}, "/gate/Mul");
  std::string fixed = w.op("Where", {w.op("Equal", {size, minus}, "/gate/Equal"), ones->output(0), size}, "/gate/Where");
  std::string b = w.op("Expand", {g, fixed}, "/gate/Expand_1");
  y = w.op("Add", {w.op("Add", {y, a}, "/Add"), b}, "/Add_1");
  w.head(w.conv(y, "conv2", 8, 16, 1), 16);
  Graph m = load_model(w.write(), batch(4));
  int expands = 0;
  for (const auto& l : m.layers)
    if (l.source_op == "Expand") {
      ++expands;
      CHECK(l.op == Op::Eltwise);
      CHECK(l.in[0] == (Shape{8, 1, 1, false}));
      CHECK(l.out == (Shape{8, 8, 8, false}));
    }
  CHECK(expands == 2);
  CHECK(find_layer(m, Op::Add, 1) != nullptr);
  CHECK(m.params() == 8 * 3 * 9 + 16 * 8 + 10 * 16 + 10);
}

TEST_CASE("onnx: a shape input that cannot be known at import time is refused in one line naming the node and the cause") {
  {  // x.view(n, int(x.amax())): the shape depends on the activations' values.
    Writer w("shape_from_values", {1, 3, 8, 8});
    std::string y = w.conv("x", "conv1", 3, 8, 3);
    onnx::NodeProto* amax = w.node("ReduceMax", {y}, "/amax/ReduceMax");
    auto* k = amax->add_attribute();
    k->set_name("keepdims");
    k->set_type(onnx::AttributeProto::INT);
    k->set_i(0);
    std::string c = w.op("Cast", {amax->output(0)}, "/Cast", "to", {onnx::TensorProto::INT64});
    std::string s = w.op("Shape", {y}, "/Shape");
    std::string shape = w.op("Concat", {w.unsqueeze(w.size(s, 0, "/n"), "/u0"), w.unsqueeze(c, "/u1")}, "/Concat", "axis", {0});
    y = w.op("Reshape", {y, shape}, "/view/Reshape");
    w.head(y, 512);
    const std::string& path = w.write();
    std::string e = import_error(path);
    INFO(e);
    CHECK(e.find(path + ": node '/view/Reshape' (Reshape): its shape input '/Concat_output_0' is not known at import time") != std::string::npos);
    CHECK(e.find("computed from activations by node '/amax/ReduceMax' (ReduceMax)") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
    auto r = study_test::run_dtsim("models --model " + path);  // the command: exit 2, the one line on stderr
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
    CHECK(r.err.find("node '/view/Reshape' (Reshape): its shape input") != std::string::npos);
  }
  {  // A channel shuffle whose division is by zero: no value to give.
    Writer w("shape_div_zero", {1, 3, 8, 8});
    std::string y = w.conv(channel_shuffle(w, w.conv("x", "conv1", 3, 8, 3), "/shuffle", 0), "conv2", 8, 16, 1);
    w.head(y, 16);
    const std::string& path = w.write();
    std::string e = import_error(path);
    INFO(e);
    CHECK(e.find(path + ": node '/shuffle/Reshape' (Reshape): its shape input '/shuffle/Concat_output_0' is not known at import time") != std::string::npos);
    CHECK(e.find("node '/shuffle/Div' (Div): divides by zero") != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  {  // x.view(x.size(0), x.size(7)) on a 4-D tensor: an index past the shape's end (libonnx 1.12's own
     // propagation of such a Gather read out of bounds).
    Writer w("shape_index_past_end", {1, 3, 8, 8});
    std::string y = w.conv("x", "conv1", 3, 8, 3);
    std::string s = w.op("Shape", {y}, "/Shape");
    std::string shape = w.op("Concat", {w.unsqueeze(w.size(s, 0, "/n"), "/u0"), w.unsqueeze(w.size(s, 7, "/f"), "/u1")}, "/Concat", "axis", {0});
    w.head(w.op("Reshape", {y, shape}, "/view/Reshape"), 512);
    const std::string& path = w.write();
    std::string e = import_error(path);
    INFO(e);
    CHECK(e.find(path + ": node '/view/Reshape' (Reshape): its shape input '/Concat_output_0' is not known at import time: node '/f/Gather' (Gather): gathers index 7 of a dimension of 4") !=
          std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
}
