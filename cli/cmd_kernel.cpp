// `dtsim kernel`: one kernel's predicted time, for checking a predictor against a measurement.
#include <filesystem>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "workload/kernel_spec.hpp"
#include "compute/compute_model.hpp"
#include "sim/framework.hpp"
#include "sim/multi_tensor.hpp"
#include "sim/predict.hpp"

namespace dtsim::cli {
namespace {

// "a, b or c", for a flag that takes one name of a registry.
std::string one_of(std::vector<std::string> names) {
  const std::string last = names.back();
  names.pop_back();
  return names.empty() ? last : join_names(names) + " or " + last;
}

class KernelCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("kernel", "Predict one kernel's time on a GPU");
    c->add_option("--gpu", gpu_, "GPU name (configs/gpus/NAME.json) or a JSON file (a value with '/' or ending in .json, relative to the current directory)")
        ->required();
    std::vector<std::string> kind_names;
    for (KernelKind k : spec_kinds()) kind_names.push_back(kind_name(k));
    c->add_option("--kind", kind_, join_names(kind_names))->required();
    c->add_option("--pass", pass_, "fwd, bwd_data, bwd_filter (conv2d), bwd_weight (gemm), bwd, update")->required();
    c->add_option("--precision,--dtype", dtype_, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (--dtype: the same flag)")->capture_default_str();
    c->add_option("--shape", shape_,
                  "Comma-separated NAME=VALUE: conv2d N,C,H,W,K,R,S,stride,pad,dil,groups; gemm M,N,K (C[MxN] = A[MxK] B[KxN]); batchnorm "
                  "N,C,H,W; pool N,C,H,W,R,S,stride,pad; activation/add/concat elements; softmax_ce N,classes; sgd_update and adam_update params; "
                  "eltwise read,written (elements); layernorm rows,features; attention N,heads,T,head_dim,causal (0 or 1, default 0); "
                  "embedding rows,dim,num_embeddings")
        ->required();
    c->add_option("--variant", variant_, "activation: relu (default), relu6, gelu, gelu_tanh, ...; pool: max (default) or avg, inductor_max or inductor_avg (torch.compile's own pooling kernels, priced by --framework's compiled_pooling); concat: slice (one input's copy into its slice, as the harness runs it); conv2d: native_depthwise (PyTorch's own depthwise kernels, fp32/bf16 contiguous; default cuDNN's); adam_update: adamw (default) "
                  "or adam; eltwise: the lowering's name (bias_add, bias_grad, ...), which framework profiles key on");
    c->add_option("--framework", framework_,
                  "Price the kernel as this framework runs it (configs/frameworks: " + join_names(framework_presets()) +
                      ", or a JSON file): its own kernels' measured time ratios, and adam_update from the SGD update of the same parameters "
                      "times the bytes its optimizer passes move, as predict does. Default: none (the library kernel; adam_update from "
                      "SGD's at the fused kernels' 28 against 20 bytes per parameter)");
    c->add_option("--memory-format", memory_format_,
                  "The tensors' memory format, in PyTorch's words: contiguous (NCHW) or channels_last (NHWC; conv2d and batchnorm only)")
        ->capture_default_str();
    c->add_option("--compute-model", model_, one_of(compute_model_names()))->capture_default_str();
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    KernelDesc k = parse_kernel_spec({kind_, pass_, dtype_, shape_, variant_, memory_format_});
    // The format is named only where it is channels_last, so contiguous kernels print as before.
    const bool nhwc = k.format == MemoryFormat::ChannelsLast;
    // The compute model as predict wraps it for a cluster of this GPU: with a framework's tables when
    // one is named, so that one kernel here is priced exactly as inside a prediction.
    ClusterSpec c;
    c.gpu = load_gpu_flag(gpu_);
    if (!framework_.empty()) c = apply_framework(c, load_framework(framework_));
    if (is_compiled_pool(k) && c.framework.compiled_pooling.bandwidth_fraction <= 0)
      throw InputError("--variant", std::string(k.variant) + " is priced by a framework profile's compiled_pooling: give --framework pytorch (or a profile that has it)");
    // A depthwise convolution the framework runs on its own kernels is priced as those, as in predict.
    if (c.framework.depthwise_conv_native && pytorch_runs_native_depthwise(k)) k.variant = kNativeDepthwise;
    if (c.framework.batchnorm_native_bf16 && pytorch_runs_native_batchnorm(k)) k.variant = kNativeBatchnorm;
    // A framework that runs the optimizer as foreach passes moves their bytes, which its time is
    // priced from (sim/multi_tensor.hpp): the bytes shown are those, not the fused kernel's.
    if ((k.kind == KernelKind::SgdUpdate || k.kind == KernelKind::AdamUpdate) &&
        runs_multi_tensor(c.framework.multi_tensor_optimizer, update_optimizer_name(k)))
      k.bytes = multi_tensor_step_bytes(c.framework.multi_tensor_optimizer, update_optimizer_name(k), {k.shape[0]});
    const GpuSpec& gpu = c.gpu;
    auto model = cluster_compute_model(model_, c);
    KernelTime t = model->time(k);
    const std::string source = t.source == TimeSource::Mlp ? "mlp" : "roofline";
    if (format_ == "json") {
      Json j{{"gpu", gpu.name}, {"kind", kind_}, {"pass", pass_}, {"dtype", dtype_}, {"time_s", t.seconds}, {"flops", k.flops},
             {"bytes", k.bytes}, {"source", source}, {"in_range", t.in_range}, {"memory_bound", t.memory_bound},
             {"physics_floor_s", physics_floor_s(k, gpu)}, {"note", model->note()}};
      if (nhwc) j["memory_format"] = memory_format_name(k.format);
      if (*k.variant) j["variant"] = k.variant;
      if (!framework_.empty()) j["framework"] = c.framework.name;
      emit(out_, dump(j));
    } else {
      Table tab{{"kernel", "time", "FLOPs", "bytes", "TFLOP/s", "GB/s", "source"}, {}};
      tab.rows.push_back({kind_ + " " + pass_ + " " + dtype_ + (nhwc ? std::string(" channels_last") : ""), fmt_time(t.seconds), fmt_count(k.flops), fmt_count(k.bytes),
                          fmt_sig(k.flops / t.seconds / 1e12, 4), fmt_sig(k.bytes / t.seconds / 1e9, 4),
                          source + (t.in_range ? "" : " (outside its measured range)")});
      emit(out_, tab.to_text() + "compute model: " + model->note() + "\n");
    }
    return 0;
  }

 private:
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

  std::string gpu_, kind_, pass_, dtype_ = "fp32", shape_, variant_, memory_format_ = "contiguous", model_ = "auto", format_ = "table", framework_, out_;
};

}  // namespace

std::unique_ptr<Command> make_kernel_command() { return std::make_unique<KernelCommand>(); }

}  // namespace dtsim::cli
