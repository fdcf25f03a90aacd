#include "report/report.hpp"

#include <cmath>
#include <cstdio>

#include "report/verdict_report.hpp"

namespace dtsim {

static Json strategy_json(const StrategyOutcome& o) {
  Json j = {{"name", o.name}, {"comm_share", o.comm_share}, {"trade_off", o.trade_off}};
  Json params = Json::object();
  for (const auto& [k, v] : o.parameters) params[k] = v;
  j["parameters"] = params;
  if (o.comm_bytes >= 0) j["comm_bytes"] = o.comm_bytes;
  if (!o.phases.empty()) {
    Json phases = Json::array();
    for (const auto& ph : o.phases)
      phases.push_back({{"phase", ph.name}, {"fraction_of_steps", ph.fraction_of_steps}, {"step_s", ph.step_s}, {"comm_s", ph.comm_s}});
    j["phases"] = phases;
  }
  return j;
}

static std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}

Json prediction_summary_json(const Prediction& p) {
  Json j = Json{
      {"model", p.model},
      {"cluster", p.cluster},
      {"gpu", p.gpu},
      {"gpus", p.gpus},
      {"nodes", p.nodes},
      {"batch_per_gpu", p.batch_per_gpu},
      {"global_batch", p.batch_per_gpu * p.gpus * p.grad_accum_steps},
      {"precision", p.precision},
      {"memory_format", memory_format_name(p.mode.memory_format)},
      {"optimizer", optimizer_name(p.mode.optimizer)},
      {"execution", execution_name(p.mode.execution)},
      {"compute_model", p.compute_model},
      {"compute_model_note", p.compute_note},
      {"algo", p.algo},
      {"overlap", p.overlap},
      {"iteration_s", p.iteration_s},
      {"throughput_samples_per_s", p.throughput_samples_per_s},
      {"compute_s", p.compute_s},
      {"comm_s", p.comm_s},
      {"exposed_comm_s", p.exposed_comm_s},
      {"host_idle_s", p.host_idle_s},
      {"optimizer_s", p.optimizer_s},
      {"grad_bytes", p.grad_bytes},
      {"single_gpu_iteration_s", p.single_gpu_iteration_s},
      {"scaling_efficiency", p.scaling_efficiency},
      {"bottleneck", p.bottleneck},
      {"comm_bottleneck", p.comm_bottleneck},
  };
  if (p.tokens_per_sample > 0) {  // language models only, so that other models' outputs keep their fields
    j["sequence_length"] = p.tokens_per_sample;
    j["throughput_tokens_per_s"] = p.throughput_tokens_per_s;
  }
  if (p.grad_accum_steps > 1) j["grad_accum_steps"] = p.grad_accum_steps;  // given only, so that other outputs keep their fields
  if (p.mode.activation_checkpointing) j["activation_checkpointing"] = true;
  j["strategy"] = strategy_json(p.strategy);
  Json priced = Json::object();
  for (int k = 0; k < kKernelKinds; ++k) {
    const KindPricing& kp = p.timeline.pricing[k];
    if (kp.mlp_s + kp.roofline_s > 0)
      priced[kind_name(static_cast<KernelKind>(k))] = {{"mlp_s", kp.mlp_s}, {"roofline_s", kp.roofline_s}, {"extrapolated_s", kp.extrapolated_s}};
  }
  j["priced_by"] = std::move(priced);
  j["extrapolated_share"] = extrapolated_share(p);
  return j;
}

double extrapolated_share(const Prediction& p) {
  return p.timeline.compute_s > 0 ? p.timeline.extrapolated_s / p.timeline.compute_s : 0;
}

std::string priced_by_text(const Prediction& p) {
  std::string s;
  for (int k = 0; k < kKernelKinds; ++k) {
    const KindPricing& kp = p.timeline.pricing[k];
    const double all = kp.mlp_s + kp.roofline_s;
    if (all <= 0) continue;
    s += (s.empty() ? "" : ", ") + std::string(kind_name(static_cast<KernelKind>(k))) + " ";
    if (kp.roofline_s <= 0) s += "measured";
    else if (kp.mlp_s <= 0) s += "roofline";
    else s += "measured " + pct(kp.mlp_s / all) + ", roofline the rest";
    if (kp.extrapolated_s > 0) s += " (" + pct(kp.extrapolated_s / all) + " beyond the measured range)";
  }
  // FP16 autocast is priced with the bf16 data's predictors: cuDNN and cuBLAS run the same kernels
  // (compute/kernel_key.cpp dataset_math).
  if (p.precision == "fp16") s += "; fp16 convolutions, matmuls and vector kernels from the bf16 measurements (the same kernels)";
  return s;
}

