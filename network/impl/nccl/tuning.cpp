#include "network/impl/nccl/tuning.hpp"

#include <cmath>

#include "network/impl/spec_json.hpp"

namespace dtsim {

const char* nccl_algo_name(int a) { return a == kNcclTree ? "tree" : "ring"; }
const char* nccl_proto_name(int p) { return p == kNcclLL ? "LL" : p == kNcclLL128 ? "LL128" : "Simple"; }

NcclTuning default_nccl_tuning() {
  // NCCL's constants (NVIDIA/nccl src/graph/tuning.cc and topo.h, the 2.19-era tables with Hopper
  // rows; docs/cluster-format.md cites them). Latencies there are in microseconds, bandwidths in GB/s.
  NcclTuning t;
  t.channels = 16;
  t.link_efficiency = {20.6 / 25.0, 12.0 / 16.0, 0.94};
  t.base_latency_s[kNcclTree] = {6.8e-6, 14.0e-6, 0.0};
  t.base_latency_s[kNcclRing] = {6.6e-6, 14.0e-6, 8.4e-6};
  t.hop_latency_s[kHwNvlink][kNcclTree] = {0.6e-6, 1.25e-6, 28e-6};
  t.hop_latency_s[kHwNvlink][kNcclRing] = {0.6e-6, 1.9e-6, 3.4e-6};
  t.hop_latency_s[kHwPcie][kNcclTree] = {1.0e-6, 1.9e-6, 28e-6};
  t.hop_latency_s[kHwPcie][kNcclRing] = {1.0e-6, 2.5e-6, 5.7e-6};
  t.hop_latency_s[kHwNet][kNcclTree] = {5.0e-6, 8.5e-6, 28e-6};
  t.hop_latency_s[kHwNet][kNcclRing] = {2.7e-6, 4.0e-6, 14.0e-6};
  t.algo_bandwidth = {0.92, 1.0};
  t.proto_bandwidth[kNcclTree] = {1.0 / 3.8, 7.0 / 9.0, 1.0};
  t.proto_bandwidth[kNcclRing] = {1.0 / 4.0, 0.92, 1.0};
  t.ll_max_bus_bandwidth_Bps = {87.7e9, 22.5e9, 19.0e9};
  t.ring_ll128_max_per_channel_Bps = {36.7e9, 36.7e9, 36.7e9};
  t.tree_ll128_max_per_channel_Bps = {36.7e9, 36.7e9, 29.0e9};
  t.tree_max_per_channel_Bps = {38.7e9, 41.4e9, 36.0e9};
  t.threads = {512, 640, 512};
  t.thread_threshold_bytes = {8, 8, 64};
  t.tree_correction[kNcclLL] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0};
  t.tree_correction[kNcclLL128] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0};
  t.tree_correction[kNcclSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
  t.net_overhead_s = 1.0e-6;
  t.ring_simple_multinode_latency_factor = 1.4;
  for (auto& a : t.enabled) a = {true, true, true};
  return t;
}

