// `dtsim kernel`: one kernel's predicted time, for checking a predictor against a measurement.
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "cli/command.hpp"
#include "core/args.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "compute/impl/mlp/features.hpp"
#include "workload/kernels.hpp"
#include "compute/compute_model.hpp"

namespace dtsim::cli {
namespace {

class KernelCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("kernel", "Predict one kernel's time on a GPU");
    c->add_option("--gpu", gpu_, "GPU name (configs/gpus/NAME.json) or a JSON file (a value with '/' or ending in .json, relative to the current directory)")
        ->required();
    std::vector<std::string> kind_names;
    for (KernelKind k : priced_kinds()) kind_names.push_back(kind_name(k));
    c->add_option("--kind", kind_, join_names(kind_names))->required();
    c->add_option("--pass", pass_, "fwd, bwd_data, bwd_filter (conv2d), bwd_weight (gemm), bwd, update")->required();
    c->add_option("--dtype", dtype_, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16")->capture_default_str();
    c->add_option("--shape", shape_,
                  "Comma-separated NAME=VALUE: conv2d N,C,H,W,K,R,S,stride,pad,dil,groups; gemm M,N,K (C[MxN] = A[MxK] B[KxN]); batchnorm "
                  "N,C,H,W; pool N,C,H,W,R,S,stride,pad; activation/add elements; softmax_ce N,classes; sgd_update params; eltwise read,written "
                  "(elements)")
        ->required();
    c->add_option("--variant", variant_, "activation: relu (default), relu6, ...; pool: max (default) or avg; eltwise: the lowering's name "
                  "(bias_add, bias_grad, ...), which framework profiles key on");
    c->add_option("--compute-model", model_, "auto, mlp or roofline")->capture_default_str();
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    return c;
  }

  int run() override {
    KernelDesc k = parse_kernel();
    GpuSpec gpu = load_gpu_flag(gpu_);
    auto model = make_compute_model(model_, gpu);
    KernelTime t = model->time(k);
    const std::string source = t.source == TimeSource::Mlp ? "mlp" : "roofline";
    if (format_ == "json") {
      emit("", dump(Json{{"gpu", gpu.name}, {"kind", kind_}, {"pass", pass_}, {"dtype", dtype_}, {"time_s", t.seconds}, {"flops", k.flops},
                         {"bytes", k.bytes}, {"source", source}, {"in_range", t.in_range}, {"memory_bound", t.memory_bound},
                         {"physics_floor_s", physics_floor_s(k, gpu)}, {"note", model->note()}}));
    } else {
      Table tab{{"kernel", "time", "FLOPs", "bytes", "TFLOP/s", "GB/s", "source"}, {}};
      tab.rows.push_back({kind_ + " " + pass_ + " " + dtype_, fmt_time(t.seconds), fmt_count(k.flops), fmt_count(k.bytes),
                          fmt_sig(k.flops / t.seconds / 1e12, 4), fmt_sig(k.bytes / t.seconds / 1e9, 4),
                          source + (t.in_range ? "" : " (outside its measured range)")});
      emit("", tab.to_text() + "compute model: " + model->note() + "\n");
    }
    return 0;
  }

 private:
  // The kinds --kind takes: every kernel kind but concat and dropout.
  static const std::vector<KernelKind>& priced_kinds() {
    static const std::vector<KernelKind> k = {KernelKind::Conv2d, KernelKind::Gemm,      KernelKind::BatchNorm,
                                              KernelKind::Activation, KernelKind::Pool,  KernelKind::Add,
                                              KernelKind::SoftmaxCE,  KernelKind::SgdUpdate, KernelKind::Eltwise};
    return k;
  }

  // A value containing '/' or ending in .json is a file, relative to the current directory; anything
  // else names configs/gpus/NAME.json. load_gpu() takes a bare "my.json" for a name, so a file
  // without a folder is given to it as "./my.json".
  static GpuSpec load_gpu_flag(const std::string& value) {
    const bool json = value.size() > 5 && value.compare(value.size() - 5, 5, ".json") == 0;
    const bool path = json || value.find('/') != std::string::npos;
    std::string arg = value;
    if (path) {
      if (value.find('/') == std::string::npos) arg = "./" + value;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(arg, ec)) throw InputError("--gpu", "no such file '" + value + "'");
    }
    try {
      return load_gpu(arg);
    } catch (const InputError& e) {
      if (e.where() == "gpu") throw InputError("--gpu", e.rule());  // an unknown name: the flag is where to fix it
      throw;
    }
  }

