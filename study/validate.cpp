#include "study/validate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/output.hpp"
#include "sim/framework.hpp"
#include "sim/memory.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"

namespace dtsim {
namespace fs = std::filesystem;

namespace {

// The GPU preset (configs/gpus, configs/clusters) of a device name as NVML / PyTorch report it.
std::string gpu_preset(const std::string& name) {
  // First match wins: the more specific names first ("NVIDIA H100 NVL", "NVIDIA H100 PCIe",
  // "NVIDIA A100-SXM4-40GB" before "H100" and "A100").
  const std::pair<const char*, const char*> known[] = {{"H200", "h200-sxm"}, {"H100 NVL", "h100-nvl"}, {"H100 PCIE", "h100-pcie"},
                                                       {"H100", "h100-sxm"}, {"A100-SXM4-40GB", "a100-40gb-sxm"}, {"A100", "a100-sxm"},
                                                       {"V100", "v100-sxm2"}, {"L40S", "l40s"},           {"B200", "b200"}};
  std::string upper = name;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const auto& [key, preset] : known)
    if (upper.find(key) != std::string::npos) return preset;
  return "";
}

std::string scalar_text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number()) return fmt_sig(j.get<double>());
  return "";
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string pct(double e) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << (e >= 0 ? "+" : "") << 100.0 * e << "%";
  return s.str();
}

std::string pct_abs(double e) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << 100.0 * e << "%";
  return s.str();
}

std::string gb3(double bytes) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << bytes / 1e9;
  return o.str();
}

std::string ms(double s) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << 1e3 * s;
  return o.str();
}

// Fields the schema documents (validation/README.md) that describe how the numbers were made and
// that dtsim does not read: accepted when present, so that anything else is an unknown field.
void accept(JsonObject& o, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (o.has(k)) o.raw(k);
}

}  // namespace

std::string run_label(const MeasuredRun& r) { return fs::path(r.file).stem().string(); }

ClusterSpec split_node_cluster(const ClusterSpec& c, int64_t group_size) {
  if (group_size < 1 || group_size > c.gpus_per_node || c.gpus_per_node % group_size != 0)
    throw InputError("group_size", "must divide the cluster's " + std::to_string(c.gpus_per_node) + " GPUs per node, got " +
                                       std::to_string(group_size));
  // Groups as large as the cluster's nodes are its nodes (nodes emulated with NCCL_HOSTID, or real
  // ones): their network is the cluster's own.
  if (group_size == c.gpus_per_node) return c;
  ClusterSpec s = c;
  const int g = static_cast<int>(group_size);
  s.name = c.name + "-split" + std::to_string(g);
  s.nodes = c.nodes * (c.gpus_per_node / g);
  s.gpus_per_node = g;
  // The "network" between the parts is the fabric inside the real node: every GPU keeps its own
  // NVLink/NVSwitch bandwidth and latency towards the other part.
  s.inter.nics_per_node = g;
  s.inter.nic_bandwidth_Bps = c.intra.bandwidth_Bps;
  s.inter.latency_s = c.intra.latency_s;
  s.inter.oversubscription = 1;
  return s;
}