namespace {

const char* const kProtoKeys[kNcclProtos] = {"ll", "ll128", "simple"};
const char* const kAlgoKeys[kNcclAlgos] = {"tree", "ring"};
const char* const kHwKeys[kNcclHws] = {"nvlink", "pcie", "net"};

// {"ll": x, "ll128": y, "simple": z}: any subset overrides; values in [min, max] times `unit`.
void per_proto(JsonObject& o, const std::string& key, NcclTuning::PerProto& v, double min, double max, double unit) {
  if (!o.has(key)) return;
  JsonObject t = o.object(key);
  for (int p = 0; p < kNcclProtos; ++p)
    if (t.has(kProtoKeys[p])) v[p] = t.number(kProtoKeys[p], min, max) * unit;
  t.reject_unknown();
}
void per_algo_proto(JsonObject& o, const std::string& key, NcclTuning::PerAlgoProto& v, double min, double max) {
  if (!o.has(key)) return;
  JsonObject t = o.object(key);
  for (int a = 0; a < kNcclAlgos; ++a) per_proto(t, kAlgoKeys[a], v[a], min, max, 1.0);
  t.reject_unknown();
}
// [1 node, 2 nodes, more] in GB/s.
void per_nodes(JsonObject& o, const std::string& key, NcclTuning::PerNodes& v) {
  if (!o.has(key)) return;
  const Json& j = o.raw(key);
  if (!j.is_array() || j.size() != 3) o.fail(key, "must be an array of 3 numbers (1 node, 2 nodes, more nodes)");
  for (size_t i = 0; i < 3; ++i) {
    if (!j[i].is_number() || !(j[i].get<double>() > 0) || !std::isfinite(j[i].get<double>()))
      o.fail(key + "[" + std::to_string(i) + "]", "must be a number greater than 0");
    v[i] = j[i].get<double>() * 1e9;
  }
}

// The link tables: efficiencies, latencies per call and per hop, bandwidth factors and ceilings.
void read_links(JsonObject& n, NcclTuning& t) {
  if (n.has("link_efficiency")) {
    JsonObject e = n.object("link_efficiency");
    for (int h = 0; h < kNcclHws; ++h) t.link_efficiency[h] = share_or(e, kHwKeys[h], t.link_efficiency[h]);
    e.reject_unknown();
  }
  per_algo_proto(n, "base_latency_s", t.base_latency_s, 0.0, 1.0);
  if (n.has("hop_latency_s")) {
    JsonObject h = n.object("hop_latency_s");
    for (int w = 0; w < kNcclHws; ++w) per_algo_proto(h, kHwKeys[w], t.hop_latency_s[w], 0.0, 1.0);
    h.reject_unknown();
  }
  if (n.has("algo_bandwidth")) {
    JsonObject a = n.object("algo_bandwidth");
    for (int i = 0; i < kNcclAlgos; ++i) t.algo_bandwidth[i] = share_or(a, kAlgoKeys[i], t.algo_bandwidth[i]);
    a.reject_unknown();
  }
  per_algo_proto(n, "proto_bandwidth", t.proto_bandwidth, 1e-3, 1.0);
  per_nodes(n, "ll_max_bus_bandwidth_GBps", t.ll_max_bus_bandwidth_Bps);
  per_nodes(n, "ring_ll128_max_per_channel_GBps", t.ring_ll128_max_per_channel_Bps);
  per_nodes(n, "tree_ll128_max_per_channel_GBps", t.tree_ll128_max_per_channel_Bps);
  per_nodes(n, "tree_max_per_channel_GBps", t.tree_max_per_channel_Bps);
}

// {"ring": ["LL", "LL128", "Simple"], "tree": [...]}: NCCL_ALGO / NCCL_PROTO as data.
void read_enabled(JsonObject& n, NcclTuning& t) {
  if (!n.has("enabled")) return;
  JsonObject e = n.object("enabled");
  for (int a = 0; a < kNcclAlgos; ++a) {
    if (!e.has(kAlgoKeys[a])) continue;
    const Json& list = e.raw(kAlgoKeys[a]);
    if (!list.is_array()) e.fail(kAlgoKeys[a], "must be an array of protocol names (LL, LL128, Simple)");
    t.enabled[a] = {false, false, false};
    for (const auto& x : list) {
      int found = -1;
      for (int p = 0; p < kNcclProtos; ++p)
        if (x.is_string() && x.get<std::string>() == nccl_proto_name(p)) found = p;
      if (found < 0) e.fail(kAlgoKeys[a], "unknown protocol " + x.dump() + " (LL, LL128, Simple)");
      t.enabled[a][found] = true;
    }
  }
  e.reject_unknown();
}

// The measured corrections of what a chosen protocol, and a collective, costs.
void read_cost_corrections(JsonObject& n, NcclTuning& t) {
  if (n.has("cost_correction")) {
    JsonObject cc = n.object("cost_correction");
    per_proto(cc, "latency", t.cost_latency_scale, 1e-3, 1e3, 1.0);
    per_proto(cc, "bandwidth", t.cost_bandwidth_scale, 1e-3, 1e3, 1.0);
    cc.reject_unknown();
  }
  if (n.has("op_bandwidth")) {
    static const char* const ops[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"};
    JsonObject ob = n.object("op_bandwidth");
    for (int i = 0; i < 5; ++i) t.op_bandwidth[i] = ob.number_or(ops[i], t.op_bandwidth[i], 1e-3, 1e3);
    ob.reject_unknown();
  }
}

}  // namespace

NcclTuning parse_nccl_tuning(JsonObject& n) {
  NcclTuning t = default_nccl_tuning();
  t.channels = static_cast<int>(n.integer_or("channels", t.channels, 1, 256));
  read_links(n, t);
  per_proto(n, "threads", t.threads, 32, 4096, 1.0);
  per_proto(n, "thread_threshold_bytes", t.thread_threshold_bytes, 1, 1 << 20, 1.0);
  t.net_overhead_s = n.number_or("net_overhead_s", t.net_overhead_s, 0.0, 1.0);
  t.ring_simple_multinode_latency_factor = n.number_or("ring_simple_multinode_latency_factor", t.ring_simple_multinode_latency_factor, 1.0, 10.0);
  read_enabled(n, t);
  read_cost_corrections(n, t);
  if (n.has("nvls")) {
    JsonObject v = n.object("nvls");
    t.nvls.enabled = v.boolean_or("enabled", t.nvls.enabled);
    t.nvls.efficiency = share_or(v, "efficiency", t.nvls.efficiency);
    t.nvls.channels = static_cast<int>(v.integer_or("channels", t.nvls.channels, 2, 256));
    t.nvls.latency_s = v.number_or("latency_s", t.nvls.latency_s, 0.0, 1.0);
    t.nvls.net_latency_s = v.number_or("net_latency_s", t.nvls.net_latency_s, 0.0, 1.0);
    if (v.has("tree_max_per_channel_GBps")) {
      NcclTuning::PerNodes m{};
      per_nodes(v, "tree_max_per_channel_GBps", m);
      t.nvls.tree_max_per_channel_Bps = m;
    }
    v.str_or("note", "");
    v.reject_unknown();
  }
  if (n.has("pat")) {
    JsonObject v = n.object("pat");
    t.pat.enabled = v.boolean_or("enabled", t.pat.enabled);
    t.pat.bandwidth_factor = share_or(v, "bandwidth_factor", t.pat.bandwidth_factor);
    t.pat.base_latency_s = v.number_or("base_latency_s", t.pat.base_latency_s, 0.0, 1.0);
    t.pat.per_rank_latency_s = v.number_or("per_rank_latency_s", t.pat.per_rank_latency_s, 0.0, 1.0);
    t.pat.net_latency_divisor = v.number_or("net_latency_divisor", t.pat.net_latency_divisor, 1e-3, 1e3);
    v.reject_unknown();
  }
  if (n.has("calibration")) t.calibration = n.raw("calibration");
  n.str_or("note", "");
  n.reject_unknown();
  bool any = false;
  for (const auto& a : t.enabled)
    for (bool b : a) any = any || b;
  if (!any) n.fail("enabled", "enables no (algorithm, protocol) pair");
  return t;
}

NcclTuning parse_nccl_tuning(const Json& j, const std::string& what, const std::string& path) {
  JsonObject n(j, what, path);
  return parse_nccl_tuning(n);
}

}  // namespace dtsim
