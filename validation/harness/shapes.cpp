#include "shapes.hpp"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "util.hpp"

namespace dh {

namespace {

struct T {  // a per-sample tensor: feature map C x H x W, or vector of F = C (H = W = 0)
  long long C = 0, H = 0, W = 0;
  bool vec() const { return H == 0; }
  long long elements() const { return vec() ? C : C * H * W; }
};

std::pair<int, int> pair_of(const nlohmann::json& l, const char* key, int def, const std::string& where) {
  if (!l.contains(key)) return {def, def};
  const auto& v = l.at(key);
  if (v.is_number_integer()) return {v.get<int>(), v.get<int>()};
  if (v.is_array() && v.size() == 2) return {v[0].get<int>(), v[1].get<int>()};
  throw Error(where + ": field '" + key + "' must be an integer or [h, w]");
}

long long pool_out(long long in, int k, int s, int p, bool ceil_mode) {
  long long num = in + 2 * p - (k - 1) - 1;
  long long out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

int log_uniform(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi + 1.0));
  int v = static_cast<int>(std::floor(std::exp(u(rng))));
  return std::max(lo, std::min(hi, v));
}

// The sweep times the kernels of convolutional networks. The zoo also holds transformers (token input,
// attention and layer norm), whose kernels validation/pytorch/transformer_kernels.py times; they are
// skipped, not an error, so the default models folder works.
static bool convolutional_model(const nlohmann::json& m) {
  static const std::set<std::string> transformer_ops = {"attention", "layernorm", "embedding", "positional_embedding",
                                                        "class_token", "to_sequence", "select"};
  if (!m.contains("input") || !m.at("input").contains("channels")) return false;
  for (const auto& l : m.at("layers"))
    if (transformer_ops.count(l.value("op", ""))) return false;
  return true;
}

Zoo load_zoo(const std::string& dir, const std::vector<std::string>& only, const std::vector<std::string>& skip) {
  Zoo z;
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".json") files.push_back(n);
    }
    closedir(d);
  } else {
    throw Error("cannot read model folder " + dir);
  }
  std::sort(files.begin(), files.end());
  std::set<std::string> seen;
  auto once = [&](const std::string& key) { return seen.insert(key).second; };

  for (auto& fname : files) {
    std::string stem = fname.substr(0, fname.size() - 5);
    if (!only.empty() && std::find(only.begin(), only.end(), stem) == only.end()) continue;
    if (std::find(skip.begin(), skip.end(), stem) != skip.end()) continue;
    std::ifstream f(dir + "/" + fname);
    nlohmann::json m;
    try {
      f >> m;
    } catch (const std::exception& e) {
      throw Error(dir + "/" + fname + ": " + e.what());
    }
    std::string model = m.value("name", stem);
    if (!convolutional_model(m)) {
      std::printf("zoo: %s skipped: not a convolutional network (transformer kernels: validation/pytorch/transformer_kernels.py)\n",
                  model.c_str());
      continue;
    }
    z.models.push_back(model);
    std::map<std::string, T> t;
    T prev{m.at("input").at("channels").get<long long>(), m.at("input").at("height").get<long long>(),
           m.at("input").at("width").get<long long>()};
    t["input"] = prev;
    long long params = 0;
    for (const auto& l : m.at("layers")) {
      std::string name = l.at("name").get<std::string>(), op = l.at("op").get<std::string>();
      std::string where = fname + ": layer " + name;
      std::string src = model + "/" + name;
      std::vector<T> in;
      if (l.contains("inputs")) {
        for (const auto& i : l.at("inputs")) {
          auto it = t.find(i.get<std::string>());
          if (it == t.end()) throw Error(where + ": unknown input " + i.get<std::string>());
          in.push_back(it->second);
        }
      } else {
        in.push_back(prev);
      }
      T x = in.at(0), y = x;
      if (op == "conv2d") {
        if (x.vec()) throw Error(where + ": conv2d on a vector");
        auto [R, S] = pair_of(l, "kernel", 1, where);
        auto [sh, sw] = pair_of(l, "stride", 1, where);
        auto [ph, pw] = pair_of(l, "padding", 0, where);
        auto [dh, dw] = pair_of(l, "dilation", 1, where);
        int g = l.value("groups", 1);
        int K = l.at("out_channels").get<int>();
        y.C = K;
        y.H = (x.H + 2 * ph - dh * (R - 1) - 1) / sh + 1;
        y.W = (x.W + 2 * pw - dw * (S - 1) - 1) / sw + 1;
        params += static_cast<long long>(K) * (x.C / g) * R * S + (l.value("bias", true) ? K : 0);
        ConvLayer c{int(x.C), int(x.H), int(x.W), K, R, S, sh, sw, ph, pw, dh, dw, g, src};
        std::ostringstream k;
        k << "conv " << c.C << " " << c.H << " " << c.W << " " << K << " " << R << " " << S << " " << sh << " " << sw
          << " " << ph << " " << pw << " " << dh << " " << dw << " " << g;
        if (once(k.str())) z.conv.push_back(c);
      } else if (op == "linear") {
        int out = l.at("out_features").get<int>();
        long long inf = x.elements();
        params += inf * out + (l.value("bias", true) ? out : 0);
        y = T{out, 0, 0};
        if (once("linear " + std::to_string(inf) + " " + std::to_string(out)))
          z.linear.push_back({int(inf), out, src});
      } else if (op == "batchnorm2d") {
        params += 2 * x.C;
        if (once("bn " + std::to_string(x.C) + " " + std::to_string(x.H) + " " + std::to_string(x.W)))
          z.bn.push_back({int(x.C), int(x.H), int(x.W), src});
      } else if (op == "relu" || op == "relu6" || op == "sigmoid" || op == "tanh" || op == "silu" || op == "gelu" ||
                 op == "hardswish") {
        std::string a = (op == "relu6") ? "relu6" : "relu";  // other activations timed as relu (same traffic)
        if (once("act " + a + " " + std::to_string(x.elements()))) z.act.push_back({a, x.elements(), src});
      } else if (op == "maxpool2d" || op == "avgpool2d") {
        auto [R, S] = pair_of(l, "kernel", 1, where);
        auto st = pair_of(l, "stride", R, where);
        if (!l.contains("stride")) st = {R, S};
        auto [ph, pw] = pair_of(l, "padding", 0, where);
        bool ceil_mode = l.value("ceil_mode", false);
        y.H = pool_out(x.H, R, st.first, ph, ceil_mode);
        y.W = pool_out(x.W, S, st.second, pw, ceil_mode);
        PoolLayer p{op == "maxpool2d" ? "max" : "avg", int(x.C), int(x.H), int(x.W), R, S, st.first, ph, src};
        std::ostringstream k;
        k << "pool " << p.mode << " " << p.C << " " << p.H << " " << p.W << " " << R << " " << S << " " << p.stride
          << " " << p.pad;
        if (once(k.str())) z.pool.push_back(p);
      } else if (op == "adaptive_avgpool2d") {
        auto [oh, ow] = pair_of(l, "output", 1, where);
        int s = std::max<long long>(1, x.H / oh);
        int R = int(x.H - (oh - 1) * s);
        y.H = oh;
        y.W = ow;
        PoolLayer p{"avg", int(x.C), int(x.H), int(x.W), R, R, s, 0, src};
        std::ostringstream k;
        k << "pool avg " << p.C << " " << p.H << " " << p.W << " " << R << " " << R << " " << s << " 0";
        if (once(k.str())) z.pool.push_back(p);
      } else if (op == "add") {
        if (once("add " + std::to_string(x.elements()))) z.add.push_back({"add", x.elements(), src});
      } else if (op == "concat") {
        y.C = 0;
        for (auto& i : in) y.C += i.C;
        for (auto& i : in)
          if (once("concat " + std::to_string(i.C) + " " + std::to_string(y.C) + " " + std::to_string(x.H * x.W)))
            z.concat.push_back({int(i.C), int(y.C), x.H * x.W, src});
      } else if (op == "dropout") {
      } else if (op == "flatten") {
        y = T{x.elements(), 0, 0};
      } else if (op == "softmax_cross_entropy") {
        if (once("softmax " + std::to_string(x.elements()))) z.softmax.push_back({int(x.elements()), src});
      } else {
        throw Error(where + ": unknown op " + op);
      }
      t[name] = y;
      prev = y;
    }
    z.params.push_back({params, model});
  }
  return z;
}

}  // namespace dh