Json prediction_json(const Prediction& p) {
  Json j = prediction_summary_json(p);
  Json layers = Json::array();
  for (size_t i = 0; i < p.timeline.layers.size(); ++i) {
    const auto& l = p.timeline.layers[i];
    layers.push_back({{"name", p.layer_names[i]}, {"fwd_s", l.fwd_s}, {"bwd_s", l.bwd_s}, {"grad_bytes", l.grad_bytes}});
  }
  j["layers"] = std::move(layers);
  Json buckets = Json::array();
  for (const auto& b : p.timeline.buckets)
    buckets.push_back({{"bytes", b.bytes}, {"tensors", b.tensors}, {"ready_s", b.ready_s}, {"start_s", b.start_s}, {"end_s", b.end_s}});
  j["buckets"] = std::move(buckets);
  return j;
}

std::vector<std::string> prediction_columns(bool human) {
  if (human)
    return {"model", "gpus", "nodes", "batch/gpu", "iteration", "samples/s", "compute", "comm", "exposed", "host idle", "efficiency", "bottleneck"};
  return {"model", "cluster", "gpus", "nodes", "batch_per_gpu", "precision", "iteration_s", "throughput_samples_per_s", "compute_s", "comm_s",
          "exposed_comm_s", "host_idle_s", "optimizer_s", "scaling_efficiency", "bottleneck", "memory_format", "optimizer", "execution"};
}

// Throughput: whole numbers once past a thousand, four significant digits below.
static std::string fmt_rate(double x) {
  char b[32];
  if (x >= 1000) std::snprintf(b, sizeof b, "%.0f", x);
  else std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}


std::vector<std::string> prediction_row(const Prediction& p, bool human) {
  if (human)
    return {p.model, std::to_string(p.gpus), std::to_string(p.nodes), std::to_string(p.batch_per_gpu), fmt_time(p.iteration_s),
            fmt_rate(p.throughput_samples_per_s), fmt_time(p.compute_s), fmt_time(p.comm_s), fmt_time(p.exposed_comm_s),
            fmt_time(p.host_idle_s), pct(p.scaling_efficiency), p.bottleneck};
  return {p.model, p.cluster, std::to_string(p.gpus), std::to_string(p.nodes), std::to_string(p.batch_per_gpu), p.precision,
          fmt_sig(p.iteration_s, 6), fmt_sig(p.throughput_samples_per_s, 6), fmt_sig(p.compute_s, 6), fmt_sig(p.comm_s, 6),
          fmt_sig(p.exposed_comm_s, 6), fmt_sig(p.host_idle_s, 6), fmt_sig(p.optimizer_s, 6), fmt_sig(p.scaling_efficiency, 6), p.bottleneck,
          memory_format_name(p.mode.memory_format), optimizer_name(p.mode.optimizer), execution_name(p.mode.execution)};
}

std::string step_mode_text(const StepMode& m) {
  return std::string(memory_format_name(m.memory_format)) + " tensors, " + optimizer_name(m.optimizer) + ", " + execution_name(m.execution);
}

