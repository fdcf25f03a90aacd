#pragma once
// Lists on the command line: "1,2,4,8", ranges "1..8" (every integer), "1..64:x2" (doubling) and
// "8..64:+8" (every 8th),
// sizes with binary suffixes "4K", "1M", "1G" (KiB, MiB, GiB). Errors name the flag.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text, int64_t min, int64_t max);
std::vector<std::string> split(const std::string& text, char sep);

// One count (a dataset size): an integer, in decimal or scientific notation ("1281167", "1.2e6") or
// with a binary suffix ("1M"); InputError naming the flag unless it is a whole number in [0, 2^62].
int64_t parse_count(const std::string& flag, const std::string& text);

// Lists of positive reals: "0.5,1,2" and "0.25..4:x2" (a geometric range).
std::vector<double> parse_real_list(const std::string& flag, const std::string& text, double min, double max);

}  // namespace dtsim