namespace {

// DDP's settings: overlap and the bucket caps.
void parse_ddp(JsonObject& o, MeasuredRun& r) {
  JsonObject ddp = o.object("ddp");
  r.overlap = ddp.boolean_or("overlap", true);
  r.first_bucket_bytes = ddp.integer("first_bucket_bytes", 1, int64_t(1) << 40);
  r.bucket_bytes = ddp.integer("bucket_bytes", 1, int64_t(1) << 40);
  accept(ddp, {"broadcast_buffers", "gradient_as_bucket_view", "parameters", "buckets", "allreduce"});
  ddp.reject_unknown();
}

// The iteration time: the median, and the 10th and 90th percentiles around it.
void parse_iteration_time(JsonObject& o, MeasuredRun& r) {
  JsonObject t = o.object("iteration_time_s");
  r.iteration_s = t.positive("median", 1e6);
  r.p10_s = t.number_or("p10", r.iteration_s, 0.0, 1e6);
  r.p90_s = t.number_or("p90", r.iteration_s, 0.0, 1e6);
  if (r.p10_s > r.iteration_s) t.fail("p10", "must be at most the median");
  if (r.p90_s < r.iteration_s) t.fail("p90", "must be at least the median");
  for (const char* k : {"min", "max", "mean", "spread"}) t.number_or(k, 0.0, 0.0, 1e6);
  accept(t, {"samples"});
  t.reject_unknown();
}

// Where the run ran: the GPU (and so the cluster preset), the date and the software versions.
void parse_provenance(const Json& doc, JsonObject& o, MeasuredRun& r) {
  JsonObject prov = o.object("provenance");
  JsonObject gpu = prov.object("gpu");
  r.gpu_name = gpu.str("name");
  std::string short_name = gpu.str_or("short_name", "");
  r.cluster = gpu_preset(short_name.empty() ? r.gpu_name : short_name);
  if (r.cluster.empty()) gpu.fail("name", "no GPU preset for '" + r.gpu_name + "' (known: H100 [SXM, PCIe, NVL], H200, A100 [80GB, SXM4-40GB], V100, L40S, B200)");
  r.date_utc = prov.str_or("date_utc", "");
  // Versions: the harness keeps them under provenance.software, the PyTorch script at the top.
  std::vector<std::string> parts;
  auto add = [&](const std::string& label, const Json& j) {
    std::string v = scalar_text(j);
    if (!v.empty()) parts.push_back(label + " " + v);
  };
  const Json& pj = doc.at("provenance");
  const Json& sw = pj.contains("software") && pj.at("software").is_object() ? pj.at("software") : pj;
  for (const char* k : {"torch", "driver", "cuda_runtime", "cudnn", "cublas", "nccl"})
    if (sw.contains(k)) add(std::string(k) == "cuda_runtime" ? "CUDA" : k, sw.at(k));
  if (&sw != &pj && pj.contains("torch")) add("torch", pj.at("torch"));
  for (size_t i = 0; i < parts.size(); ++i) r.versions += (i ? ", " : "") + parts[i];
}

// What the run kept in GPU memory: PyTorch's allocated peak and the input batches it holds.
void parse_memory(JsonObject& o, MeasuredRun& r) {
  if (o.has("memory")) {
    JsonObject mem = o.object("memory");
    if (mem.has("peak_allocated_bytes")) r.peak_allocated_bytes = mem.number("peak_allocated_bytes", 0.0, 1e15);
  }
  if (o.has("dataset")) {
    // "synthetic: 4 batches per rank ...": the batches the program keeps on the GPU.
    const std::string d = o.str("dataset");
    const size_t at = d.find(" batches");
    if (at != std::string::npos) {
      size_t b = at;
      while (b > 0 && std::isdigit(static_cast<unsigned char>(d[b - 1]))) --b;
      if (b < at) r.input_batches = std::stod(d.substr(b, at - b));
    }
  }
}

// Per-layer forward and backward times, summed over a layer's kernels; the optimizer is not a layer.
// An entry of `calls` > 1 (a concatenation's backward copies, a fan-out's gradient accumulations) holds
// the median of one call (the harness's layers_note), so it counts calls times.
void parse_layers(JsonObject& o, const std::string& what, MeasuredRun& r) {
  if (!o.has("layers")) return;
  const Json& layers = o.raw("layers");
  if (!layers.is_array()) o.fail("layers", "must be an array");
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < layers.size(); ++i) {
    JsonObject l = array_object(layers, i, what, "$.layers");
    std::string name = l.str("name");
    std::string pass = l.str("pass");
    const double calls = l.number_or("calls", 1.0, 0.0, 1e9);
    double time = l.number("time_s", 0.0, 1e6) * calls;
    accept(l, {"op", "kernel_kind", "shape", "start_s"});
    l.reject_unknown();
    if (pass == "update") continue;  // the optimizer, not a layer
    auto [it, fresh] = index.emplace(name, r.layers.size());
    if (fresh) r.layers.push_back({name, 0, 0});
    MeasuredLayer& m = r.layers[it->second];
    (pass.rfind("fwd", 0) == 0 ? m.fwd_s : m.bwd_s) += time;
  }
}

