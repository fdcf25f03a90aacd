#include <iostream>

#include "cli/command.hpp"
#include "core/output.hpp"
#include "workload/model_json.hpp"
#include "report/report.hpp"

namespace dtsim::cli {
namespace {

class ModelsCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("models", "List the built-in models, or describe one model (--model)");
    c->add_option("--model", model_, "A zoo name, model JSON or ONNX file to describe layer by layer");
    c->add_option("--batch-per-gpu", batch_, "ONNX models: the batch size shape inference runs with")->check(CLI::Range(int64_t{1}, kMaxBatchPerGpu))->capture_default_str();
    add_allow_unknown_ops(c, allow_unknown_ops_);
    add_seq_len(c, seq_len_);
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    if (model_.empty()) return list_zoo();
    ModelLoadOptions options;
    options.batch = batch_;
    options.allow_unknown_ops = allow_unknown_ops_;
    options.seq_len = seq_len_;
    return describe(load_model(model_, options));
  }

 private:
  // Imported operators show what they stand for; "(roofline)" marks those dtsim does not know.
  static std::string op_of(const Graph& g, const Layer& l) {
    if (l.tied_to >= 0) return "linear (weight tied to " + g.layers[l.tied_to].name + ")";
    if (l.op == Op::Activation) return l.activation;
    if (l.op == Op::Eltwise) return "eltwise:" + l.source_op + (l.roofline_only ? " (roofline)" : "");
    if (l.op == Op::Attention) return std::string("attention (") + std::to_string(l.num_heads) + " heads" + (l.causal ? ", causal)" : ")");
    return op_name(l.op);
  }

  // A language model's input is token ids; a tied weight is counted at its embedding.
  static std::string input_of(const Graph& g, const Layer& l) {
    if (g.token_input && l.inputs[0] < 0) return std::to_string(g.input.h) + " token ids";
    return l.in[0].str();
  }

  int describe(const Graph& g) {
    if (format_ == "json") {
      Json j = model_summary_json(g);
      Json layers = Json::array();
      for (const auto& l : g.layers)
        layers.push_back({{"name", l.name}, {"op", op_of(g, l)}, {"output", l.out.str()}, {"params", l.params()}, {"fwd_macs", l.fwd_macs()}});
      j["layer_list"] = std::move(layers);
      j["notes"] = g.notes;
      print_notes(g);
      emit(out_, dump(j));
      return 0;
    }
    Table t;
    t.header = {"layer", "op", "input", "output", "params", "MACs"};
    for (const auto& l : g.layers)
      t.rows.push_back({l.name, op_of(g, l), input_of(g, l), l.out.str(), std::to_string(l.params()), std::to_string(l.fwd_macs())});
    print_notes(g);
    if (format_ == "csv") {
      emit(out_, t.to_csv());
      return 0;
    }
    emit(out_, g.name + ": " + std::to_string(g.params()) + " parameters, " + fmt_count(static_cast<double>(g.fwd_macs_per_sample())) +
                   " MACs per sample forward, " + std::to_string(g.layers.size()) + " layers\n" + t.to_text());
    return 0;
  }

  int list_zoo() {
    Json all = Json::array();
    Table t;
    t.header = {"model", "params", "fwd MACs/sample", "layers", "input"};
    // The table keeps human units (714.19M); CSV carries the full count, as JSON does.
    const bool human = format_ == "table";
    for (const auto& name : zoo_models()) {
      Graph g = load_model(name);
      all.push_back(model_summary_json(g));
      t.rows.push_back({g.name, std::to_string(g.params()),
                        human ? fmt_count(static_cast<double>(g.fwd_macs_per_sample())) : std::to_string(g.fwd_macs_per_sample()),
                        std::to_string(g.layers.size()), g.token_input ? std::to_string(g.input.h) + " token ids" : g.input.str()});
    }
    emit(out_, format_ == "json" ? dump(all) : format_ == "csv" ? t.to_csv() : t.to_text());
    return 0;
  }

  std::string model_, format_ = "table", out_;
  int64_t batch_ = 1, seq_len_ = 0;
  bool allow_unknown_ops_ = false;
};

}  // namespace

std::unique_ptr<Command> make_models_command() { return std::make_unique<ModelsCommand>(); }

}  // namespace dtsim::cli
