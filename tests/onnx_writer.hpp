#pragma once
// ONNX models the tests write themselves with libonnx's protobuf classes (the build machines lack
// python3-onnx and torch): the common part of the test files' writers, which add the layers they need.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/error.hpp"
#include "workload/model_json.hpp"

class OnnxWriter {
 public:
  // One graph input "x" of `input` dims; with `dynamic_batch` its first dim is the symbol "batch", as
  // torch.onnx.export writes it with dynamic_axes.
  OnnxWriter(const std::string& name, const std::vector<int64_t>& input, int32_t elem_type = onnx::TensorProto::FLOAT, int64_t opset = 17,
             bool dynamic_batch = false)
      : path_(temp_path(name)) {
    m_.set_ir_version(8);
    m_.set_producer_name("dtsim test");
    m_.add_opset_import()->set_version(opset);
    g_ = m_.mutable_graph();
    g_->set_name(name);
    auto* t = g_->add_input();
    t->set_name("x");
    t->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    auto* shape = t->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (size_t i = 0; i < input.size(); ++i) {
      if (i == 0 && dynamic_batch) shape->add_dim()->set_dim_param("batch");
      else shape->add_dim()->set_dim_value(input[i]);
    }
  }
  ~OnnxWriter() {
    if (!std::getenv("DTSIM_KEEP_ONNX")) std::filesystem::remove(path_);  // DTSIM_KEEP_ONNX: to look at a written model
  }
  OnnxWriter(const OnnxWriter&) = delete;
  OnnxWriter& operator=(const OnnxWriter&) = delete;

  // A node reading `inputs` ("" for an omitted optional input); its one output is named after it.
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& name) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(name + "_output_0");
    return n;
  }
  std::string op(const std::string& op, const std::vector<std::string>& inputs, const std::string& name) { return node(op, inputs, name)->output(0); }
  // The same with one integer attribute (axis, to) or a list of them (perm, axes).
  std::string op(const std::string& op, const std::vector<std::string>& inputs, const std::string& name, const std::string& attr,
                 const std::vector<int64_t>& ints) {
    onnx::NodeProto* n = node(op, inputs, name);
    auto* a = n->add_attribute();
    a->set_name(attr);
    if (attr == "axis" || attr == "to") {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(ints.at(0));
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : ints) a->add_ints(v);
    }
    return n->output(0);
  }
  // Constant nodes: int64 values (a scalar when `scalar`), float values, a float or bool scalar.
  std::string ints(const std::string& name, const std::vector<int64_t>& values, bool scalar = false) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t.add_int64_data(v);
    return constant(name, std::move(t));
  }
  std::string floats(const std::string& name, const std::vector<float>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) t.add_float_data(v);
    return constant(name, std::move(t));
  }
  std::string scalar(const std::string& name, float v) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(v);
    return constant(name, std::move(t));
  }
  std::string bool_scalar(const std::string& name, bool v) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::BOOL);
    t.add_int32_data(v);
    return constant(name, std::move(t));
  }
  // A float initializer of these dims, without values (dtsim reads shapes, not weights).
  std::string weight(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    return name;
  }
  // Marks a tensor as a float graph output.
  void output(const std::string& tensor) {
    auto* out = g_->add_output();
    out->set_name(tensor);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  const std::string& write() {
    std::ofstream(path_, std::ios::binary) << m_.SerializeAsString();
    return path_;
  }
  const std::string& path() const { return path_; }

  static void ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void string_attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

 protected:
  std::string constant(const std::string& name, onnx::TensorProto t) {
    onnx::NodeProto* n = node("Constant", {}, name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(t);
    return n->output(0);
  }
  onnx::GraphProto* graph() { return g_; }

 private:
  static std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("dtsim_" + name + "_" + std::to_string(::getpid()) + ".onnx")).string();
  }
  std::string path_;
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

// Loading options with this batch size.
inline dtsim::ModelLoadOptions batch(int64_t n) {
  dtsim::ModelLoadOptions o;
  o.batch = n;
  return o;
}

// The import's error line, or "" when the model imports.
inline std::string import_error(const std::string& path, int64_t batch_size) {
  try {
    dtsim::load_model(path, batch(batch_size));
  } catch (const dtsim::InputError& e) {
    return e.what();
  }
  return "";
}