// The harness's other schemes (validation/harness/train.cu): which one ran and its parameters.
// How the run was made beyond eager NCHW SGD (validation/pytorch/ddp_reference.py's "execution"):
// memory format, optimizer and execution by PyTorch's names; absent: contiguous, sgd, eager.
void parse_step_mode_of(JsonObject& o, MeasuredRun& r) {
  if (!o.has("execution")) return;
  JsonObject ex = o.object("execution");
  r.mode.memory_format = ex.str("memory_format");
  r.mode.optimizer = ex.str("optimizer");
  r.mode.execution = ex.str("execution");
  ex.str_or("torch_compile", "");
  ex.reject_unknown();
  if (!parse_memory_format(r.mode.memory_format)) ex.fail("memory_format", "must be contiguous or channels_last, got \"" + r.mode.memory_format + "\"");
  if (!parse_optimizer(r.mode.optimizer)) ex.fail("optimizer", "must be sgd, adamw or adam, got \"" + r.mode.optimizer + "\"");
  if (!parse_execution(r.mode.execution))
    ex.fail("execution", "must be eager, cuda-graphs, compile or compile-cuda-graphs, got \"" + r.mode.execution + "\"");
}

void parse_strategy(JsonObject& o, MeasuredRun& r) {
  if (!o.has("strategy")) return;
  JsonObject st = o.object("strategy");
  r.scheme = st.str("name");
  if (r.scheme == "hierarchical" || r.scheme == "hierarchical-leader") {
    r.group_size = st.integer("group_size", 1, r.gpus);
    if (r.gpus % r.group_size != 0) st.fail("group_size", "must divide gpus (" + std::to_string(r.gpus) + ")");
    accept(st, {"allreduce", "groups", "description", "step_time_s"});
  } else if (r.scheme == "local-sgd") {
    r.average_every = st.integer("average_every", 1, 1 << 20);
    JsonObject steps = st.object("step_time_s");
    // The mean step over one period (tau - 1 local steps and one averaging step) is what the
    // strategy predicts; the run's all-steps statistics are not.
    r.iteration_s = steps.positive("period_mean_s", 1e6);
    r.p10_s = r.p90_s = r.iteration_s;
    accept(steps, {"averaging_steps", "local_steps", "period_mean_note", "full_periods_mean_s", "full_periods"});
    steps.reject_unknown();
    accept(st, {"description", "parameter_allreduce_bytes", "parameter_allreduce_s", "params_identical_before_final_average",
                "final_average_for_check", "check_note"});
  } else if (r.scheme != "dp") {
    st.fail("name", "unknown scheme '" + r.scheme + "' (known: dp, hierarchical, hierarchical-leader, local-sgd)");
  }
  st.reject_unknown();
}

}  // namespace

MeasuredRun parse_measured_run(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  MeasuredRun r;
  r.file = what;
  const std::string schema = o.str("schema");
  if (schema != "dtsim-measured-run/1") o.fail("schema", "must be \"dtsim-measured-run/1\", got \"" + schema + "\"");
  r.source = o.str("source");
  r.framework = o.str("framework");
  if (r.framework != "harness" && r.framework != "pytorch") o.fail("framework", "must be \"harness\" or \"pytorch\", got \"" + r.framework + "\"");
  r.model = o.str("model");
  r.gpus = o.integer("gpus", 1, 1 << 20);
  r.batch_per_gpu = o.integer("batch_per_gpu", 1, kMaxBatchPerGpu);
  r.sequence_length = o.integer_or("sequence_length", 0, 1, int64_t{1} << 20);  // --seq-len's range
  r.precision = o.str("precision");
  try {
    parse_precision(r.precision);
  } catch (const InputError& e) {
    o.fail("precision", e.rule());
  }
  parse_ddp(o, r);
  parse_iteration_time(o, r);
  parse_provenance(doc, o, r);
  parse_memory(o, r);
  parse_layers(o, what, r);
  parse_strategy(o, r);
  parse_step_mode_of(o, r);
  accept(o, {"source", "model_file", "torchvision_model", "nodes", "gpus_per_node", "precision_detail", "optimizer", "conv_api",
             "conv_algorithm_selection", "layout", "iterations", "iteration_timing", "throughput_samples_per_s", "breakdown_s",
             "layers_note", "allreduces", "checks", "autotune", "setup_s", "config_wall_s", "warmup_wall_s", "dataset",
             "configs_before_in_process", "host_sync_every_step", "host_probe_us", "model_source", "throughput_tokens_per_s"});
  o.reject_unknown();
  return r;
}

std::vector<std::string> measured_run_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") in_dir.push_back(e.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) throw InputError("--measured", "'" + p + "' holds no .json file");
      for (auto& f : in_dir)
        if (seen.insert(f).second) files.push_back(f);
    } else if (fs::is_regular_file(p, ec)) {
      if (seen.insert(p).second) files.push_back(p);
    } else {
      throw InputError("--measured", "'" + p + "' is neither a file nor a folder");
    }
  }
  return files;
}

