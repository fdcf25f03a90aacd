// Constant evaluation of shape subgraphs (workload/onnx/onnx_fold.hpp). Each operator is a function
// from the node's known inputs to its one output, following the ONNX operator specification; the
// table at the end lists them.
#include "workload/onnx/onnx_fold.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace dtsim::onnx_fold {

namespace {

using T = onnx::TensorProto;

// Thrown inside evaluate(): why the node has no value ("" while an input's value is not known yet).
struct NoValue {
  std::string why;
};
[[noreturn]] void refuse(const std::string& why) { throw NoValue{why}; }

bool is_integer(int32_t t) { return t == T::INT64 || t == T::INT32 || t == T::INT16 || t == T::INT8 || t == T::UINT8 || t == T::BOOL; }
bool is_readable(int32_t t) { return is_integer(t) || t == T::FLOAT || t == T::DOUBLE; }

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// The elements of a tensor of dimensions `dims`, refusing more than kMaxElements (and a rank beyond
// any shape tensor's, which Unsqueeze could otherwise grow without bound).
int64_t elements(const std::vector<int64_t>& dims) {
  if (dims.size() > 64) refuse("gives a tensor of rank " + std::to_string(dims.size()) + ", too high to evaluate");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) refuse("gives the negative dimensions " + dims_str(dims));
    if (d > kMaxElements || (n *= d) > kMaxElements)
      refuse("gives a tensor " + dims_str(dims) + " of more than " + std::to_string(kMaxElements) + " elements, too large to evaluate");
  }
  return n;
}

// A value read as an index, an axis or a size. Beyond +-2^62 (Slice's ends use INT64_MAX for "to the
// end") it is clamped, which no dimension reaches and which keeps index arithmetic from overflowing.
int64_t to_int(double v) {
  if (std::isnan(v)) refuse("reads NaN as an integer");
  return static_cast<int64_t>(std::clamp(v, -0x1p62, 0x1p62));
}

// A double rounded to float, saturating at float's range as a float computation would overflow to
// infinity (a plain conversion of an out-of-range double is undefined).
double to_float(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<double>::infinity();
  if (v < -kMax) return -std::numeric_limits<double>::infinity();
  return std::isnan(v) ? v : static_cast<float>(v);
}

// The inputs and attributes of the node being evaluated.
class Eval {
 public:
  Eval(const onnx::NodeProto& node, const Lookup& lookup) : n(node), lookup_(lookup) {}
  const onnx::NodeProto& n;

  bool given(int i) const { return i < n.input_size() && !n.input(i).empty(); }
  // Input i's value; "" (wait) while it is not known.
  const Known& input(int i) const {
    if (!given(i)) refuse("has no input " + std::to_string(i));
    const Known* k = lookup_.value(n.input(i));
    if (!k) throw NoValue{""};
    return *k;
  }
  std::vector<const Known*> inputs() const {
    std::vector<const Known*> xs;
    for (int i = 0; i < n.input_size(); ++i) xs.push_back(&input(i));
    if (xs.empty()) refuse("has no inputs");
    return xs;
  }
  std::vector<int64_t> ints(int i) const {
    std::vector<int64_t> r;
    for (double v : input(i).values) r.push_back(to_int(v));
    return r;
  }
  double scalar(int i) const {
    const Known& k = input(i);
    if (k.values.size() != 1) refuse("input " + std::to_string(i) + " must be a scalar");
    return k.values[0];
  }
  // Input i's shape: from its value, else as ONNX inferred it; "" (wait) while not complete.
  const std::vector<int64_t>& shape(int i) const {
    if (!given(i)) refuse("has no input " + std::to_string(i));
    if (const Known* k = lookup_.value(n.input(i))) return k->dims;
    const auto* s = lookup_.shape(n.input(i));
    if (!s) throw NoValue{""};
    return *s;
  }
  const onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const std::string& name, int64_t def) const { return attr(name) ? attr(name)->i() : def; }
  std::vector<int64_t> attr_ints(const std::string& name) const {
    const auto* a = attr(name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  int64_t opset() const { return lookup_.opset; }

 private:
  const Lookup& lookup_;
};

// Axis `a` of a rank-r tensor, negative counted from the end.
int64_t axis(int64_t a, int64_t r) {
  if (a < -r || a >= r) refuse("has axis " + std::to_string(a) + ", out of range for rank " + std::to_string(r));
  return a < 0 ? a + r : a;
}

// ---- broadcasting and indexing --------------------------------------------------------------------

// NumPy broadcasting of several shapes (ONNX's multidirectional broadcasting).
std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  std::vector<int64_t> out(r, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[r - s.size() + i];
      if (o == 1) o = s[i];
      else if (s[i] != 1 && s[i] != o) refuse("reads shapes that do not broadcast: " + dims_str(s) + " and " + dims_str(out));
    }
  return out;
}

