#include "compute/impl/mlp/dataset.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/text_file.hpp"
#include "compute/impl/mlp/features.hpp"

namespace dtsim::mlp {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

struct Row {
  const std::map<std::string, size_t>& col;
  const std::vector<std::string>& cells;
  const std::string& where;

  const std::string& str(const std::string& name) const {
    auto it = col.find(name);
    if (it == col.end()) throw InputError(where, "no column '" + name + "'");
    return cells[it->second];
  }
  int64_t integer(const std::string& name) const {
    const std::string& s = str(name);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || errno) throw InputError(where + ", column " + name, "'" + s + "' is not an integer");
    return v;
  }
  double number(const std::string& name) const {
    const std::string& s = str(name);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end || !std::isfinite(v)) throw InputError(where + ", column " + name, "'" + s + "' is not a finite number");
    return v;
  }
};

Pass pass_of(const Row& r) {
  const std::string& s = r.str("pass");
  const std::optional<Pass> pass = parse_pass(s);
  if (!pass) throw InputError(r.where + ", column pass", "unknown pass '" + s + "'");
  return *pass;
}

// The harness's math-mode column names the training precision as PyTorch runs it ("fp32": TF32
// convolutions, FP32 matmuls); "any" marks kernels whose math does not change with it (the FP32
// optimizer). The PyTorch script's layernorm and embedding files name the tensors' dtype instead (a
// layernorm measured on bf16 tensors is a BF16 kernel, keyed layernorm/PASS/bf16, although autocast
// runs layer_norm in FP32); for attention the two readings agree.
MathMode math_of(const Row& r, KernelKind kind) {
  const std::string& s = r.str("math_mode");
  if (s == "any") return MathMode::FP32;
  if (s == "fp32" || s == "bf16" || s == "fp16") {
    if (kind == KernelKind::LayerNorm || kind == KernelKind::Embedding)
      return s == "fp32" ? MathMode::FP32 : s == "bf16" ? MathMode::BF16 : MathMode::FP16;
    return math_mode_for(kind, parse_precision(s));
  }
  throw InputError(r.where + ", column math_mode", "unknown math mode '" + s + "' (fp32, bf16, fp16)");
}

// The kinds the harness measures (validation/README.md), and the transformers' kinds the PyTorch
// script measures (one CSV each: layernorm, attention, embedding); rows of other kinds are skipped.
bool measured_kind(KernelKind kind) {
  switch (kind) {
    case KernelKind::Conv2d:
    case KernelKind::Gemm:
    case KernelKind::BatchNorm:
    case KernelKind::Activation:
    case KernelKind::Pool:
    case KernelKind::Add:
    case KernelKind::Concat:
    case KernelKind::SoftmaxCE:
    case KernelKind::SgdUpdate:
    case KernelKind::LayerNorm:
    case KernelKind::Attention:
    case KernelKind::Embedding: return true;
    default: return false;
  }
}

// The tensors' memory format: a `layout` column where the file has one (nchw or nhwc, as
// validation/pytorch/op_times.py writes it), else the impl: the harness's graph-API convolutions on
// channels_last strides (--conv-layout nhwc) are `cudnn_graph_autotune_nhwc`.
MemoryFormat format_of(const Row& r) {
  if (r.col.count("layout")) {
    const std::string& s = r.str("layout");
    if (s == "nchw" || s == "contiguous") return MemoryFormat::Contiguous;
    if (s == "nhwc" || s == "channels_last") return MemoryFormat::ChannelsLast;
    throw InputError(r.where + ", column layout", "'" + s + "' is neither nchw nor nhwc");
  }
  if (r.col.count("impl") && r.str("impl") == "cudnn_graph_autotune_nhwc") return MemoryFormat::ChannelsLast;
  return MemoryFormat::Contiguous;
}