ValidationRow validate_run(const MeasuredRun& run, const ValidationOptions& opt) {
  ValidationRow row;
  row.run = run;
  Graph g;
  try {
    ModelLoadOptions options;
    options.seq_len = run.sequence_length;  // the rules of --seq-len (a language model's, within its positions)
    g = load_model(run.model, options);
  } catch (const InputError& e) {
    throw InputError(run.file + (e.where() == "--seq-len" ? ": $.sequence_length" : ": $.model"), e.rule());
  }
  ClusterSpec c = load_cluster(opt.cluster.empty() ? run.cluster : opt.cluster);
  if (!opt.cluster.empty() && c.gpu.name != load_cluster(run.cluster).gpu.name)
    throw InputError(run.file + ": $.provenance.gpu.name", "the run's GPU (" + run.gpu_name + ") is not --cluster " + opt.cluster + "'s (" + c.gpu.name + ")");
  if (!opt.cluster.empty()) row.run.cluster = opt.cluster;
  if (run.scheme == "hierarchical" || run.scheme == "hierarchical-leader") {
    try {
      c = split_node_cluster(c, run.group_size);
    } catch (const InputError& e) {
      throw InputError(run.file + ": $.strategy.group_size", e.rule());
    }
  }
  const FrameworkProfile f = load_framework(opt.framework.empty() ? default_framework_profile(run.framework) : opt.framework);
  c = apply_framework(c, f);
  c.framework.first_bucket_bytes = run.first_bucket_bytes;
  c.framework.bucket_bytes = run.bucket_bytes;
  TrainingConfig cfg;
  cfg.gpus = run.gpus;
  cfg.batch_per_gpu = run.batch_per_gpu;
  cfg.precision = parse_precision(run.precision);
  cfg.overlap = run.overlap;
  cfg.mode = parse_step_mode(run.mode);
  cfg.compute_model = opt.compute_model;
  cfg.algo = opt.algo;
  cfg.strategy = run.scheme;  // dp, hierarchical, hierarchical-leader, local-sgd: dtsim's strategies of the same names
  if (run.scheme == "local-sgd") cfg.strategy_params.tau = static_cast<int>(run.average_every);
  row.strategy = run.scheme;
  const Prediction p = predict(g, c, cfg);
  row.framework_profile = f.name;
  row.compute_model = p.compute_model;
  row.predicted_s = p.iteration_s;
  row.error = (p.iteration_s - run.iteration_s) / run.iteration_s;
  row.predicted_host_idle_s = p.host_idle_s;
  row.predicted_exposed_comm_s = p.exposed_comm_s;
  row.bottleneck = p.bottleneck;
  // A step replayed from CUDA graphs allocates from the graphs' private pool, captured during the
  // warm-up: the measured iterations' allocator counters do not see it (resnet50 b128 bf16
  // compile-cuda-graphs on one H200: 0.82 GB counted against 6.4 GB in the warm-up), so such a run's
  // peak is not compared.
  const bool graph_pool = replays_graphs(cfg.mode.execution);
  if (run.peak_allocated_bytes > 0 && !graph_pool) {
    const MemoryFit m = memory_fit(g, run.batch_per_gpu, cfg.precision, run.gpus, c.gpu, default_memory_spec(), run.input_batches, cfg.mode.optimizer);
    row.has_memory = true;
    row.predicted_peak_bytes = m.allocated_peak_bytes;
    row.predicted_peak_phase = m.peak_phase;
    row.memory_error = (m.allocated_peak_bytes - run.peak_allocated_bytes) / run.peak_allocated_bytes;
  }

  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < p.layer_names.size(); ++i) by_name.emplace(p.layer_names[i], i);
  std::vector<double> abs_errors;
  for (const auto& m : run.layers) {
    auto it = by_name.find(m.name);
    if (it == by_name.end()) continue;  // (iteration), loss helpers: no layer of the model
    const LayerTimes& lt = p.timeline.layers[it->second];
    LayerError e{m.name, m.fwd_s, lt.fwd_s, m.bwd_s, lt.bwd_s, 0};
    double meas = m.fwd_s + m.bwd_s;
    if (meas > 0) {
      e.error = (lt.fwd_s + lt.bwd_s - meas) / meas;
      abs_errors.push_back(std::fabs(e.error));
    }
    row.layers.push_back(e);
  }
  row.layer_median_abs_error = median_of(abs_errors);
  return row;
}

