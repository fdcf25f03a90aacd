// dtsim: the command-line front end. Parses flags, calls the library, prints. Bad input exits 2 with
// one line naming the flag or file and the rule; nothing is written on failure.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "common/args.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "model/model_json.hpp"
#include "model/predict.hpp"
#include "model/report.hpp"
#include "network/collective.hpp"

using namespace dtsim;

namespace {

const std::set<std::string> kTableJsonCsv = {"table", "json", "csv"};

// Prints to stdout, or writes FILE atomically when --out is given.
void emit(const std::string& out_path, const std::string& text) {
  if (out_path.empty()) std::cout << text << std::flush;
  else write_file_atomic(out_path, text);
}

std::string dump(const Json& j) { return j.dump(2) + "\n"; }

Precision precision_flag(const std::string& s) { return parse_precision(s); }

struct CommonOpts {
  std::string cluster = "h100-sxm";
  std::string precision = "fp32";
  std::string algo = "ring";
  std::string format = "table";
  std::string out;
  bool no_overlap = false;
};

void add_common(CLI::App* c, CommonOpts& o) {
  c->add_option("--cluster", o.cluster, "Cluster preset name or JSON file")->capture_default_str();
  c->add_option("--precision", o.precision, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)")
      ->capture_default_str();
  c->add_option("--algo", o.algo, "All-reduce algorithm")->capture_default_str();
  c->add_flag("--no-overlap", o.no_overlap, "All-reduce gradients after the backward pass instead of overlapping");
  c->add_option("--format", o.format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
  c->add_option("--out", o.out, "Write the output to FILE (atomically) instead of stdout");
}

TrainingConfig config_from(const CommonOpts& o) {
  TrainingConfig cfg;
  cfg.precision = precision_flag(o.precision);
  cfg.algo = o.algo;
  if (o.no_overlap) cfg.overlap = false;
  return cfg;
}

int cmd_models(const std::string& model, const std::string& format) {
  if (!model.empty()) {
    Graph g = load_model(model);
    if (format == "json") {
      Json j = model_summary_json(g);
      Json layers = Json::array();
      for (const auto& l : g.layers)
        layers.push_back({{"name", l.name}, {"op", l.op == Op::Activation ? l.activation : op_name(l.op)}, {"output", l.out.str()},
                          {"params", l.params()}, {"fwd_macs", l.fwd_macs()}});
      j["layer_list"] = std::move(layers);
      std::cout << dump(j);
      return 0;
    }
    Table t;
    t.header = {"layer", "op", "input", "output", "params", "MACs"};
    for (const auto& l : g.layers)
      t.rows.push_back({l.name, l.op == Op::Activation ? l.activation : op_name(l.op), l.in[0].str(), l.out.str(), std::to_string(l.params()),
                        std::to_string(l.fwd_macs())});
    std::cout << g.name << ": " << g.params() << " parameters, " << fmt_count(static_cast<double>(g.fwd_macs_per_sample()))
              << " MACs per sample forward, " << g.layers.size() << " layers\n"
              << (format == "csv" ? t.to_csv() : t.to_text());
    return 0;
  }
  Json all = Json::array();
  Table t;
  t.header = {"model", "params", "fwd MACs/sample", "layers", "input"};
  for (const auto& name : zoo_models()) {
    Graph g = load_model(name);
    all.push_back(model_summary_json(g));
    t.rows.push_back({g.name, std::to_string(g.params()), fmt_count(static_cast<double>(g.fwd_macs_per_sample())), std::to_string(g.layers.size()),
                      g.input.str()});
  }
  if (format == "json") std::cout << dump(all);
  else std::cout << (format == "csv" ? t.to_csv() : t.to_text());
  return 0;
}

}  // namespace

static int run(int argc, char** argv) {
  CLI::App app{"dtsim: predicts the iteration time and scaling of data-parallel neural-network training on GPU clusters"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  // models
  std::string models_model, models_format = "table";
  auto* models = app.add_subcommand("models", "List the built-in models, or describe one model (--model)");
  models->add_option("--model", models_model, "A zoo name or model JSON file to describe layer by layer");
  models->add_option("--format", models_format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();

  // predict
  CommonOpts po;
  std::string p_model;
  int64_t p_gpus = 1, p_batch = 0;
  bool p_layers = false;
  auto* predict_cmd = app.add_subcommand("predict", "Predict one training configuration");
  predict_cmd->add_option("--model", p_model, "Zoo name or model JSON file")->required();
  predict_cmd->add_option("--gpus", p_gpus, "Number of GPUs (placed on ceil(gpus / gpus_per_node) nodes)")->capture_default_str();
  predict_cmd->add_option("--batch-per-gpu", p_batch, "Samples per GPU per iteration")->required();
  predict_cmd->add_flag("--layers", p_layers, "Also print per-layer times (table format)");
  add_common(predict_cmd, po);

  // sweep
  CommonOpts so;
  std::string s_models, s_gpus = "1", s_batches;
  auto* sweep = app.add_subcommand("sweep", "Predict every combination of models, GPU counts and batch sizes");
  sweep->add_option("--model", s_models, "Model names or files, comma-separated")->required();
  sweep->add_option("--gpus", s_gpus, "GPU counts: 1,2,4 or 1..8 (every integer) or 1..64:x2 (doubling)")->capture_default_str();
  sweep->add_option("--batch-per-gpu", s_batches, "Batch sizes per GPU, same list syntax")->required();
  add_common(sweep, so);

  // collective
  std::string c_op = "allreduce", c_bytes, c_cluster = "h100-sxm", c_algo = "ring", c_format = "table", c_out;
  int64_t c_gpus = 2;
  auto* coll = app.add_subcommand("collective", "Predict collective times and bus bandwidth");
  coll->add_option("--op", c_op, "allreduce, reducescatter, allgather, broadcast")->capture_default_str();
  coll->add_option("--bytes", c_bytes, "Message sizes: 4,1M,1G or 4..1G:x2 (K, M, G are binary)")->required();
  coll->add_option("--gpus", c_gpus, "Number of GPUs")->capture_default_str();
  coll->add_option("--cluster", c_cluster, "Cluster preset name or JSON file")->capture_default_str();
  coll->add_option("--algo", c_algo, "Algorithm")->capture_default_str();
  coll->add_option("--format", c_format, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  coll->add_option("--out", c_out, "Write the output to FILE (atomically) instead of stdout");

  if (argc > 1 && argv[1][0] != '-') {
    std::string cmd = argv[1];
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands({})) {
      known |= sub->get_name() == cmd;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) throw InputError("", "unknown command '" + cmd + "' (" + names + "; see dtsim --help)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    std::fprintf(stderr, "dtsim: error: %s (see dtsim --help)\n", msg.c_str());
    return 2;
  }

  if (models->parsed()) return cmd_models(models_model, models_format);

  if (predict_cmd->parsed()) {
    Graph g = load_model(p_model);
    ClusterSpec c = load_cluster(po.cluster);
    TrainingConfig cfg = config_from(po);
    cfg.gpus = p_gpus;
    cfg.batch_per_gpu = p_batch;
    Prediction p = predict(g, c, cfg);
    if (po.format == "json") emit(po.out, dump(prediction_json(p)));
    else if (po.format == "csv") {
      Table t{prediction_columns(false), {prediction_row(p, false)}};
      emit(po.out, t.to_csv());
    } else {
      emit(po.out, prediction_text(p, p_layers));
    }
    return 0;
  }

  if (sweep->parsed()) {
    ClusterSpec c = load_cluster(so.cluster);
    std::vector<Graph> graphs;
    for (const auto& m : split(s_models, ',')) graphs.push_back(load_model(m));
    auto gpus = parse_int_list("--gpus", s_gpus, 1, c.capacity_gpus());
    auto batches = parse_int_list("--batch-per-gpu", s_batches, 1, kMaxBatchPerGpu);
    TrainingConfig cfg = config_from(so);
    Json rows = Json::array();
    Table human{prediction_columns(true), {}}, csv{prediction_columns(false), {}};
    for (const auto& g : graphs)
      for (int64_t b : batches)
        for (int64_t n : gpus) {
          cfg.gpus = n;
          cfg.batch_per_gpu = b;
          Prediction p = predict(g, c, cfg);
          rows.push_back(prediction_summary_json(p));
          human.rows.push_back(prediction_row(p, true));
          csv.rows.push_back(prediction_row(p, false));
        }
    if (so.format == "json") emit(so.out, dump(rows));
    else if (so.format == "csv") emit(so.out, csv.to_csv());
    else emit(so.out, "cluster " + c.name + " (" + c.gpu.name + ", " + std::to_string(c.gpus_per_node) + " GPUs per node), " +
                          precision_name(cfg.precision) + ", compute model: roofline\n" + human.to_text());
    return 0;
  }

  if (coll->parsed()) {
    ClusterSpec c = load_cluster(c_cluster);
    CollectiveOp op = parse_collective_op(c_op);
    auto algo = make_collective_algorithm(c_algo);
    Placement where = place(c, c_gpus);
    auto sizes = parse_int_list("--bytes", c_bytes, 0, int64_t(1) << 50);
    Json rows = Json::array();
    Table t{{"bytes", "gpus", "nodes", "algo", "time", "algbw GB/s", "busbw GB/s"}, {}};
    for (int64_t n : sizes) {
      double s = algo->time_s(op, static_cast<double>(n), where, c);
      double algbw = s > 0 ? n / s / 1e9 : 0;
      double busbw = algbw * bus_bandwidth_factor(op, where.gpus);
      rows.push_back({{"op", collective_op_name(op)}, {"bytes", n}, {"gpus", where.gpus}, {"nodes", where.nodes}, {"algo", algo->name()},
                      {"time_s", s}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw}});
      t.rows.push_back({std::to_string(n), std::to_string(where.gpus), std::to_string(where.nodes), algo->name(), fmt_time(s), fmt_sig(algbw, 4),
                        fmt_sig(busbw, 4)});
    }
    if (c_format == "json") emit(c_out, dump(rows));
    else emit(c_out, t.to_text());
    return 0;
  }
  return 2;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "dtsim: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim: internal error: %s\n", e.what());
    return 1;
  }
}