std::string prediction_text(const Prediction& p, bool with_layers) {
  std::string s;
  char b[256];
  std::snprintf(b, sizeof b, "%s on %s: %lld GPU(s) on %lld node(s), batch %lld per GPU (global %lld), %s, %s\n", p.model.c_str(), p.cluster.c_str(),
                static_cast<long long>(p.gpus), static_cast<long long>(p.nodes), static_cast<long long>(p.batch_per_gpu),
                static_cast<long long>(p.batch_per_gpu * p.gpus), p.precision.c_str(), step_mode_text(p.mode).c_str());
  s += b;
  if (p.tokens_per_sample > 0) s += "sequences of " + std::to_string(p.tokens_per_sample) + " tokens (a sample is one sequence)\n";
  if (p.grad_accum_steps > 1)
    s += "gradient accumulation: " + std::to_string(p.grad_accum_steps) + " micro-batches per optimizer step, " +
         std::to_string(p.batch_per_gpu * p.gpus * p.grad_accum_steps) + " samples per step; the iteration below is the whole step\n";
  if (p.mode.activation_checkpointing) s += "activation checkpointing per block: each block's forward recomputed in its backward\n";
  Table t;
  t.header = {"quantity", "value", "note"};
  double it = p.iteration_s;
  t.rows = {
      {"iteration", fmt_time(it), ""},
      {"throughput", fmt_rate(p.throughput_samples_per_s) + " samples/s" + (p.tokens_per_sample > 0 ? ", " + fmt_rate(p.throughput_tokens_per_s) + " tokens/s" : ""),
       ""},
      {"compute", fmt_time(p.compute_s), pct(p.compute_s / it) + " of the iteration; " + p.compute_note},
      {"priced by", "", priced_by_text(p)},
      {"communication", fmt_time(p.comm_s),
       p.strategy.name == "dp" || p.strategy.name.empty()
           ? fmt_count(static_cast<double>(p.grad_bytes)) + "B of gradients, " + p.algo + " all-reduce" +
                 (p.gpus > 1 ? ", limited by the " + p.comm_bottleneck : "") + (p.overlap ? ", overlapped" : ", after backward")
           : "per step, as the " + p.strategy.name + " strategy communicates (below)"},
      {"exposed communication", fmt_time(p.exposed_comm_s), pct(p.exposed_comm_s / it) + " of the iteration"},
      {"host-bound idle", fmt_time(p.host_idle_s), pct(p.host_idle_s / it) + " of the iteration"},
      {"optimizer", fmt_time(p.optimizer_s), ""},
      {"scaling efficiency", pct(p.scaling_efficiency), "t(1 GPU) = " + fmt_time(p.single_gpu_iteration_s) + " at the same batch per GPU"},
      {"bottleneck", p.bottleneck, ""},
  };
  // A prediction that rests mostly on extrapolation says so where it is read (docs/design.md §7).
  if (const double share = extrapolated_share(p); share > 0.10)
    t.rows.insert(t.rows.begin() + 4, {"warning", pct(share) + " of GPU time",
                                       "priced by measured predictors outside the shapes they were trained on: read it as an estimate"});
  const StrategyOutcome& st = p.strategy;
  std::string params;
  for (const auto& [k, v] : st.parameters) params += (params.empty() ? "" : ", ") + k + " " + fmt_sig(v, 4);
  t.rows.push_back({"strategy", st.name, params});
  t.rows.push_back({"communication share", pct(st.comm_share), "communication time / iteration time"});
  if (st.comm_bytes >= 0 && st.name != "dp")
    t.rows.push_back({"bytes moved", fmt_count(st.comm_bytes) + "B", "per GPU per step, sent over its links"});
  for (const auto& ph : st.phases)
    t.rows.push_back({"  phase " + ph.name, fmt_time(ph.step_s), pct(ph.fraction_of_steps) + " of the steps; communication " + fmt_time(ph.comm_s) + " per step"});
  s += t.to_text();
  s += "Trades away: " + st.trade_off + "\n";
  if (with_layers) {
    Table lt;
    lt.header = {"layer", "fwd", "bwd", "grad bytes"};
    for (size_t i = 0; i < p.timeline.layers.size(); ++i) {
      const auto& l = p.timeline.layers[i];
      lt.rows.push_back({p.layer_names[i], fmt_time(l.fwd_s), fmt_time(l.bwd_s), std::to_string(l.grad_bytes)});
    }
    s += "\n" + lt.to_text();
  }
  return s;
}

Json model_summary_json(const Graph& g) {
  Json j = Json{{"name", g.name},
              {"params", g.params()},
              {"param_tensors", g.param_tensors()},
              {"fwd_macs_per_sample", g.fwd_macs_per_sample()},
              {"layers", g.layers.size()},
              {"input", {g.input.c, g.input.h, g.input.w}},
              {"source", g.source}};
  if (g.token_input) j["sequence_length"] = g.tokens_per_sample();  // the input is token ids
  return j;
}

Json study_row_json(const StudyRow& r) {
  Json j = prediction_summary_json(r.p);
  j["what_if"] = r.what_if.to_json();
  j["memory"] = memory_json(r.memory);
  j["fits"] = r.memory.fits;
  j["comm_link"] = r.link;
  j["verdict"] = short_verdict(r);
  if (r.train) {
    Json t = {{"steps_per_epoch", r.train->steps_per_epoch}, {"steps", r.train->steps}, {"time_s", r.train->time_s}, {"gpu_hours", r.train->gpu_hours}};
    if (r.train->cost) t["cost"] = *r.train->cost;
    j["train"] = t;
  }
  return j;
}