std::vector<ValidationRow> validate_runs(const std::vector<MeasuredRun>& runs, const ValidationOptions& opt) {
  std::vector<ValidationRow> rows;
  rows.reserve(runs.size());
  for (const auto& r : runs) rows.push_back(validate_run(r, opt));
  return rows;
}

std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows) {
  std::vector<std::string> groups = {"all"};
  for (const auto& r : rows)
    if (std::find(groups.begin(), groups.end(), r.run.framework) == groups.end()) groups.push_back(r.run.framework);
  std::vector<ErrorSummary> out;
  for (const auto& grp : groups) {
    ErrorSummary s;
    s.group = grp;
    std::vector<double> errs;
    for (const auto& r : rows) {
      if (grp != "all" && r.run.framework != grp) continue;
      double a = std::fabs(r.error);
      errs.push_back(a);
      if (a >= s.max_abs) {
        s.max_abs = a;
        s.worst = run_label(r.run) + " (" + r.run.framework + ")";
      }
    }
    s.runs = static_cast<int>(errs.size());
    if (errs.empty()) continue;
    double sum = 0;
    for (double e : errs) sum += e;
    s.mean_abs = sum / errs.size();
    s.median_abs = median_of(errs);
    out.push_back(s);
  }
  return out;
}

// The strategy and its parameter: dp, hierarchical/2 (group size), local-sgd/4 (tau).
static std::string strategy_cell(const ValidationRow& r) {
  if (r.run.group_size > 0) return r.strategy + "/" + std::to_string(r.run.group_size);
  if (r.run.average_every > 0) return r.strategy + "/" + std::to_string(r.run.average_every);
  return r.strategy;
}

static std::vector<std::string> row_cells(const ValidationRow& r) {
  return {run_label(r.run), r.run.framework, r.run.model, std::to_string(r.run.gpus), std::to_string(r.run.batch_per_gpu),
          r.run.precision, r.run.overlap ? "on" : "off", ms(r.run.iteration_s), ms(r.predicted_s), pct(r.error),
          r.layers.empty() ? "-" : pct_abs(r.layer_median_abs_error), r.bottleneck,
          r.has_memory ? gb3(r.run.peak_allocated_bytes) : "-", r.has_memory ? gb3(r.predicted_peak_bytes) : "-",
          r.has_memory ? pct(r.memory_error) : "-", strategy_cell(r)};
}

static const std::vector<std::string> kHeader = {"run", "framework", "model", "gpus", "batch", "precision", "overlap",
                                                 "measured_ms", "predicted_ms", "error", "layer_median_abs_error", "predicted_bound",
                                                 "measured_peak_GB", "predicted_peak_GB", "memory_error", "strategy"};

std::string validation_table(const std::vector<ValidationRow>& rows, bool layers) {
  Table t{kHeader, {}};
  for (const auto& r : rows) t.rows.push_back(row_cells(r));
  std::string text = t.to_text();
  if (layers) {
    for (const auto& r : rows) {
      if (r.layers.empty()) continue;
      Table lt{{"layer", "measured_fwd_ms", "predicted_fwd_ms", "measured_bwd_ms", "predicted_bwd_ms", "error"}, {}};
      for (const auto& l : r.layers)
        lt.rows.push_back({l.name, ms(l.measured_fwd_s), ms(l.predicted_fwd_s), ms(l.measured_bwd_s), ms(l.predicted_bwd_s), pct(l.error)});
      text += "\nLayers of " + run_label(r.run) + ":\n" + lt.to_text();
    }
  }
  {
    std::vector<double> errs;
    std::string worst;
    double worst_abs = -1;
    for (const auto& r : rows)
      if (r.has_memory) {
        errs.push_back(std::fabs(r.memory_error));
        if (std::fabs(r.memory_error) > worst_abs) {
          worst_abs = std::fabs(r.memory_error);
          worst = run_label(r.run);
        }
      }
    if (!errs.empty()) {
      double sum = 0;
      for (double e : errs) sum += e;
      text += "\nPeak memory (allocated, steady state; " + std::to_string(errs.size()) + " runs): mean |error| " + pct_abs(sum / errs.size()) +
              ", median " + pct_abs(median_of(errs)) + ", max " + pct_abs(worst_abs) + " (" + worst + ")\n";
    }
  }
  text += "\nSummary (absolute error of the iteration time):\n";
  Table s{{"runs", "group", "mean", "median", "max", "worst"}, {}};
  for (const auto& e : summarize(rows))
    s.rows.push_back({std::to_string(e.runs), e.group, pct_abs(e.mean_abs), pct_abs(e.median_abs), pct_abs(e.max_abs), e.worst});
  return text + s.to_text();
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  // Language model runs add a sequence_length column (empty for runs without one), so that a file of
  // image model runs keeps its columns.
  const bool sequences = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.run.sequence_length > 0; });
  Table t{kHeader, {}};
  if (sequences) t.header.push_back("sequence_length");
  for (const auto& r : rows) {
    auto cells = row_cells(r);
    if (sequences) cells.push_back(r.run.sequence_length > 0 ? std::to_string(r.run.sequence_length) : "");
    cells[7] = fmt_sig(r.run.iteration_s * 1e3, 6);
    cells[8] = fmt_sig(r.predicted_s * 1e3, 6);
    cells[9] = fmt_sig(r.error, 4);
    cells[10] = r.layers.empty() ? "" : fmt_sig(r.layer_median_abs_error, 4);
    cells[12] = r.has_memory ? fmt_sig(r.run.peak_allocated_bytes / 1e9, 6) : "";
    cells[13] = r.has_memory ? fmt_sig(r.predicted_peak_bytes / 1e9, 6) : "";
    cells[14] = r.has_memory ? fmt_sig(r.memory_error, 4) : "";
    t.rows.push_back(cells);
  }
  return t.to_csv();
}

