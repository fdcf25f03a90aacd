#include "core/text_file.hpp"

#include <zlib.h>

#include <filesystem>

#include "core/error.hpp"

namespace dtsim {

std::string existing_data_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  const std::string gz = path + ".gz";
  return std::filesystem::exists(gz, ec) ? gz : path;
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  const std::string file = existing_data_path(path);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw InputError(file, "is a folder, not a file");
  // gzread passes a file that is not gzip data through unchanged, so one path reads both forms.
  gzFile in = gzopen(file.c_str(), "rb");
  if (!in) throw InputError(file, "cannot open file");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(in, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      gzclose(in);
      throw InputError(file, "larger than " + std::to_string(max_bytes >> 20) + " MiB: not an input file");
    }
  }
  int err = Z_OK;
  const char* msg = n < 0 ? gzerror(in, &err) : nullptr;
  const std::string why = msg ? msg : "";
  gzclose(in);
  if (n < 0) throw InputError(file, "cannot read file (" + why + ")");
  return text;
}

}  // namespace dtsim
