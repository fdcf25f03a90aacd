#pragma once
// Shared by the fuzz targets: the contract under test is that bad input raises dtsim::InputError
// (exit 2 in the CLI) and nothing else: any other exception, crash, leak or undefined behaviour is a
// finding. Each target catches InputError only.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/json_util.hpp"

namespace dtsim::fuzz {

// The bytes as JSON, as load_json_file reads them; nullopt where the parser refuses them (that path
// is load_json_file's InputError, already covered).
inline std::optional<Json> json_of(const uint8_t* data, size_t size) {
  Json j = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace dtsim::fuzz