Json validation_json(const std::vector<ValidationRow>& rows) {
  Json out;
  out["runs"] = Json::array();
  for (const auto& r : rows) {
    Json j;
    j["file"] = r.run.file;
    j["source"] = r.run.source;
    j["framework"] = r.run.framework;
    j["framework_profile"] = r.framework_profile;
    j["compute_model"] = r.compute_model;
    j["model"] = r.run.model;
    j["gpu"] = r.run.gpu_name;
    j["cluster"] = r.run.cluster;
    j["gpus"] = r.run.gpus;
    j["batch_per_gpu"] = r.run.batch_per_gpu;
    if (r.run.sequence_length > 0) j["sequence_length"] = r.run.sequence_length;
    j["precision"] = r.run.precision;
    j["memory_format"] = r.run.mode.memory_format;
    j["optimizer"] = r.run.mode.optimizer;
    j["execution"] = r.run.mode.execution;
    j["overlap"] = r.run.overlap;
    j["measured_s"] = r.run.iteration_s;
    j["measured_p10_s"] = r.run.p10_s;
    j["measured_p90_s"] = r.run.p90_s;
    j["predicted_s"] = r.predicted_s;
    j["error"] = r.error;
    j["predicted_bound"] = r.bottleneck;
    j["strategy"] = r.strategy;
    if (r.run.group_size > 0) j["group_size"] = r.run.group_size;
    if (r.run.average_every > 0) j["tau"] = r.run.average_every;
    j["predicted_host_idle_s"] = r.predicted_host_idle_s;
    j["predicted_exposed_comm_s"] = r.predicted_exposed_comm_s;
    j["versions"] = r.run.versions;
    j["date_utc"] = r.run.date_utc;
    Json layers = Json::array();
    for (const auto& l : r.layers)
      layers.push_back({{"name", l.name}, {"measured_fwd_s", l.measured_fwd_s}, {"predicted_fwd_s", l.predicted_fwd_s},
                        {"measured_bwd_s", l.measured_bwd_s}, {"predicted_bwd_s", l.predicted_bwd_s}, {"error", l.error}});
    j["layers"] = layers;
    if (!r.layers.empty()) j["layer_median_abs_error"] = r.layer_median_abs_error;
    if (r.has_memory)
      j["memory"] = {{"measured_peak_allocated_bytes", r.run.peak_allocated_bytes},
                     {"predicted_allocated_peak_bytes", r.predicted_peak_bytes},
                     {"predicted_peak_phase", r.predicted_peak_phase},
                     {"input_batches", r.run.input_batches},
                     {"error", r.memory_error}};
    out["runs"].push_back(j);
  }
  out["summary"] = Json::array();
  for (const auto& e : summarize(rows))
    out["summary"].push_back({{"group", e.group}, {"runs", e.runs}, {"mean_abs_error", e.mean_abs}, {"median_abs_error", e.median_abs},
                              {"max_abs_error", e.max_abs}, {"worst", e.worst}});
  return out;
}

}  // namespace dtsim
