#include "study/study.hpp"

#include <algorithm>
#include <cmath>

#include "core/args.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "sim/framework.hpp"
#include "workload/model_json.hpp"
#include "network/collective.hpp"

namespace dtsim {

int64_t checked_dataset_size(const std::string& where, int64_t v) {
  if (v < 1 || v > kMaxDatasetSize) throw InputError(where, "must be in [1, " + std::to_string(kMaxDatasetSize) + "] (2^50), got " + std::to_string(v));
  return v;
}

double checked_epochs(const std::string& where, double v) {
  if (!(v > 0) || v > kMaxEpochs) throw InputError(where, "must be in (0, " + fmt_number(kMaxEpochs) + "], got " + fmt_number(v));
  return v;
}

double checked_price(const std::string& where, double v) {
  if (!(v >= 0) || v > kMaxPrice) throw InputError(where, "must be in [0, " + fmt_number(kMaxPrice) + "], got " + fmt_number(v));
  return v;
}

void TrainGoal::check(const std::string& where_dataset, const std::string& where_price) const {
  if (dataset_size.has_value() != epochs.has_value())
    throw InputError(where_dataset, "time to train needs both the dataset size and the number of epochs");
  if (price_per_gpu_hour && !dataset_size) throw InputError(where_price, "a price needs the dataset size and epochs to price");
}

TrainEstimate train_estimate(const Prediction& p, const TrainGoal& goal) { return train_estimate(p.gpus, p.batch_per_gpu, p.iteration_s, goal); }

TrainEstimate train_estimate(int64_t gpus, int64_t batch_per_gpu, double iteration_s, const TrainGoal& goal) {
  TrainEstimate e;
  const int64_t global_batch = batch_per_gpu * gpus;
  e.steps_per_epoch = (*goal.dataset_size + global_batch - 1) / global_batch;
  // Whole steps: a fraction of an epoch still runs its last step, and any training runs one. The
  // relative tolerance keeps 90 x 5005 at 450450 despite rounding.
  const double exact = static_cast<double>(e.steps_per_epoch) * *goal.epochs;
  e.steps = std::max(1.0, std::ceil(exact * (1 - 1e-12)));
  e.time_s = e.steps * iteration_s;
  e.gpu_hours = e.time_s / 3600.0 * static_cast<double>(gpus);
  if (goal.price_per_gpu_hour) e.cost = e.gpu_hours * *goal.price_per_gpu_hour;
  return e;
}

static void describe_link(StudyRow& r, const ClusterSpec& c) {
  const Prediction& p = r.p;
  if (p.gpus <= 1) {
    r.link = "none (one GPU)";
    return;
  }
  const std::string network = "inter-node network (" + std::to_string(c.inter.nics_per_node) + " x " + fmt_sig(c.inter.nic_bandwidth_Bps * 8 / 1e9, 4) +
                              " Gb/s per node" + (c.inter.oversubscription > 1 ? ", " + fmt_sig(c.inter.oversubscription, 3) + ":1 oversubscribed" : "") +
                              " = " + fmt_sig(c.inter.node_bandwidth_Bps() / 1e9, 4) + " GB/s)";
  const std::string intra = "intra-node " + c.intra.kind + " (" + fmt_sig(c.intra.bandwidth_Bps / 1e9, 4) + " GB/s per GPU)";
  // The link a faster version of which shortens the communication (Prediction::comm_bottleneck),
  // with its rate; where neither does, the links it crosses and no rate to credit time to.
  if (p.comm_bottleneck.rfind("inter", 0) == 0) {
    r.link_Bps = c.inter.node_bandwidth_Bps();
    r.link = network;
  } else if (p.comm_bottleneck.rfind("intra", 0) == 0) {
    r.link_Bps = c.intra.bandwidth_Bps;
    r.link = intra;
  } else {
    r.link_Bps = 0;
    r.link = p.nodes > 1 ? intra + " and the " + network : intra;
  }
}

StudyRow study_row(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, const WhatIf& w, const TrainGoal& goal, bool keep_detail) {
  StepPricing pricing(cfg.compute_model);
  return study_row(g, c, cfg, w, goal, keep_detail, pricing);
}

StudyRow study_row(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, const WhatIf& w, const TrainGoal& goal, bool keep_detail,
                   StepPricing& pricing) {
  StudyRow r;
  r.p = predict(g, c, cfg, pricing);
  if (!keep_detail) {  // a sweep keeps thousands of rows: drop what only one prediction's report shows
    r.p.layer_names = {};
    r.p.timeline.layers = {};
    r.p.timeline.kernels = {};
  }
  r.what_if = w;
  r.memory = memory_fit(g, cfg.batch_per_gpu, cfg.precision, r.p.gpus, c.gpu, default_memory_spec(), -1, cfg.mode.optimizer,
                        training_memory_layout(g, c, cfg));
  if (goal.active()) r.train = train_estimate(r.p, goal);
  describe_link(r, c);
  return r;
}

std::vector<WhatIf> what_if_grid(const std::vector<std::pair<std::string, std::vector<double>>>& axes, const WhatIf& base) {
  std::vector<WhatIf> out{base};
  for (const auto& axis_name : what_if_axes())
    for (const auto& [axis, values] : axes) {
      if (axis != axis_name || values.empty()) continue;
      std::vector<WhatIf> next;
      for (const WhatIf& w : out)
        for (double v : values) {
          WhatIf x = w;
          set_what_if_axis(x, axis, v, axis);
          next.push_back(x);
        }
      out = std::move(next);
    }
  return out;
}

// An integer list: a JSON array of integers or a string in the command line's syntax.
static std::vector<int64_t> int_list(JsonObject& o, const std::string& key, int64_t min, int64_t max) {
  const Json& v = o.raw(key);
  std::vector<int64_t> out;
  if (v.is_string()) {
    out = parse_int_list(o.what() + ": " + o.path_of(key), v.get<std::string>(), min, max);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = key + "[" + std::to_string(i) + "]";
      if (!v[i].is_number_integer()) o.fail(where, std::string("must be an integer, not ") + (v[i].is_number() ? "a fraction" : v[i].type_name()));
      if (v[i].is_number_unsigned() && v[i].get<uint64_t>() > static_cast<uint64_t>(max)) o.fail(where, "must be at most " + std::to_string(max));
      int64_t x = v[i].get<int64_t>();
      if (x < min || x > max) o.fail(where, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(x));
      out.push_back(x);
    }
  } else {
    o.fail(key, std::string("must be an array of integers or a list such as \"1..64:x2\", not ") + v.type_name());
  }
  if (out.empty()) o.fail(key, "must not be empty");
  return out;
}