StudyColumns study_columns_for(const std::vector<StudyRow>& rows) {
  StudyColumns c;
  for (const auto& r : rows) {
    c.what_if |= !r.what_if.is_baseline() || !r.what_if.name.empty();
    c.strategy |= r.p.strategy.name != "dp";
    c.train |= r.train.has_value();
    c.cost |= r.train && r.train->cost.has_value();
    c.tokens |= r.p.tokens_per_sample > 0;
  }
  return c;
}

std::vector<std::string> study_columns(bool human, const StudyColumns& c) {
  std::vector<std::string> h = prediction_columns(human);
  if (human) {
    if (c.tokens) h.insert(h.begin() + 6, "tokens/s");  // after samples/s
    if (c.what_if) h.insert(h.begin() + 1, "what-if");
    if (c.strategy) h.insert(h.end(), {"strategy", "comm share"});
    h.push_back("memory/GPU");
    if (c.train) h.insert(h.end(), {"time to train", "GPU-hours"});
    if (c.cost) h.push_back("cost");
    return h;
  }
  h.insert(h.end(), {"what_if", "memory_device_bytes", "fits"});
  if (c.tokens) h.insert(h.end(), {"sequence_length", "throughput_tokens_per_s"});
  if (c.strategy) h.insert(h.end(), {"strategy", "comm_share"});
  if (c.train) h.insert(h.end(), {"train_time_s", "gpu_hours"});
  if (c.cost) h.push_back("cost");
  return h;
}

std::vector<std::string> study_row_cells(const StudyRow& r, bool human, const StudyColumns& c) {
  std::vector<std::string> v = prediction_row(r.p, human);
  const bool lm = r.p.tokens_per_sample > 0;
  if (human) {
    if (c.tokens) v.insert(v.begin() + 6, lm ? fmt_rate(r.p.throughput_tokens_per_s) : "");
    if (c.what_if) v.insert(v.begin() + 1, r.what_if.label());
    if (c.strategy) v.insert(v.end(), {r.p.strategy.name, pct(r.p.strategy.comm_share)});
    v.push_back(fmt_bytes(r.memory.device_bytes) + (r.memory.fits ? "" : " NO FIT"));
    if (c.train) {
      v.push_back(r.train ? fmt_duration(r.train->time_s) : "");
      v.push_back(r.train ? fmt_sig(r.train->gpu_hours, 4) : "");
    }
    if (c.cost) v.push_back(r.train && r.train->cost ? fmt_sig(*r.train->cost, 4) : "");
    return v;
  }
  v.insert(v.end(), {r.what_if.label(), fmt_number(std::round(r.memory.device_bytes)), r.memory.fits ? "true" : "false"});
  if (c.tokens) v.insert(v.end(), {lm ? std::to_string(r.p.tokens_per_sample) : "", lm ? fmt_sig(r.p.throughput_tokens_per_s, 6) : ""});
  if (c.strategy) v.insert(v.end(), {r.p.strategy.name, fmt_sig(r.p.strategy.comm_share, 6)});
  if (c.train) {
    v.push_back(r.train ? fmt_sig(r.train->time_s, 6) : "");
    v.push_back(r.train ? fmt_sig(r.train->gpu_hours, 6) : "");
  }
  if (c.cost) v.push_back(r.train && r.train->cost ? fmt_sig(*r.train->cost, 6) : "");
  return v;
}

std::string memory_text(const MemoryFit& m) {
  Table t{{"memory per GPU", "bytes", "of the GPU"}, {}};
  auto row = [&](const char* what, double bytes) {
    if (bytes <= 0) return;
    t.rows.push_back({what, fmt_bytes(bytes), pct(bytes / m.capacity_bytes)});
  };
  row("parameters (FP32)", m.weights_bytes);
  row("16-bit weight copies (autocast)", m.weight_copies_bytes);
  row("gradients (FP32)", m.gradients_bytes);
  row("optimizer state", m.optimizer_bytes);
  row("activations kept for backward", m.activations_bytes);
  row("backward transient", m.transient_bytes);
  row("model output (held by the loop)", m.output_held_bytes);
  row("convolution workspace", m.workspace_bytes);
  row("DDP gradient buckets", m.buckets_bytes);
  row("allocator reserve", m.reserve_bytes);
  row("NCCL buffers", m.nccl_bytes);
  row("CUDA context", m.context_bytes);
  row("total on the device", m.device_bytes);
  return t.to_text() + "PyTorch's allocated peak (torch.cuda.max_memory_allocated): " + fmt_bytes(m.allocated_peak_bytes) + "; " + memory_summary(m) + "\n";
}

}  // namespace dtsim