// Element i (row-major) of x broadcast to the dimensions `out`.
double at(const Known& x, const std::vector<int64_t>& out, int64_t i) {
  int64_t flat = 0, stride = 1;
  size_t lead = out.size() - x.dims.size();
  for (size_t k = out.size(); k-- > lead;) {
    int64_t d = x.dims[k - lead];
    if (d != 1) flat += (i % out[k]) * stride;
    i /= out[k];
    stride *= d;
  }
  return x.values[flat];
}

// f over the inputs' elements, broadcast, as a tensor of type `type`.
template <class F>
Known elementwise(const std::vector<const Known*>& xs, int32_t type, F f) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Known* x : xs) shapes.push_back(x->dims);
  Known y{broadcast(shapes), {}, type};
  int64_t n = elements(y.dims);
  std::vector<double> args(xs.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < xs.size(); ++k) args[k] = at(*xs[k], y.dims, i);
    y.values.push_back(f(args));
  }
  return y;
}

// The elements of x at every combination of the per-axis indices `keep`, row-major (Slice, Tile).
Known pick(const Known& x, const std::vector<std::vector<int64_t>>& keep) {
  Known y{{}, {}, x.type};
  for (const auto& k : keep) y.dims.push_back(static_cast<int64_t>(k.size()));
  int64_t n = elements(y.dims);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, flat = 0, stride = 1;
    for (size_t k = keep.size(); k-- > 0;) {
      int64_t size = static_cast<int64_t>(keep[k].size());
      flat += keep[k][rest % size] * stride;
      rest /= size;
      stride *= x.dims[k];
    }
    y.values.push_back(x.values[flat]);
  }
  return y;
}

// ---- the operators --------------------------------------------------------------------------------

using Binary = double (*)(double, double);
// Arithmetic keeps the first input's type; integer Div truncates, as C does (and onnxruntime).
const std::map<std::string, Binary> kArithmetic = {
    {"Add", [](double a, double b) { return a + b; }},
    {"Sub", [](double a, double b) { return a - b; }},
    {"Mul", [](double a, double b) { return a * b; }},
    {"Div", [](double a, double b) { return a / b; }},
    {"Max", [](double a, double b) { return std::max(a, b); }},
    {"Min", [](double a, double b) { return std::min(a, b); }},
};
// Comparisons and logic give BOOL.
const std::map<std::string, Binary> kCompare = {
    {"Equal", [](double a, double b) { return double(a == b); }},
    {"Less", [](double a, double b) { return double(a < b); }},
    {"LessOrEqual", [](double a, double b) { return double(a <= b); }},
    {"Greater", [](double a, double b) { return double(a > b); }},
    {"GreaterOrEqual", [](double a, double b) { return double(a >= b); }},
    {"And", [](double a, double b) { return double(a != 0 && b != 0); }},
    {"Or", [](double a, double b) { return double(a != 0 || b != 0); }},
    {"Xor", [](double a, double b) { return double((a != 0) != (b != 0)); }},
};
using Unary = double (*)(double);
const std::map<std::string, Unary> kUnary = {
    {"Identity", [](double x) { return x; }},
    {"Neg", [](double x) { return -x; }},
    {"Abs", [](double x) { return std::fabs(x); }},
    {"Floor", [](double x) { return std::floor(x); }},
    {"Ceil", [](double x) { return std::ceil(x); }},
    {"Not", [](double x) { return double(x == 0); }},
};