// A what-if axis's values: a number, an array of numbers, or a list string ("0.5,1,2", "0.25..4:x2").
static std::vector<double> real_list(JsonObject& o, const std::string& key) {
  const Json& v = o.raw(key);
  std::vector<double> out;
  if (v.is_number()) out.push_back(v.get<double>());
  else if (v.is_string()) out = parse_real_list(o.what() + ": " + o.path_of(key), v.get<std::string>(), 0, 1e12);
  else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number()) o.fail(key + "[" + std::to_string(i) + "]", std::string("must be a number, not ") + v[i].type_name());
      out.push_back(v[i].get<double>());
    }
  } else {
    o.fail(key, std::string("must be a number, an array of numbers or a list such as \"0.5..4:x2\", not ") + v.type_name());
  }
  if (out.empty()) o.fail(key, "must not be empty");
  return out;
}

// "models": names or files, each checked to exist and read.
static std::vector<std::string> parse_models(JsonObject& o) {
  const Json& models = o.raw("models");
  if (!models.is_array() || models.empty()) o.fail("models", "must be a non-empty array of model names or files");
  std::vector<std::string> out;
  for (size_t i = 0; i < models.size(); ++i) {
    const std::string key = "models[" + std::to_string(i) + "]";
    if (!models[i].is_string()) o.fail(key, std::string("must be a string, not ") + models[i].type_name());
    std::string m = models[i].get<std::string>();
    try {
      // Checks that the model exists and reads; ONNX operators dtsim cannot cost are refused by
      // run_sweep, which knows --allow-unknown-ops, and the batch sizes.
      ModelLoadOptions check;
      check.allow_unknown_ops = true;
      load_model(m, check);
    } catch (const InputError& e) {
      if (e.where() == "--model") o.fail(key, e.rule());
      throw;  // a model file's own error names that file
    }
    out.push_back(m);
  }
  return out;
}

