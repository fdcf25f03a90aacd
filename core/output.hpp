#pragma once
// Output helpers shared by the commands: aligned text tables, CSV, and files written atomically
// (a temporary name, then rename) so that a failed run never leaves a half-written file.
#include <string>
#include <vector>

namespace dtsim {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Columns whose cells are numbers are right-aligned.
  std::string to_text() const;
  std::string to_csv() const;
};

// Short human formats: "12.3 ms", "4.56 GB/s"; fixed significant digits.
std::string fmt_time(double seconds);
// Long durations for people: "42.5 s", "12.8 min", "3.4 h", "2.1 days".
std::string fmt_duration(double seconds);
// Byte counts for people: "102.2 MB", "1.53 GB".
std::string fmt_bytes(double bytes);
std::string fmt_count(double x);  // 25.6M, 4.09G
std::string fmt_sig(double x, int digits = 4);
// Numbers in messages and machine-readable cells: an integral value as the full integer ("1024",
// "1048576"), any other with 6 significant digits ("0.001", "2.5", "1.5e+20").
std::string fmt_number(double x);

void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace dtsim
