#include "study/verdict.hpp"

#include <algorithm>
#include <tuple>

namespace dtsim {

IterationShares iteration_shares(const Prediction& p) {
  IterationShares s;
  s.compute_bound_s = p.timeline.compute_bound_s;
  s.memory_bound_s = p.timeline.memory_bound_s;
  s.exposed_comm_s = p.exposed_comm_s;
  s.host_idle_s = p.host_idle_s;
  s.iteration_s = p.iteration_s;
  s.bound = p.bottleneck;  // predict()'s bottleneck_rule: the largest part whose improvement shortens the iteration
  return s;
}

double part_s(const IterationShares& s, Resource r) {
  switch (r) {
    case Resource::Compute: return s.compute_bound_s;
    case Resource::Memory: return s.memory_bound_s;
    case Resource::Communication: return s.exposed_comm_s;
    case Resource::Host: return s.host_idle_s;
  }
  return 0;
}

std::vector<Resource> parts_passed_over(const IterationShares& s) {
  double bound_part = 0;
  for (Resource r : kIterationParts)
    if (s.bound == resource_name(r)) bound_part = part_s(s, r);
  std::vector<Resource> larger;
  for (Resource r : kIterationParts)
    if (part_s(s, r) > bound_part) larger.push_back(r);
  return larger;
}

std::optional<double> threshold_below(double efficiency) {
  for (double t : efficiency_thresholds())
    if (efficiency < t) return t;
  return std::nullopt;
}

std::vector<Series> sweep_series(const SweepResult& res) {
  std::vector<Series> out;
  std::map<std::tuple<std::string, std::string, int64_t>, size_t> index;
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const StudyRow& r = res.rows[i];
    auto key = std::make_tuple(r.p.model, r.what_if.label(), r.p.batch_per_gpu);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      out.push_back(Series{r.p.model, r.what_if.label(), r.p.batch_per_gpu, {}, {}});
    }
    out[it->second].rows.push_back(i);
  }
  for (Series& s : out) {
    std::stable_sort(s.rows.begin(), s.rows.end(), [&](size_t a, size_t b) { return res.rows[a].p.gpus < res.rows[b].p.gpus; });
    for (double t : efficiency_thresholds())
      for (size_t k = 0; k < s.rows.size(); ++k) {
        if (res.rows[s.rows[k]].p.scaling_efficiency >= t) continue;
        EfficiencyDrop d;
        d.threshold = t;
        d.row = s.rows[k];
        if (k > 0) d.previous = s.rows[k - 1];
        s.drops.push_back(d);
        break;
      }
  }
  return out;
}

int SweepSummary::bound_count(const std::string& bound) const {
  auto it = by_bound.find(bound);
  return it == by_bound.end() ? 0 : it->second;
}

namespace {

SweepSummary summarize(const std::vector<StudyRow>& rows) {
  SweepSummary s;
  s.configurations = rows.size();
  for (const auto& r : rows) {
    s.by_bound[iteration_shares(r.p).bound]++;
    s.do_not_fit += !r.memory.fits;
  }
  s.capacity_bytes = rows[0].memory.capacity_bytes;
  return s;
}

// Per (model, what-if), in the order first seen: the throughput gain over the baseline row of the
// same model, batch and GPU count, at the largest GPU count swept.
std::vector<WhatIfEffect> what_if_effects(const std::vector<StudyRow>& rows) {
  std::map<std::tuple<std::string, int64_t, int64_t>, const StudyRow*> baseline;
  for (const auto& r : rows)
    if (r.what_if.is_baseline()) baseline[{r.p.model, r.p.batch_per_gpu, r.p.gpus}] = &r;
  std::vector<WhatIfEffect> effects;
  if (baseline.empty()) return effects;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (model, what-if) -> effects
  int64_t max_gpus = 0;
  for (const auto& r : rows) max_gpus = std::max<int64_t>(max_gpus, r.p.gpus);
  for (const auto& r : rows) {
    if (r.what_if.is_baseline() || r.p.gpus != max_gpus) continue;
    auto b = baseline.find({r.p.model, r.p.batch_per_gpu, r.p.gpus});
    if (b == baseline.end()) continue;
    const double gain = r.p.throughput_samples_per_s / b->second->p.throughput_samples_per_s - 1;
    auto key = std::make_pair(r.p.model, r.what_if.label());
    auto it = index.find(key);
    if (it == index.end()) {
      index[key] = effects.size();
      effects.push_back(WhatIfEffect{key.first, key.second, r.p.gpus, gain, gain});
    } else {
      WhatIfEffect& e = effects[it->second];
      e.gain_min = std::min(e.gain_min, gain);
      e.gain_max = std::max(e.gain_max, gain);
    }
  }
  return effects;
}

// One (model, what-if)'s recommendation from its rows, in sweep order.
Recommendation recommend(const std::vector<StudyRow>& rows, const std::vector<size_t>& of_key) {
  Recommendation rec;
  for (size_t i : of_key) {
    const StudyRow& r = rows[i];
    if (!r.memory.fits) {
      rec.do_not_fit_batch_per_gpu.insert(r.p.batch_per_gpu);
      continue;
    }
    if (!rec.fastest || r.p.throughput_samples_per_s > rows[*rec.fastest].p.throughput_samples_per_s) rec.fastest = i;
    if (r.p.scaling_efficiency < efficiency_thresholds().front()) continue;
    const StudyRow* efficient = rec.largest_efficient ? &rows[*rec.largest_efficient] : nullptr;
    if (!efficient || r.p.gpus > efficient->p.gpus ||
        (r.p.gpus == efficient->p.gpus && r.p.throughput_samples_per_s > efficient->p.throughput_samples_per_s))
      rec.largest_efficient = i;
  }
  return rec;
}

std::vector<Recommendation> recommendations(const std::vector<StudyRow>& rows) {
  std::vector<std::pair<std::string, std::string>> keys;  // (model, what-if), in the order first seen
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_key;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto key = std::make_pair(rows[i].p.model, rows[i].what_if.label());
    if (!by_key.count(key)) keys.push_back(key);
    by_key[key].push_back(i);
  }
  std::vector<Recommendation> recs;
  for (const auto& key : keys) {
    Recommendation rec = recommend(rows, by_key[key]);
    rec.model = key.first;
    rec.what_if = key.second;
    recs.push_back(std::move(rec));
  }
  return recs;
}

}  // namespace

SweepVerdict sweep_verdict(const SweepResult& res) {
  SweepVerdict v;
  v.series = sweep_series(res);
  if (res.rows.empty()) return v;
  v.summary = summarize(res.rows);
  v.what_if_effects = what_if_effects(res.rows);
  v.recommendations = recommendations(res.rows);
  return v;
}

}  // namespace dtsim