// The run's settings a sweep file may give (cluster, framework, cluster_nodes, precision, algo,
// overlap), each checked where it is read so that the error names the field.
static void parse_run_settings(JsonObject& o, SweepSpec& s) {
  s.cluster = o.str_or("cluster", s.cluster);
  try {
    load_cluster(s.cluster);
  } catch (const InputError& e) {
    if (e.where() == "--cluster") o.fail("cluster", e.rule());
    throw;
  }
  s.framework = o.str_or("framework", s.framework);
  try {
    load_framework(s.framework);
  } catch (const InputError& e) {
    if (e.where() == "--framework") o.fail("framework", e.rule());
    throw;
  }
  if (o.has("cluster_nodes")) s.cluster_nodes = o.integer("cluster_nodes", 1, kMaxClusterNodes);
  s.precision = o.str_or("precision", s.precision);
  try {
    parse_precision(s.precision);
  } catch (const InputError& e) {
    o.fail("precision", e.rule());
  }
  if (o.has("algo")) {
    s.algo = o.str("algo");
    try {
      make_collective_algorithm(s.algo);
    } catch (const InputError& e) {
      o.fail("algo", e.rule());
    }
  }
  if (o.has("overlap")) s.overlap = o.boolean_or("overlap", true);
  // How the step runs (docs/training-modes.md), by PyTorch's names.
  s.memory_format = o.str_or("memory_format", s.memory_format);
  s.optimizer = o.str_or("optimizer", s.optimizer);
  s.execution = o.str_or("execution", s.execution);
  try {
    parse_step_mode(s);
  } catch (const InputError& e) {
    const std::string field = e.where() == "--memory-format" ? "memory_format" : e.where() == "--optimizer" ? "optimizer" : "execution";
    o.fail(field, e.rule());
  }
}

// "scenarios": named what-ifs, one value per axis; none is one baseline scenario.
static std::vector<WhatIf> parse_scenarios(JsonObject& o, const std::string& what) {
  std::vector<WhatIf> scenarios{WhatIf{}};
  if (!o.has("scenarios")) return scenarios;
  const Json& arr = o.raw("scenarios");
  if (!arr.is_array() || arr.empty()) o.fail("scenarios", "must be a non-empty array of objects");
  scenarios.clear();
  for (size_t i = 0; i < arr.size(); ++i) {
    JsonObject so = array_object(arr, i, what, o.path_of("scenarios"));
    WhatIf w;
    w.name = so.str("name");
    if (w.name.empty()) so.fail("name", "must not be empty");
    for (const auto& axis : what_if_axes())
      if (so.has(axis)) set_what_if_axis(w, axis, so.number(axis, -1e300, 1e300), what + ": " + so.path_of(axis));
    so.reject_unknown();
    scenarios.push_back(w);
  }
  return scenarios;
}

// "what_if": the axes of a grid, each a value or a list, every value checked.
static std::vector<std::pair<std::string, std::vector<double>>> parse_what_if_axes(JsonObject& o, const std::string& what) {
  std::vector<std::pair<std::string, std::vector<double>>> axes;
  if (!o.has("what_if")) return axes;
  JsonObject wo = o.object("what_if");
  for (const auto& axis : what_if_axes()) {
    if (!wo.has(axis)) continue;
    std::vector<double> values = real_list(wo, axis);
    WhatIf probe;
    for (size_t i = 0; i < values.size(); ++i) set_what_if_axis(probe, axis, values[i], what + ": " + wo.path_of(axis) + "[" + std::to_string(i) + "]");
    axes.push_back({axis, values});
  }
  wo.reject_unknown();
  return axes;
}

// Scenarios times the grid of the "what_if" axes.
static std::vector<WhatIf> parse_what_ifs(JsonObject& o, const std::string& what) {
  const std::vector<WhatIf> scenarios = parse_scenarios(o, what);
  const auto axes = parse_what_if_axes(o, what);
  std::vector<WhatIf> out;
  const std::vector<WhatIf> grid = what_if_grid(axes);
  for (const WhatIf& sc : scenarios)
    for (const WhatIf& point : grid) {
      // The grid's axes override the scenario's; a named scenario's label adds the grid's changes.
      WhatIf w = sc;
      for (const auto& axis : axes) copy_what_if_axis(w, point, axis.first);
      if (!w.name.empty() && !point.is_baseline()) w.name += ", " + point.label();
      out.push_back(w);
    }
  return out;
}

// "training": the dataset, epochs and price of time to train.
static TrainGoal parse_train_goal(JsonObject& o, const std::string& what) {
  TrainGoal goal;
  if (!o.has("training")) return goal;
  JsonObject t = o.object("training");
  if (t.has("dataset_size")) goal.dataset_size = t.integer("dataset_size", 1, kMaxDatasetSize);
  if (t.has("epochs")) goal.epochs = checked_epochs(what + ": " + t.path_of("epochs"), t.number("epochs", 0, kMaxEpochs));
  if (t.has("price_per_gpu_hour")) goal.price_per_gpu_hour = t.number("price_per_gpu_hour", 0, kMaxPrice);
  t.reject_unknown();
  goal.check(what + ": " + t.path_of("dataset_size"), what + ": " + t.path_of("price_per_gpu_hour"));
  return goal;
}

