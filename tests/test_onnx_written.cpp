// ONNX models the test writes itself with libonnx's protobuf classes (tests/data/onnx/gen_onnx.py
// needs python3-onnx, which the build machines lack): graphs dtsim must refuse cleanly.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.hpp"
#include "workload/model_json.hpp"

using dtsim::InputError;
using dtsim::load_model;

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
