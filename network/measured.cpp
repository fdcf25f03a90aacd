#include "network/measured.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace dtsim {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> t;
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool to_number(const std::string& s, double& x) {
  try {
    size_t used = 0;
    x = std::stod(s, &used);
    return used == s.size() && std::isfinite(x);
  } catch (...) {
    return false;
  }
}

// Launchers prefix every line: srun -l "  0: ", mpirun --tag-output "[1,0]<stdout>:".
std::string strip_launcher_prefix(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t j = i;
  while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
  if (j > i && j < line.size() && line[j] == ':') return line.substr(j + 1);
  if (i < line.size() && line[i] == '[') {
    size_t close = line.find("]<std", i);
    size_t colon = close == std::string::npos ? close : line.find(">:", close);
    if (colon != std::string::npos) return line.substr(colon + 2);
  }
  return line;
}

// nccl-tests binaries: all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf.
std::optional<CollectiveOp> op_of_binary(const std::string& name) {
  if (name.find("all_reduce") != std::string::npos) return CollectiveOp::AllReduce;
  if (name.find("reduce_scatter") != std::string::npos) return CollectiveOp::ReduceScatter;
  if (name.find("all_gather") != std::string::npos) return CollectiveOp::AllGather;
  if (name.find("broadcast") != std::string::npos) return CollectiveOp::Broadcast;
  if (name.find("reduce_perf") != std::string::npos) return CollectiveOp::Reduce;
  return std::nullopt;
}

}  // namespace

MeasuredSet read_nccl_tests(const std::string& path, std::optional<CollectiveOp> op_override, std::optional<int> gpus_override) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open file");
  MeasuredSet set;
  set.files.push_back(path);
  std::optional<CollectiveOp> op = op_override;
  std::set<std::string> hosts;
  int ranks = 0, ngpus_header = 0, nthread = 1;
  int time_col = 5;  // size count type redop root time algbw busbw #wrong (nccl-tests >= 2.10)
  int wrong_col = 8;
  struct Row {
    double bytes, time_s;
    int line;
  };
  std::vector<Row> rows;
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string line = strip_launcher_prefix(raw);
    const std::string where = path + ":" + std::to_string(line_no);
    auto t = tokens(line);
    if (t.empty()) continue;
    if (t[0][0] == '#') {
      if (t[0].size() > 1) t[0] = t[0].substr(1);
      else t.erase(t.begin());
      if (t.empty()) continue;
      if (t[0] == "nThread" && t.size() >= 4 && t[2] == "nGpus") {
        nthread = std::max(1, std::atoi(t[1].c_str()));
        ngpus_header = std::atoi(t[3].c_str());
      } else if (t[0] == "Rank" && t.size() >= 8 && t[6] == "on") {
        ++ranks;
        hosts.insert(t[7]);
      } else if (t[0] == "size" && std::find(t.begin(), t.end(), "time") != t.end()) {
        // The column header says where the out-of-place time and error count are.
        time_col = static_cast<int>(std::find(t.begin(), t.end(), "time") - t.begin());
        auto w = std::find(t.begin(), t.end(), "#wrong");
        if (w == t.end()) w = std::find(t.begin(), t.end(), "error");
        wrong_col = w == t.end() ? -1 : static_cast<int>(w - t.begin());
      } else if (!op && t[0] == "Collective" && t.size() >= 4 && t[1] == "test" && t[2] == "concluded:") {
        op = op_of_binary(t[3]);
      }
      continue;
    }
    // A result row starts with two integers (size, count) and a type name; anything else is
    // other output (NCCL INFO lines, warnings) and is skipped.
    if (t.size() < 3 || !is_integer(t[0]) || !is_integer(t[1]) || !std::isalpha(static_cast<unsigned char>(t[2][0]))) {
      if (!op) op = op_of_binary(line.find("_perf") != std::string::npos ? line : "");
      continue;
    }
    double bytes = 0, time_us = 0;
    to_number(t[0], bytes);
    if (static_cast<int>(t.size()) <= time_col || !to_number(t[time_col], time_us))
      throw InputError(where, "nccl-tests row has no out-of-place time in column " + std::to_string(time_col + 1));
    if (wrong_col >= 0 && static_cast<int>(t.size()) > wrong_col) {
      double wrong = 0;
      if (to_number(t[wrong_col], wrong) && wrong > 0)
        throw InputError(where, "nccl-tests reports " + t[wrong_col] + " wrong results: the timing of a failed collective is not used");
    }
    if (bytes <= 0) continue;  // size 0 returns at once; nothing to fit
    if (!(time_us > 0)) throw InputError(where, "time must be greater than 0");
    rows.push_back({bytes, time_us * 1e-6, line_no});
  }
  if (rows.empty()) throw InputError(path, "no nccl-tests result rows (size count type ... time algbw busbw) found");
  if (!op) throw InputError(path, "the log does not say which collective it measured; pass --op");
  int gpus = gpus_override ? *gpus_override : ranks > 0 ? ranks : ngpus_header * nthread;
  if (gpus < 1) throw InputError(path, "the log does not list its ranks (\"#  Rank  0 Group ...\" lines); pass --gpus");
  int nodes = std::max<int>(1, static_cast<int>(hosts.size()));
  for (const Row& r : rows) set.points.push_back({*op, r.bytes, gpus, nodes, r.time_s, path + ":" + std::to_string(r.line)});
  return set;
}

