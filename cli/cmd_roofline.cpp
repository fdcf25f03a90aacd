#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "report/plot.hpp"
#include "workload/model_json.hpp"
#include "report/roofline_report.hpp"
#include "report/study_plots.hpp"
#include "compute/compute_model.hpp"

namespace dtsim::cli {
namespace {

class RooflineCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("roofline", "Place a model's kernels on its GPU's roofline: arithmetic intensity against attained FLOP/s");
    c->add_option("--model", model_, "Zoo name, model JSON file or ONNX file")->required();
    c->add_option("--cluster", cluster_, "Cluster preset name or JSON file (its GPU is used)")->capture_default_str();
    c->add_option("--batch-per-gpu", batch_, "Samples per GPU per iteration")->required();
    c->add_option("--precision", precision_, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)")->capture_default_str();
    c->add_option("--memory-format", mode_.memory_format, "Activation layout: contiguous (NCHW) or channels_last (NHWC)")->capture_default_str();
    c->add_option("--optimizer", mode_.optimizer, "torch.optim optimizer (foreach): sgd, adamw, adam")->capture_default_str();
    c->add_option("--execution", mode_.execution, "eager, cuda-graphs, compile, compile-cuda-graphs (the kernels Inductor fuses)")->capture_default_str();
    c->add_option("--plot", plot_, "Draw the roofline to FILE.png or FILE.svg (gnuplot)");
    c->add_option("--compute-model", compute_model_,
                  "Kernel times: auto (default: the measured predictors predict prices with, the roofline where none covers a kernel; "
                  "the points sit where those times put them), mlp, or roofline (the pure roofline: every kernel on its roof)")
        ->check(CLI::IsMember(compute_model_names()))
        ->capture_default_str();
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    add_allow_unknown_ops(c, allow_unknown_ops_);
    add_seq_len(c, seq_len_);
    whatif_.add_to(c, false);
    return c;
  }

  int run() override {
    // The roofline is one GPU's: what-ifs of its links, network or host change no kernel on it.
    for (size_t i = 0; i < whatif_.options.size(); ++i) {
      const std::string& axis = what_if_axes()[i];
      if (whatif_.options[i] && whatif_.options[i]->count() && axis != "flops_scale" && axis != "memory_bandwidth_scale")
        throw InputError(WhatIfFlags::flag_of(axis), "does not apply to roofline, which places kernels on one GPU (only --flops-scale and "
                                                     "--memory-bandwidth-scale change it; dtsim predict takes the others)");
    }
    if (batch_ < 1 || batch_ > kMaxBatchPerGpu)
      throw InputError("--batch-per-gpu", "must be in [1, " + std::to_string(kMaxBatchPerGpu) + "], got " + std::to_string(batch_));
    ModelLoadOptions options;  // ONNX shape inference runs at the per-GPU batch
    options.batch = batch_;
    options.allow_unknown_ops = allow_unknown_ops_;
    options.seq_len = seq_len_;
    Graph g = load_model(model_, options);
    print_notes(g);
    ClusterSpec c = apply_what_if(load_cluster(cluster_), whatif_.single());
    Precision p = parse_precision(precision_);
    if (!plot_.empty()) plot_format("--plot", plot_), find_gnuplot("--plot");
    RooflineReport r = roofline_report(g, c, batch_, p, compute_model_, parse_step_mode(mode_));
    std::string text = format_ == "json" ? dump(roofline_json(r)) : format_ == "csv" ? roofline_csv(r).to_csv() : roofline_text(r);
    if (!plot_.empty()) roofline_plot(r, plot_, "--plot").commit();
    emit(out_, text);
    return 0;
  }

 private:
  WhatIfFlags whatif_;
  StepModeNames mode_;
  std::string model_, cluster_ = "h100-sxm", precision_ = "fp32", compute_model_ = "auto", plot_, format_ = "table", out_;
  int64_t batch_ = 0;
  bool allow_unknown_ops_ = false;
  int64_t seq_len_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_roofline_command() { return std::make_unique<RooflineCommand>(); }

}  // namespace dtsim::cli