Known arithmetic(const Eval& e) {
  std::vector<const Known*> xs = e.inputs();
  const std::string& op = e.n.op_type();
  Binary f = kArithmetic.at(op);
  bool integer = is_integer(xs[0]->type), checked = integer && op != "Max" && op != "Min";
  return elementwise(xs, xs[0]->type, [&](const std::vector<double>& v) {
    double r = v[0];
    for (size_t k = 1; k < v.size(); ++k) {
      if (integer && op == "Div" && v[k] == 0) refuse("divides by zero");
      r = f(r, v[k]);
      if (integer && op == "Div") r = std::trunc(r);
    }
    if (checked && !(std::fabs(r) <= 0x1p62)) refuse("overflows int64");
    return r;
  });
}

// Mod: fmod = 0 (the default, integers only) takes the divisor's sign, as Python's %; fmod = 1 the
// dividend's, as C's fmod. nn.MultiheadAttention's export computes its head split with it.
Known mod(const Eval& e) {
  if (e.n.input_size() != 2) refuse("must have two inputs");
  std::vector<const Known*> xs = e.inputs();
  const bool c_style = e.attr_int("fmod", 0) != 0;
  if (!c_style && !is_integer(xs[0]->type)) refuse("floating-point inputs need fmod = 1");
  return elementwise(xs, xs[0]->type, [&](const std::vector<double>& v) {
    if (v[1] == 0) refuse("divides by zero");
    double r = std::fmod(v[0], v[1]);
    if (!c_style && r != 0 && (r < 0) != (v[1] < 0)) r += v[1];
    return r;
  });
}

Known compare(const Eval& e) {
  if (e.n.input_size() != 2) refuse("must have two inputs");
  Binary f = kCompare.at(e.n.op_type());
  return elementwise(e.inputs(), T::BOOL, [&](const std::vector<double>& v) { return f(v[0], v[1]); });
}

Known unary(const Eval& e) {
  Known y = e.input(0);
  Unary f = kUnary.at(e.n.op_type());
  for (double& v : y.values) v = f(v);
  return y;
}

Known where(const Eval& e) {
  if (e.n.input_size() != 3) refuse("must have three inputs");
  std::vector<const Known*> xs = e.inputs();
  return elementwise(xs, xs[1]->type, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
}

Known cast(const Eval& e) {
  Known y = e.input(0);
  y.type = static_cast<int32_t>(e.attr_int("to", 0));
  if (!is_readable(y.type)) refuse("casts to a type not evaluated (only float, double, bool and signed integers are)");
  for (double& v : y.values) {
    if (y.type == T::BOOL) {
      v = v != 0;
    } else if (is_integer(y.type)) {
      if (!(std::fabs(v) < 0x1p63)) refuse("casts " + std::to_string(v) + " to an integer");
      v = std::trunc(v);
    } else if (y.type == T::FLOAT) {
      v = to_float(v);
    }
  }
  return y;
}

Known constant(const Eval& e) {
  for (const auto& a : e.n.attribute()) {
    const std::string& name = a.name();
    if (name == "value" && a.has_t()) {
      if (auto k = read_tensor(a.t())) return *k;
      refuse("holds a tensor that is stored outside the file, has more than " + std::to_string(kMaxElements) + " elements or is of a type not evaluated");
    }
    if (name == "value_int") return Known{{}, {double(a.i())}, T::INT64};
    if (name == "value_float") return Known{{}, {double(a.f())}, T::FLOAT};
    if (name == "value_ints") return Known{{a.ints_size()}, {a.ints().begin(), a.ints().end()}, T::INT64};
    if (name == "value_floats") return Known{{a.floats_size()}, {a.floats().begin(), a.floats().end()}, T::FLOAT};
  }
  refuse("holds no numeric value (a sparse or string constant)");
}

// Shape (with opset 15's start and end) and Size of a tensor whose shape is known.
Known shape(const Eval& e) {
  const std::vector<int64_t>& d = e.shape(0);
  int64_t r = static_cast<int64_t>(d.size());
  auto bound = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t{0}, r); };
  int64_t start = bound(e.attr_int("start", 0)), end = bound(e.attr_int("end", r));
  Known y{{std::max<int64_t>(end - start, 0)}, {}, T::INT64};
  for (int64_t i = start; i < end; ++i) y.values.push_back(static_cast<double>(d[i]));
  return y;
}