SweepSpec parse_sweep(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  SweepSpec s;
  s.name = o.str("name");
  if (s.name.empty()) o.fail("name", "must not be empty");
  o.str_or("description", "");
  if (o.has("note")) o.str("note");
  s.models = parse_models(o);
  parse_run_settings(o, s);

  s.batches = int_list(o, "batch_per_gpu", 1, kMaxBatchPerGpu);
  if (o.has("gpus") == o.has("nodes")) o.fail(o.has("gpus") ? "nodes" : "gpus", "give exactly one of gpus and nodes");
  s.by_nodes = o.has("nodes");
  const std::string count_key = s.by_nodes ? "nodes" : "gpus";
  s.gpus = int_list(o, count_key, 1, s.by_nodes ? kMaxClusterNodes : kMaxGpus);
  s.gpus_where = what + ": " + o.path_of(count_key);

  s.what_ifs = parse_what_ifs(o, what);
  s.train = parse_train_goal(o, what);
  o.reject_unknown();
  if (sweep_size(s) > 10'000'000) o.fail("", "more than ten million configurations");
  return s;
}

SweepSpec load_sweep(const std::string& path) { return parse_sweep(load_json_file(path), path); }

size_t sweep_size(const SweepSpec& s) { return s.models.size() * s.what_ifs.size() * s.batches.size() * s.gpus.size(); }

SweepResult run_sweep(const SweepSpec& s, const std::function<void()>& tick) {
  ClusterSpec base = apply_framework(load_cluster(s.cluster), load_framework(s.framework));
  if (s.cluster_nodes) base.nodes = static_cast<int>(*s.cluster_nodes);
  if (s.bucket_mb) set_bucket_mb(base, *s.bucket_mb, "--bucket-mb");
  TrainingConfig cfg = training_config(s);

  // Every what-if's cluster, checked against the largest job before any work is done.
  std::vector<ClusterSpec> clusters;
  for (const WhatIf& w : s.what_ifs) {
    clusters.push_back(apply_what_if(base, w));
    const ClusterSpec& c = clusters.back();
    for (int64_t n : s.gpus) {
      int64_t gpus = s.by_nodes ? n * c.gpus_per_node : n;
      if (gpus > c.capacity_gpus())
        throw InputError(s.gpus_where, std::to_string(gpus) + " GPUs exceed cluster '" + c.name + "' (" + std::to_string(c.nodes) + " nodes x " +
                                           std::to_string(c.gpus_per_node) + " GPUs per node" + (w.is_baseline() ? "" : " with " + w.label()) +
                                           "; raise the node count with --cluster-nodes or \"cluster_nodes\")");
    }
  }

  SweepResult res;
  res.cluster_name = base.name;
  res.gpu_name = base.gpu.name;
  res.precision = precision_name(cfg.precision);
  res.mode = cfg.mode;
  res.rows.reserve(sweep_size(s));
  // Every model at every batch size, loaded before any work: graphs[model][batch index].
  std::vector<std::vector<Graph>> graphs;
  for (const std::string& m : s.models) {
    std::vector<Graph>& per_batch = graphs.emplace_back();
    for (int64_t b : s.batches) {
      if (!per_batch.empty() && !is_onnx_path(m)) {  // zoo and JSON models do not depend on the batch
        per_batch.push_back(per_batch.front());
        continue;
      }
      ModelLoadOptions options;
      options.batch = b;
      options.allow_unknown_ops = s.allow_unknown_ops;
      options.seq_len = s.seq_len;
      per_batch.push_back(load_model(m, options));
      for (const std::string& note : per_batch.back().notes)
        if (std::find(res.notes.begin(), res.notes.end(), note) == res.notes.end()) res.notes.push_back(note);
    }
  }
  // What the rows share (kernel times by GPU, each step before its collectives): one pricing for the
  // study, so a network what-if or another GPU count prices only its collectives.
  StepPricing pricing(s.compute_model);
  for (size_t mi = 0; mi < s.models.size(); ++mi) {
    for (size_t wi = 0; wi < s.what_ifs.size(); ++wi)
      for (size_t bi = 0; bi < s.batches.size(); ++bi)
        for (int64_t n : s.gpus) {
          const Graph& g = graphs[mi][bi];
          cfg.batch_per_gpu = s.batches[bi];
          cfg.gpus = s.by_nodes ? n * clusters[wi].gpus_per_node : n;
          res.rows.push_back(study_row(g, clusters[wi], cfg, s.what_ifs[wi], s.train, false, pricing));
          res.compute_model = res.rows.back().p.compute_model;
          if (tick) tick();
        }
  }
  return res;
}

}  // namespace dtsim
