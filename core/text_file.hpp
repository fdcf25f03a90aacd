#pragma once
// Measured data may be stored gzip-compressed (a file past a few MB is kept as NAME.gz). Every reader of
// data files goes through here, so a caller names the file as NAME and either form is read.
#include <string>

namespace dtsim {

// `path` when it exists, else `path`.gz when that exists, else `path` (whose opening then fails).
std::string existing_data_path(const std::string& path);

// The file's whole text, decompressed when it is gzip data (plain files are read as they are).
// Throws InputError naming the file when it cannot be opened or read, or is larger than max_bytes.
std::string read_text_file(const std::string& path, size_t max_bytes = size_t(256) << 20);

}  // namespace dtsim