Known size(const Eval& e) {
  double n = 1;
  for (int64_t d : e.shape(0)) n *= static_cast<double>(d);
  return Known{{}, {n}, T::INT64};
}

Known gather(const Eval& e) {
  const Known &x = e.input(0), &idx = e.input(1);
  int64_t r = static_cast<int64_t>(x.dims.size());
  if (r == 0) refuse("gathers from a scalar");
  int64_t a = axis(e.attr_int("axis", 0), r), n = x.dims[a], outer = 1, inner = 1;
  for (int64_t k = 0; k < a; ++k) outer *= x.dims[k];
  for (int64_t k = a + 1; k < r; ++k) inner *= x.dims[k];
  Known y{{x.dims.begin(), x.dims.begin() + a}, {}, x.type};
  y.dims.insert(y.dims.end(), idx.dims.begin(), idx.dims.end());
  y.dims.insert(y.dims.end(), x.dims.begin() + a + 1, x.dims.end());
  elements(y.dims);
  for (int64_t o = 0; o < outer; ++o)
    for (double v : idx.values) {
      int64_t j = to_int(v);
      if (j < -n || j >= n) refuse("gathers index " + std::to_string(j) + " of a dimension of " + std::to_string(n));
      if (j < 0) j += n;
      for (int64_t i = 0; i < inner; ++i) y.values.push_back(x.values[(o * n + j) * inner + i]);
    }
  return y;
}

// The axes of Squeeze and Unsqueeze: an attribute before opset 13, an input since.
std::vector<int64_t> axes_of(const Eval& e) {
  if (e.opset() < 13) return e.attr_ints("axes");
  return e.given(1) ? e.ints(1) : std::vector<int64_t>{};
}

Known unsqueeze(const Eval& e) {
  Known y = e.input(0);
  std::vector<int64_t> axes = axes_of(e);
  int64_t r = static_cast<int64_t>(y.dims.size() + axes.size());
  elements(std::vector<int64_t>(r, 1));  // the rank limit, before inserting
  for (auto& a : axes) a = axis(a, r);
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || std::adjacent_find(axes.begin(), axes.end()) != axes.end()) refuse("has no axes or repeats one");
  for (int64_t a : axes) y.dims.insert(y.dims.begin() + a, 1);
  return y;
}

Known squeeze(const Eval& e) {
  Known y = e.input(0);
  std::vector<int64_t> axes = axes_of(e);
  int64_t r = static_cast<int64_t>(y.dims.size());
  if (axes.empty())  // every dimension of size 1
    for (int64_t k = 0; k < r; ++k)
      if (y.dims[k] == 1) axes.push_back(k);
  for (auto& a : axes) {
    a = axis(a, r);
    if (y.dims[a] != 1) refuse("squeezes axis " + std::to_string(a) + " of size " + std::to_string(y.dims[a]));
  }
  std::sort(axes.rbegin(), axes.rend());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  for (int64_t a : axes) y.dims.erase(y.dims.begin() + a);
  return y;
}

