#include "core/output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "core/error.hpp"

namespace dtsim {

static bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

std::string Table::to_text() const {
  size_t ncol = header.size();
  std::vector<size_t> width(ncol, 0);
  std::vector<bool> right(ncol, true);
  for (size_t c = 0; c < ncol; ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < ncol && c < r.size(); ++c) {
      width[c] = std::max(width[c], r[c].size());
      if (!looks_numeric(r[c])) right[c] = false;
    }
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t c = 0; c < ncol; ++c) {
      const std::string& cell = c < r.size() ? r[c] : std::string();
      std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      if (c) l += "  ";
      l += right[c] ? pad + cell : cell + pad;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t c = 0; c < ncol; ++c) rule.push_back(std::string(width[c], '-'));
  line(rule);
  for (const auto& r : rows) line(r);
  return out;
}

static std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string Table::to_csv() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t c = 0; c < r.size(); ++c) out += (c ? "," : "") + csv_cell(r[c]);
    out += "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string fmt_sig(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string fmt_number(double x) {
  char buf[64];
  if (x == 0) x = 0;  // no "-0"
  // Below 2^53 every integer is exact; beyond, digits past the 17th would be invented.
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9007199254740992.0) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string fmt_time(double s) {
  char buf[64];
  double a = std::fabs(s);
  if (a == 0) return "0";
  if (a >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  return buf;
}

std::string fmt_duration(double s) {
  char b[64];
  if (s >= 86400 * 2) std::snprintf(b, sizeof b, "%.1f days", s / 86400);
  else if (s >= 3600) std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  else if (s >= 60) std::snprintf(b, sizeof b, "%.1f min", s / 60);
  else std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

std::string fmt_bytes(double bytes) {
  char b[32];
  if (bytes >= 1e9) std::snprintf(b, sizeof b, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e3) std::snprintf(b, sizeof b, "%.1f kB", bytes / 1e3);
  else std::snprintf(b, sizeof b, "%.0f B", bytes);
  return b;
}

std::string fmt_count(double x) {
  const char* suffix[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(x) >= 1000 && i < 5) { x /= 1000; ++i; }
  char buf[64];
  if (i == 0) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%.2f%s", x, suffix[i]);
  return buf;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "cannot write file");
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(path, "cannot write file");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "cannot rename temporary file into place");
  }
}

}  // namespace dtsim