bool kernel_from_row(const Row& r, KernelDesc& k) {
  const std::optional<KernelKind> kind = parse_kind(r.str("kind"));
  if (!kind || !measured_kind(*kind)) return false;
  k = KernelDesc{*kind, pass_of(r), MathMode::FP32, -1, {}, "", 0, 0};
  k.math = math_of(r, k.kind);
  k.format = format_of(r);
  // Only convolutions and batchnorm have channels_last predictors (predictor_key); another kind's NHWC
  // row would land in its NCHW predictor's data, so it is skipped.
  if (k.format == MemoryFormat::ChannelsLast && k.kind != KernelKind::Conv2d && k.kind != KernelKind::BatchNorm) return false;
  auto& s = k.shape;
  switch (k.kind) {
    case KernelKind::Conv2d: {
      int i = 0;
      for (const char* f : kernel_shape_fields(k.kind)) s[i++] = r.integer(f);
      break;
    }
    case KernelKind::Gemm: {
      // dtsim's row-major view of nn.Linear (see workload/kernels.cpp), from the layer's sizes.
      int64_t b = r.integer("batch"), in = r.integer("in_features"), out = r.integer("out_features");
      if (k.pass == Pass::Fwd) s = {b, out, in, 0, 1};
      else if (k.pass == Pass::BwdData) s = {b, in, out, 0, 0};
      else s = {out, in, b, 1, 0};
      break;
    }
    case KernelKind::BatchNorm:
      s = {r.integer("N"), r.integer("C"), r.integer("H"), r.integer("W")};
      break;
    case KernelKind::Activation:
      s = {r.integer("elements")};
      k.variant = intern_variant(r.str("op"));
      break;
    case KernelKind::Pool: {
      int i = 0;
      for (const char* f : kernel_shape_fields(k.kind)) s[i++] = r.integer(f);
      k.variant = intern_variant(r.str("mode"));
      break;
    }
    case KernelKind::Add:
      s = {r.integer("elements"), 2};
      break;
    case KernelKind::Concat:  // one input's slice copy (op "slice", the harness's concat_slice)
      s = {r.integer("elements")};
      k.variant = intern_variant(r.str("op"));
      break;
    case KernelKind::SoftmaxCE:
      s = {r.integer("N"), r.integer("classes")};
      break;
    case KernelKind::SgdUpdate:
      s = {r.integer("parameters")};
      break;
    case KernelKind::LayerNorm:  // rows features
    case KernelKind::Attention:  // N heads T head_dim causal (the backend column is informational)
    case KernelKind::Embedding: {  // rows dim num_embeddings
      int i = 0;
      for (const char* f : kernel_shape_fields(k.kind)) s[i++] = r.integer(f);
      // attention with dropout inside (a dropout_p column above 0) is a variant with its own predictor
      if (k.kind == KernelKind::Attention && r.col.count("dropout_p")) {
        const double p = r.number("dropout_p");
        if (!(p >= 0 && p < 1)) throw InputError(r.where + ", column dropout_p", "must be in [0, 1), got " + r.str("dropout_p"));
        if (p > 0) k.variant = "dropout";
      }
      break;
    }
    default:
      return false;
  }
  for (size_t i = 0; i < kernel_shape_fields(k.kind).size(); ++i) {
    const char* field = kernel_shape_fields(k.kind)[i];
    if (k.kind == KernelKind::Attention && i == 4) {  // causal: a flag
      if (s[i] != 0 && s[i] != 1) throw InputError(r.where + ", column " + field, "must be 0 or 1, got " + std::to_string(s[i]));
      continue;
    }
    if (s[i] < 0 || (s[i] == 0 && k.kind != KernelKind::Conv2d && k.kind != KernelKind::Pool && k.kind != KernelKind::Gemm))
      throw InputError(r.where, std::string("shape field ") + field + " must be positive");
  }
  set_cost(k);
  return true;
}

}  // namespace

std::vector<Sample> read_kernel_csv(const std::string& path) {
  std::istringstream in(read_text_file(path));
  std::vector<Sample> out;
  std::map<std::string, size_t> col;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto cells = split_csv_line(line);
    if (col.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) col[cells[i]] = i;
      for (const char* need : {"kind", "pass", "math_mode", "time_median_s"})
        if (!col.count(need)) throw InputError(path + ":1", std::string("header has no column '") + need + "'");
      continue;
    }
    std::string where = path + ":" + std::to_string(lineno);
    if (cells.size() != col.size()) throw InputError(where, "has " + std::to_string(cells.size()) + " cells, the header " + std::to_string(col.size()));
    Row r{col, cells, where};
    Sample s;
    if (!kernel_from_row(r, s.kernel)) continue;
    s.time_s = r.number("time_median_s");
    if (!(s.time_s > 0)) throw InputError(where + ", column time_median_s", "must be positive");
    if (col.count("split")) {
      const std::string& part = r.str("split");
      if (part != "train" && part != "heldout") throw InputError(where + ", column split", "'" + part + "' is neither train nor heldout");
      s.beyond = part == "heldout";
    }
    if (col.count("time_graph_s") && r.str("time_graph_s") != "nan") s.graph_time_s = r.number("time_graph_s");
    const auto& k = s.kernel;
    s.pytorch_native_depthwise = col.count("algo") && r.str("algo") == "torch" && pytorch_runs_native_depthwise(k);
    // PyTorch's own conv_depthwise2d kernels, not cuDNN's: their own predictors (compute/kernel_key.cpp).
    if (s.pytorch_native_depthwise) s.kernel.variant = kNativeDepthwise;
    // PyTorch's own bf16 batchnorm timed alone (op_times_to_kernels.py --layout nchw): impl torch_native.
    if (col.count("impl") && r.str("impl") == "torch_native" && pytorch_runs_native_batchnorm(k)) s.kernel.variant = kNativeBatchnorm;
    s.key = predictor_key(s.kernel);
    if (!s.key.empty()) out.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, std::vector<Sample>> read_kernel_dataset(const std::string& dir, std::vector<std::string>* files) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".csv" && e.path().filename() != "skipped.csv") paths.push_back(e.path().string());
    else if (e.path().extension() == ".gz" && e.path().stem().extension() == ".csv" && e.path().stem() != "skipped.csv")
      paths.push_back((e.path().parent_path() / e.path().stem()).string());  // named as NAME.csv: read_kernel_csv finds the .gz
  if (ec) throw InputError(dir, "cannot read folder");
  std::sort(paths.begin(), paths.end());
  std::map<std::string, std::vector<Sample>> by_key;
  for (const auto& p : paths)
    for (auto& s : read_kernel_csv(p)) by_key[s.key].push_back(std::move(s));
  if (files) *files = paths;
  return by_key;
}

std::string file_fnv1a64(const std::string& path) {
  // Over the decompressed text: a data file keeps its hash when it is stored gzip-compressed.
  const std::string text = read_text_file(path);
  uint64_t h = 1469598103934665603ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

bool is_heldout(const KernelDesc& k) { return shape_hash(k) % 5 == 0; }

}  // namespace dtsim::mlp