Known concat(const Eval& e) {
  std::vector<const Known*> xs = e.inputs();
  int64_t r = static_cast<int64_t>(xs[0]->dims.size());
  if (r == 0) refuse("concatenates scalars");
  int64_t a = axis(e.attr_int("axis", 0), r);
  Known y{xs[0]->dims, {}, xs[0]->type};
  y.dims[a] = 0;
  for (const Known* x : xs) {
    for (int64_t k = 0; k < r; ++k)
      if (static_cast<int64_t>(x->dims.size()) != r || (k != a && x->dims[k] != y.dims[k]))
        refuse("concatenates " + dims_str(x->dims) + " to " + dims_str(xs[0]->dims) + " along axis " + std::to_string(a));
    y.dims[a] += x->dims[a];
  }
  elements(y.dims);
  int64_t outer = 1;
  for (int64_t k = 0; k < a; ++k) outer *= y.dims[k];
  for (int64_t o = 0; o < outer; ++o)
    for (const Known* x : xs) {
      int64_t chunk = static_cast<int64_t>(x->values.size()) / outer;
      y.values.insert(y.values.end(), x->values.begin() + o * chunk, x->values.begin() + (o + 1) * chunk);
    }
  return y;
}

Known reshape(const Eval& e) {
  Known y = e.input(0);
  std::vector<int64_t> shape = e.ints(1);
  bool allowzero = e.attr_int("allowzero", 0) != 0;
  int64_t minus_one = -1;
  std::vector<int64_t> rest;  // the dimensions but the -1
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allowzero) {
      if (k >= y.dims.size()) refuse("copies dimension " + std::to_string(k) + " of a rank-" + std::to_string(y.dims.size()) + " tensor");
      shape[k] = y.dims[k];
    }
    if (shape[k] == -1 && minus_one < 0) minus_one = static_cast<int64_t>(k);
    else rest.push_back(shape[k]);
  }
  int64_t n = static_cast<int64_t>(y.values.size()), known = elements(rest);
  if (minus_one >= 0) {
    if (known == 0 || n % known) refuse("cannot reshape " + std::to_string(n) + " elements to " + dims_str(shape));
    shape[minus_one] = n / known;
  } else if (known != n) {
    refuse("cannot reshape " + std::to_string(n) + " elements to " + dims_str(shape));
  }
  y.dims = shape;
  return y;
}

