#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "sim/framework.hpp"
#include "workload/model_json.hpp"
#include "report/report.hpp"
#include "report/trace.hpp"
#include "report/verdict_report.hpp"
#include "study/verdict.hpp"

namespace dtsim::cli {
namespace {

class PredictCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("predict", "Predict one training configuration: iteration time, breakdown, verdict, memory fit");
    c->add_option("--model", model_, "Zoo name, model JSON or ONNX file")->required();
    c->add_option("--gpus", gpus_, "Number of GPUs (placed on ceil(gpus / gpus_per_node) nodes)")->capture_default_str();
    c->add_option("--batch-per-gpu", batch_, "Samples per GPU per iteration")->required();
    c->add_flag("--layers", layers_, "Also print per-layer times (table format)");
    c->add_option("--trace", trace_, "Write the simulated iteration as a Chrome/Perfetto trace to FILE.json (ui.perfetto.dev)");
    cluster_nodes_.add_to(c);
    bucket_opt_ = c->add_option("--bucket-mb", bucket_mb_, "DDP's gradient bucket size in MiB (PyTorch's bucket_cap_mb; default: the cluster's, 25)");
    whatif_.add_to(c, false);
    train_.add_to(c);
    flags_.add_to(c);
    add_allow_unknown_ops(c, flags_.allow_unknown_ops);
    add_seq_len(c, flags_.seq_len);
    c->add_option("--grad-accum-steps", accum_, "Micro-batches per optimizer step (gradient accumulation; the reduction once per step, no_sync on the others)")
        ->capture_default_str();
    c->add_flag("--activation-checkpointing", ckpt_, "Checkpoint every block (torch.utils.checkpoint): only block inputs saved, the forward recomputed in the backward");
    c->add_option("--shard", shard_, "fsdp's sharding: full, grad-op or hybrid (default: configs/strategies.json's, full)");
    return c;
  }

  int run() override {
    Graph g = flags_.load_model(model_, batch_);
    ClusterSpec c = apply_framework(load_cluster(flags_.cluster), load_framework(flags_.framework));
    cluster_nodes_.apply(c);
    const WhatIf w = whatif_.single();
    c = apply_what_if(c, w);
    if (bucket_opt_->count()) set_bucket_mb(c, bucket_mb_, "--bucket-mb");
    const TrainGoal goal = train_.goal();
    if (!trace_.empty() && (trace_.size() < 5 || trace_.compare(trace_.size() - 5, 5, ".json") != 0))
      throw InputError("--trace", "'" + trace_ + "' must end in .json");
    TrainingFlags flags = flags_;
    flags.activation_checkpointing = ckpt_;
    TrainingConfig cfg = flags.config();
    cfg.grad_accum_steps = accum_;
    if (!shard_.empty() && shard_ != "full" && shard_ != "grad-op" && shard_ != "hybrid")
      throw InputError("--shard", "must be full, grad-op or hybrid, got '" + shard_ + "'");
    cfg.strategy_params.shard = shard_;
    cfg.gpus = gpus_;
    cfg.batch_per_gpu = batch_;
    cfg.record_kernels = !trace_.empty();
    StudyRow r = study_row(g, c, cfg, w, goal, true);
    const Prediction& p = r.p;

    std::string text;
    if (flags_.format == "json") {
      Json j = prediction_json(p);
      Json extra = study_row_json(r);
      for (const char* k : {"what_if", "memory", "fits", "comm_link", "train"})
        if (extra.contains(k)) j[k] = extra[k];
      j["bound"] = iteration_shares(p).bound;
      j["verdict"] = config_verdict(r);
      text = dump(j);
    } else if (flags_.format == "csv") {
      StudyColumns cols = study_columns_for({r});
      text = Table{study_columns(false, cols), {study_row_cells(r, false, cols)}}.to_csv();
    } else {
      text = prediction_text(p, layers_);
      if (!w.is_baseline()) text = "what-if: " + w.label() + "\n" + text;
      text += "\n" + memory_text(r.memory) + "\nVerdict: " + config_verdict(r) + "\n";
    }
    if (!trace_.empty()) write_file_atomic(trace_, chrome_trace(p, c.framework.iteration_overhead_s).dump() + "\n");
    emit(flags_.out, text);
    return 0;
  }

 private:
  TrainingFlags flags_;
  WhatIfFlags whatif_;
  TrainFlags train_;
  std::string model_, trace_;
  ClusterNodesFlag cluster_nodes_;
  int64_t gpus_ = 1, batch_ = 0;
  double bucket_mb_ = 25;
  bool layers_ = false, ckpt_ = false;
  int accum_ = 1;
  std::string shard_;
  CLI::Option* bucket_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(); }

}  // namespace dtsim::cli
