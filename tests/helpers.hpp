#pragma once
#include <string>

#include "core/json_util.hpp"
#include "workload/model_json.hpp"

// A model from an inline JSON string (layers only; input 3 x 32 x 32 unless given).
inline dtsim::Graph model_from(const std::string& layers_json, const std::string& input = R"({"channels":3,"height":32,"width":32})") {
  std::string doc = R"({"name":"t","input":)" + input + R"(,"layers":)" + layers_json + "}";
  return dtsim::parse_model(dtsim::Json::parse(doc), "test.json");
}

inline dtsim::Graph tiny() { return dtsim::load_model(std::string(DTSIM_TEST_DATA) + "/tiny.json"); }