  KernelDesc parse_kernel() const {
    std::map<std::string, KernelKind> kinds;
    for (KernelKind k : priced_kinds()) kinds[kind_name(k)] = k;
    static const std::map<std::string, Pass> passes = {{"fwd", Pass::Fwd},           {"bwd_data", Pass::BwdData}, {"bwd_filter", Pass::BwdFilter},
                                                       {"bwd_weight", Pass::BwdWeight}, {"bwd", Pass::Bwd},          {"update", Pass::Update}};
    auto kit = kinds.find(kind_);
    if (kit == kinds.end()) throw InputError("--kind", "unknown kernel kind '" + kind_ + "'");
    auto pit = passes.find(pass_);
    if (pit == passes.end()) throw InputError("--pass", "unknown pass '" + pass_ + "'");
    KernelDesc k{kit->second, pit->second, MathMode::FP32, -1, {}, "", 0, 0};
    const bool matmul = k.kind == KernelKind::Conv2d || k.kind == KernelKind::Gemm;
    auto valid_passes = [&]() -> std::vector<Pass> {
      switch (k.kind) {
        case KernelKind::Conv2d: return {Pass::Fwd, Pass::BwdData, Pass::BwdFilter};
        case KernelKind::Gemm: return {Pass::Fwd, Pass::BwdData, Pass::BwdWeight};
        case KernelKind::SgdUpdate: return {Pass::Update};
        default: return {Pass::Fwd, Pass::Bwd};
      }
    }();
    if (std::find(valid_passes.begin(), valid_passes.end(), k.pass) == valid_passes.end())
      throw InputError("--pass", "'" + pass_ + "' is not a pass of " + kind_);
    Precision p = parse_precision(dtype_);
    if (k.kind == KernelKind::Conv2d) k.math = p == Precision::BF16 ? MathMode::BF16 : p == Precision::FP16 ? MathMode::FP16 : MathMode::TF32;
    else if (matmul) k.math = p == Precision::FP32 ? MathMode::FP32 : p == Precision::TF32 ? MathMode::TF32 : p == Precision::BF16 ? MathMode::BF16 : MathMode::FP16;
    else if (k.kind == KernelKind::SoftmaxCE || k.kind == KernelKind::SgdUpdate) k.math = MathMode::FP32;
    else k.math = p == Precision::BF16 ? MathMode::BF16 : p == Precision::FP16 ? MathMode::FP16 : MathMode::FP32;

    std::map<std::string, int64_t> v;
    for (const auto& item : split(shape_, ',')) {
      auto eq = item.find('=');
      if (eq == std::string::npos) throw InputError("--shape", "'" + item + "' must be NAME=VALUE");
      auto vals = parse_int_list("--shape", item.substr(eq + 1), 0, int64_t(1) << 40);
      if (vals.size() != 1) throw InputError("--shape", "'" + item + "' must have one value");
      v[item.substr(0, eq)] = vals[0];
    }
    std::set<std::string> used;
    auto get = [&](const std::string& name, std::optional<int64_t> fallback = std::nullopt) -> int64_t {
      used.insert(name);
      auto it = v.find(name);
      if (it != v.end()) return it->second;
      if (fallback) return *fallback;
      throw InputError("--shape", "missing " + name + " for " + kind_);
    };
    auto& s = k.shape;
    switch (k.kind) {
      case KernelKind::Conv2d: {
        int64_t stride = get("stride", 1), pad = get("pad", 0), dil = get("dil", 1);
        s = {get("N"), get("C"), get("H"), get("W"), get("K"), get("R"), get("S"), get("stride_h", stride), get("stride_w", stride),
             get("pad_h", pad), get("pad_w", pad), get("dil_h", dil), get("dil_w", dil), get("groups", 1)};
        if (s[7] < 1 || s[8] < 1 || s[11] < 1 || s[13] < 1 || s[1] % s[13] || s[4] % s[13]) throw InputError("--shape", "stride, dil and groups must be positive; groups must divide C and K");
        if (s[2] + 2 * s[9] < s[11] * (s[5] - 1) + 1 || s[3] + 2 * s[10] < s[12] * (s[6] - 1) + 1) throw InputError("--shape", "kernel larger than the padded input");
        break;
      }
      case KernelKind::Gemm: {
        int64_t ta = k.pass == Pass::BwdWeight ? 1 : 0, tb = k.pass == Pass::Fwd ? 1 : 0;
        s = {get("M"), get("N"), get("K"), get("transA", ta), get("transB", tb)};
        break;
      }
      case KernelKind::BatchNorm: s = {get("N"), get("C"), get("H"), get("W")}; break;
      case KernelKind::Pool: {
        int64_t R = get("R"), S = get("S"), st = get("stride", R), pad = get("pad", 0), H = get("H"), W = get("W");
        if (st < 1 || H + 2 * pad < R || W + 2 * pad < S) throw InputError("--shape", "pool window larger than the padded input, or stride < 1");
        s = {get("N"), get("C"), H, W, R, S, st, pad, (H + 2 * pad - R) / st + 1, (W + 2 * pad - S) / st + 1};
        if (variant_ != "" && variant_ != "avg" && variant_ != "max") throw InputError("--variant", "pool takes max or avg");
        k.variant = variant_ == "avg" ? "avg" : "max";
        break;
      }
      case KernelKind::Add: s = {get("elements"), get("inputs", 2)}; break;
      case KernelKind::SoftmaxCE: s = {get("N"), get("classes")}; break;
      case KernelKind::SgdUpdate: s = {get("params")}; break;
      case KernelKind::Eltwise:
        s = {get("read"), get("written")};
        k.variant = intern_variant(variant_);
        break;
      default:
        s = {get("elements")};
        static const std::set<std::string> acts = {"relu", "relu6", "sigmoid", "tanh", "silu", "gelu", "hardswish"};
        auto a = acts.find(variant_.empty() ? "relu" : variant_);
        if (a == acts.end()) throw InputError("--variant", "unknown activation '" + variant_ + "'");
        k.variant = a->c_str();
        break;
    }
    for (const auto& [name, val] : v)
      if (!used.count(name)) throw InputError("--shape", "'" + name + "' is not a field of " + kind_);
    for (size_t i = 0; i < kernel_shape_fields(k.kind).size(); ++i)
      if (s[i] <= 0 && !(k.kind == KernelKind::Conv2d && (i == 9 || i == 10)) && !(k.kind == KernelKind::Pool && i == 7) &&
          !(k.kind == KernelKind::Gemm && i >= 3))
        throw InputError("--shape", std::string(kernel_shape_fields(k.kind)[i]) + " must be positive");
    set_cost(k);
    return k;
  }

  std::string gpu_, kind_, pass_, dtype_ = "fp32", shape_, variant_, model_ = "auto", format_ = "table";
};

}  // namespace

std::unique_ptr<Command> make_kernel_command() { return std::make_unique<KernelCommand>(); }

}  // namespace dtsim::cli