MeasuredSet read_harness_json(const std::string& path) {
  Json doc = load_json_file(path);
  MeasuredSet set;
  set.files.push_back(path);
  auto read_one = [&](const Json& j, const std::string& at) {
    JsonObject o(j, path, at);
    CollectiveOp op;
    try {
      op = parse_collective_op(o.str("op"));
    } catch (const InputError& e) {
      o.fail("op", e.rule());
    }
    const int gpus = static_cast<int>(o.integer("gpus", 2, 1 << 20));
    const int nodes = static_cast<int>(o.integer_or("nodes", 1, 1, 1 << 20));
    if (o.has("provenance") && o.raw("provenance").is_object()) {
      const Json& g = o.raw("provenance").value("gpu", Json::object());
      if (g.is_object() && g.contains("name") && g["name"].is_string()) set.gpu = g["name"].get<std::string>();
    }
    const Json& rows = o.raw("rows");
    if (!rows.is_array()) o.fail("rows", "must be an array of measurements");
    for (size_t i = 0; i < rows.size(); ++i) {
      JsonObject r = array_object(rows, i, path, at + ".rows");
      if (r.has("skipped")) continue;
      MeasuredPoint m;
      m.op = op;
      m.gpus = static_cast<int>(r.integer_or("gpus", gpus, 1, 1 << 20));
      m.nodes = nodes;
      m.bytes = r.positive("bytes");
      m.time_s = r.positive("time_s", 1e6);
      if (r.has("op") && r.str("op") != collective_op_name(op)) r.fail("op", "differs from the file's op");
      if (r.has("check") && r.str("check") == "FAILED") r.fail("check", "the harness found wrong results: the timing of a failed collective is not used");
      m.where = path + ": " + r.path();
      set.points.push_back(m);
    }
  };
  if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) read_one(doc[i], "$[" + std::to_string(i) + "]");
  } else {
    read_one(doc, "$");
  }
  if (set.points.empty()) throw InputError(path, "no measurements (rows with bytes and time_s) found");
  return set;
}

MeasuredSet read_measured(const std::string& path, std::optional<CollectiveOp> op, std::optional<int> gpus) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    MeasuredSet all;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".json" && e.path().filename() != "provenance.json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      Json doc = load_json_file(f.string());
      if (!doc.is_object() || !doc.contains("rows")) continue;  // not a collective file
      MeasuredSet s = read_harness_json(f.string());
      all.points.insert(all.points.end(), s.points.begin(), s.points.end());
      all.files.insert(all.files.end(), s.files.begin(), s.files.end());
      if (!s.gpu.empty()) all.gpu = s.gpu;
    }
    if (all.points.empty()) throw InputError(path, "directory holds no harness collective files (JSON with \"rows\")");
    return all;
  }
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open file");
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  if (first == '{' || first == '[') return read_harness_json(path);
  return read_nccl_tests(path, op, gpus);
}

}  // namespace dtsim