Known slice(const Eval& e) {
  const Known& x = e.input(0);
  int64_t r = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (e.opset() < 10) {
    starts = e.attr_ints("starts"), ends = e.attr_ints("ends"), axes = e.attr_ints("axes");
  } else {
    starts = e.ints(1), ends = e.ints(2);
    if (e.given(3)) axes = e.ints(3);
    if (e.given(4)) steps = e.ints(4);
  }
  for (size_t k = axes.size(); k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  steps.resize(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    refuse("has starts, ends, axes and steps of different lengths");
  std::vector<std::vector<int64_t>> keep(r);  // per axis, the indices kept
  for (int64_t k = 0; k < r; ++k)
    for (int64_t i = 0; i < x.dims[k]; ++i) keep[k].push_back(i);
  for (size_t j = 0; j < starts.size(); ++j) {
    int64_t a = axis(axes[j], r), d = x.dims[a], step = steps[j];
    if (step == 0) refuse("has a step of 0");
    keep[a].clear();
    if (d == 0) continue;
    int64_t b = starts[j] < 0 ? starts[j] + d : starts[j], f = ends[j] < 0 ? ends[j] + d : ends[j];
    if (step > 0) b = std::clamp<int64_t>(b, 0, d), f = std::clamp<int64_t>(f, 0, d);
    else b = std::clamp<int64_t>(b, 0, d - 1), f = std::clamp<int64_t>(f, -1, d - 1);
    for (int64_t i = b; step > 0 ? i < f : i > f; i += step) keep[a].push_back(i);
  }
  return pick(x, keep);
}

Known tile(const Eval& e) {
  const Known& x = e.input(0);
  std::vector<int64_t> repeats = e.ints(1);
  if (repeats.size() != x.dims.size()) refuse("has " + std::to_string(repeats.size()) + " repeats for a rank-" + std::to_string(x.dims.size()) + " tensor");
  std::vector<std::vector<int64_t>> keep(x.dims.size());
  for (size_t k = 0; k < keep.size(); ++k) {
    if (repeats[k] < 0 || repeats[k] > kMaxElements || repeats[k] * x.dims[k] > kMaxElements)
      refuse("repeats " + dims_str(repeats) + ", giving a tensor too large to evaluate");
    for (int64_t t = 0; t < repeats[k]; ++t)
      for (int64_t i = 0; i < x.dims[k]; ++i) keep[k].push_back(i);
  }
  return pick(x, keep);
}

// Transpose by perm (default: the axes reversed): torch.nn.functional.pad's pads, reordered from
// PyTorch's last-axis-first pairs into ONNX's begins-then-ends through a Reshape and a Transpose.
Known transpose(const Eval& e) {
  const Known& x = e.input(0);
  const size_t r = x.dims.size();
  std::vector<int64_t> perm = e.attr_ints("perm");
  if (perm.empty())
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  std::vector<bool> used(r, false);
  if (perm.size() != r) refuse("has a perm of " + std::to_string(perm.size()) + " axes for a rank-" + std::to_string(r) + " tensor");
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || used[p]) refuse("has a perm that is not a permutation of the axes");
    used[p] = true;
  }
  Known y{{}, {}, x.type};
  for (int64_t p : perm) y.dims.push_back(x.dims[p]);
  const int64_t n = elements(y.dims);
  std::vector<int64_t> stride(r, 1);
  for (size_t k = r; k-- > 1;) stride[k - 1] = stride[k] * x.dims[k];
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, from = 0;
    for (size_t k = r; k-- > 0;) {
      from += (rest % y.dims[k]) * stride[perm[k]];
      rest /= y.dims[k];
    }
    y.values.push_back(x.values[static_cast<size_t>(from)]);
  }
  return y;
}

// Expand broadcasts both ways: [N, 8, 1, 1] expanded to [1, 1, 8, 8] is [N, 8, 8, 8].
Known expand(const Eval& e) {
  const Known& x = e.input(0);
  Known y{broadcast({x.dims, e.ints(1)}), {}, x.type};
  int64_t n = elements(y.dims);
  for (int64_t i = 0; i < n; ++i) y.values.push_back(at(x, y.dims, i));
  return y;
}

Known constant_of_shape(const Eval& e) {
  Known y{e.ints(0), {}, T::FLOAT};
  double value = 0;
  if (const auto* a = e.attr("value")) {
    auto k = read_tensor(a->t());
    if (!k || k->values.size() != 1) refuse("has a value that is not a one-element tensor");
    value = k->values[0];
    y.type = k->type;
  }
  y.values.assign(static_cast<size_t>(elements(y.dims)), value);
  return y;
}

Known range(const Eval& e) {
  double start = e.scalar(0), limit = e.scalar(1), delta = e.scalar(2);
  if (delta == 0) refuse("has a delta of 0");
  double n = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(n <= kMaxElements)) refuse("gives more than " + std::to_string(kMaxElements) + " elements, too many to evaluate");
  Known y{{static_cast<int64_t>(n)}, {}, e.input(0).type};
  for (int64_t i = 0; i < y.dims[0]; ++i) y.values.push_back(start + static_cast<double>(i) * delta);
  return y;
}

using OpFn = Known (*)(const Eval&);
const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> t = {
        {"Constant", constant}, {"Shape", shape},       {"Size", size},         {"Gather", gather}, {"Unsqueeze", unsqueeze},
        {"Squeeze", squeeze},   {"Concat", concat},     {"Reshape", reshape},   {"Slice", slice},   {"Tile", tile},
        {"Expand", expand},     {"Cast", cast},         {"Where", where},       {"Range", range},   {"ConstantOfShape", constant_of_shape},
        {"Mod", mod},           {"Transpose", transpose},
    };
    for (const auto& [op, f] : kArithmetic) t[op] = arithmetic;
    for (const auto& [op, f] : kCompare) t[op] = compare;
    for (const auto& [op, f] : kUnary) t[op] = unary;
    return t;
  }();
  return table;
}

}  // namespace

