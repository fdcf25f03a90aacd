#include "core/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/output.hpp"

namespace dtsim {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// One integer with an optional K/M/G (binary) suffix.
static int64_t parse_one(const std::string& flag, const std::string& s, int64_t min, int64_t max) {
  if (s.empty()) throw InputError(flag, "empty value in list");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || errno == ERANGE) throw InputError(flag, "'" + s + "' is not an integer");
  int shift = 0;
  std::string rest(end);
  if (rest == "K" || rest == "k") shift = 10;
  else if (rest == "M") shift = 20;
  else if (rest == "G") shift = 30;
  else if (!rest.empty()) throw InputError(flag, "'" + s + "' is not an integer (suffixes: K, M, G)");
  if (v < 0 || (shift && v > (INT64_MAX >> shift))) throw InputError(flag, "'" + s + "' is out of range");
  int64_t x = static_cast<int64_t>(v) << shift;
  if (x < min || x > max) throw InputError(flag, "'" + s + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

int64_t parse_count(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() && errno == 0 && (*end == '\0' || ((*end == 'K' || *end == 'k' || *end == 'M' || *end == 'G') && end[1] == '\0')))
    return parse_one(flag, text, 0, int64_t(1) << 62);
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw InputError(flag, "'" + text + "' is not an integer (as 1281167, 1.2e6 or 1M)");
  if (v != std::floor(v)) throw InputError(flag, "'" + text + "' is not a whole number");
  if (v < 0 || v > static_cast<double>(int64_t(1) << 62)) throw InputError(flag, "'" + text + "' must be in [0, " + std::to_string(int64_t(1) << 62) + "]");
  return static_cast<int64_t>(v);
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  constexpr size_t kMaxValues = 100000;
  std::vector<int64_t> out;
  for (const std::string& item : split(text, ',')) {
    size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_one(flag, item, min, max));
      continue;
    }
    std::string hi_text = item.substr(dots + 2);
    int64_t factor = 0, stride = 1;
    if (size_t colon = hi_text.find(':'); colon != std::string::npos) {
      std::string step = hi_text.substr(colon + 1);
      hi_text = hi_text.substr(0, colon);
      if (step.size() < 2 || (step[0] != 'x' && step[0] != '+'))
        throw InputError(flag, "range step must be written xK (multiply) or +K (add), as in 1..64:x2 or 8..1024:+8");
      if (step[0] == 'x') {
        factor = parse_one(flag, step.substr(1), 0, INT64_MAX);
        if (factor < 2 || factor > (1 << 20)) throw InputError(flag, "range step '" + step + "' must multiply by a factor in [2, 1048576], as in 1..64:x2");
      } else {
        stride = parse_one(flag, step.substr(1), 0, INT64_MAX);
        if (stride < 1) throw InputError(flag, "range step '" + step + "' must add at least 1, as in 8..1024:+8");
      }
    }
    int64_t lo = parse_one(flag, item.substr(0, dots), min, max), hi = parse_one(flag, hi_text, min, max);
    if (lo > hi) throw InputError(flag, "range '" + item + "' runs backwards");
    if (stride > 1) {
      if ((hi - lo) / stride >= static_cast<int64_t>(kMaxValues)) throw InputError(flag, "more than 100000 values");
      for (int64_t v = lo; v <= hi; v = (v > hi - stride) ? hi + 1 : v + stride) out.push_back(v);
    } else if (factor) {
      if (lo == 0) throw InputError(flag, "a geometric range cannot start at 0");
      for (int64_t v = lo; v <= hi; v = (v > hi / factor) ? hi + 1 : v * factor) {
        out.push_back(v);
        if (out.size() > kMaxValues) throw InputError(flag, "more than 100000 values");
      }
    } else {
      if (hi - lo >= static_cast<int64_t>(kMaxValues)) throw InputError(flag, "more than 100000 values");
      for (int64_t v = lo; v <= hi; ++v) out.push_back(v);
    }
  }
  return out;
}

static double parse_real(const std::string& flag, const std::string& s) {
  if (s.empty()) throw InputError(flag, "empty value in list");
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) throw InputError(flag, "'" + s + "' is not a number");
  return v;
}

std::vector<double> parse_real_list(const std::string& flag, const std::string& text, double min, double max) {
  constexpr size_t kMaxValues = 10000;
  std::vector<double> out;
  auto check = [&](double v, const std::string& s) {
    if (v < min || v > max) throw InputError(flag, "'" + s + "' must be in [" + fmt_number(min) + ", " + fmt_number(max) + "]");
    return v;
  };
  for (const std::string& item : split(text, ',')) {
    size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(check(parse_real(flag, item), item));
      continue;
    }
    std::string hi_text = item.substr(dots + 2);
    size_t colon = hi_text.find(':');
    if (colon == std::string::npos || colon + 2 > hi_text.size() || hi_text[colon + 1] != 'x')
      throw InputError(flag, "a range of reals needs a factor, as in 0.25..4:x2");
    double factor = parse_real(flag, hi_text.substr(colon + 2));
    hi_text = hi_text.substr(0, colon);
    double lo = check(parse_real(flag, item.substr(0, dots)), item), hi = check(parse_real(flag, hi_text), item);
    if (!(factor > 1)) throw InputError(flag, "range factor must be greater than 1");
    if (lo <= 0) throw InputError(flag, "a geometric range must start above 0");
    if (lo > hi) throw InputError(flag, "range '" + item + "' runs backwards");
    // A relative tolerance keeps the top of 0.25..4:x2 in despite rounding.
    for (double v = lo; v <= hi * (1 + 1e-9); v *= factor) {
      out.push_back(v);
      if (out.size() > kMaxValues) throw InputError(flag, "more than 10000 values");
    }
  }
  return out;
}

}  // namespace dtsim