std::optional<Known> read_tensor(const onnx::TensorProto& t) {
  if (!is_readable(t.data_type()) || t.data_location() == T::EXTERNAL) return std::nullopt;
  Known k{{t.dims().begin(), t.dims().end()}, {}, t.data_type()};
  int64_t n = 1;
  for (int64_t d : k.dims) {
    if (d < 0 || d > kMaxElements || (n *= d) > kMaxElements) return std::nullopt;
  }
  auto take = [&](const auto& field) {
    for (const auto& x : field) k.values.push_back(static_cast<double>(x));
  };
  switch (t.data_type()) {
    case T::FLOAT: take(t.float_data()); break;
    case T::DOUBLE: take(t.double_data()); break;
    case T::INT64: take(t.int64_data()); break;
    default: take(t.int32_data()); break;  // INT32, INT16, INT8, UINT8, BOOL
  }
  if (k.values.empty() && t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    auto read = [&](auto zero) {
      using X = decltype(zero);
      if (raw.size() != static_cast<size_t>(n) * sizeof(X)) return;
      for (int64_t i = 0; i < n; ++i) {
        X x;
        std::memcpy(&x, raw.data() + i * sizeof(X), sizeof(X));
        k.values.push_back(static_cast<double>(x));
      }
    };
    switch (t.data_type()) {
      case T::FLOAT: read(float{}); break;
      case T::DOUBLE: read(double{}); break;
      case T::INT64: read(int64_t{}); break;
      case T::INT32: read(int32_t{}); break;
      case T::INT16: read(int16_t{}); break;
      case T::INT8: read(int8_t{}); break;
      default: read(uint8_t{}); break;  // UINT8, BOOL
    }
  }
  if (static_cast<int64_t>(k.values.size()) != n) return std::nullopt;
  return k;
}

onnx::TensorProto write_tensor(const Known& k, const std::string& name) {
  // Integers saturate: INT64_MAX, read as 2^63, is written back as INT64_MAX.
  auto saturate = [](double v, double lo, double hi) { return std::isnan(v) ? 0.0 : std::clamp(v, lo, hi); };
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(k.type);
  for (int64_t d : k.dims) t.add_dims(d);
  for (double v : k.values) {
    switch (k.type) {
      case T::FLOAT: t.add_float_data(static_cast<float>(to_float(v))); break;
      case T::DOUBLE: t.add_double_data(v); break;
      case T::INT64:
        t.add_int64_data(v >= 0x1p63 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(saturate(v, -0x1p63, 0x1p63)));
        break;
      default: t.add_int32_data(static_cast<int32_t>(saturate(v, -0x1p31, 0x1p31 - 1))); break;  // INT32, INT16, INT8, UINT8, BOOL
    }
  }
  return t;
}

Result evaluate(const onnx::NodeProto& n, const Lookup& lookup) {
  auto op = ops().find(n.op_type());
  if (op == ops().end()) return {{}, "operator '" + n.op_type() + "' is not evaluated at import time"};
  if (n.output_size() != 1) return {{}, "has " + std::to_string(n.output_size()) + " outputs (constant evaluation takes one)"};
  try {
    Known y = op->second(Eval(n, lookup));
    elements(y.dims);
    return {{std::move(y)}, ""};
  } catch (const NoValue& no) {
    return {{}, no.why};
  }
}

bool evaluates(const std::string& op) { return ops().count(op) > 0; }

const std::vector<std::string>& evaluated_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [op, f] : ops()) v.push_back(op);
    return v;
  }();
  return names;
}

}  // namespace dtsim::onnx_fold
