#include "core/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "core/output.hpp"
#include "core/text_file.hpp"

namespace dtsim {

Json load_json_file(const std::string& path) {
  // Read with a cap, so that a device or an endless pipe given as a file cannot exhaust memory; a
  // run file may be stored gzip-compressed (core/text_file.hpp).
  const std::string text = read_text_file(path);
  // nlohmann::json keeps one of two equal keys without a word: a duplicated field would silently
  // override (or be overridden by) the first. The parser's callback tracks where it is (the JSON
  // path of every open object and array) and refuses a key its object already has.
  // The path is only spelled out when a duplicate is found (a predictor manifest has thousands of
  // values, and building every value's path string cost more than the parse itself).
  struct Frame {
    bool array = false;
    size_t elements = 0;             // arrays: elements completed so far
    std::vector<std::string> keys;   // objects: keys seen so far (objects are small: a linear scan)
  };
  std::vector<Frame> stack;
  auto element_done = [&]() {
    if (!stack.empty() && stack.back().array) ++stack.back().elements;
  };
  // The JSON path of the innermost open container (each frame is its parent's current element).
  auto open_path = [&]() {
    std::string where = "$";
    for (size_t i = 0; i + 1 < stack.size(); ++i)
      where += stack[i].array ? "[" + std::to_string(stack[i].elements) + "]" : "." + stack[i].keys.back();
    return where;
  };
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start: {
        Frame f;
        f.array = event == Json::parse_event_t::array_start;
        stack.push_back(std::move(f));
        break;
      }
      case Json::parse_event_t::key: {
        Frame& f = stack.back();
        const std::string& key = parsed.get_ref<const std::string&>();
        if (std::find(f.keys.begin(), f.keys.end(), key) != f.keys.end())
          throw InputError(path + ": " + open_path() + "." + key, "duplicate key '" + key + "' (a key may appear once in an object)");
        f.keys.push_back(key);
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack.pop_back();
        element_done();
        break;
      case Json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, callback);
  } catch (const Json::exception& e) {
    // parse_error, and out_of_range for a number beyond double's range (1e999).
    throw InputError(path, std::string("not valid JSON (") + e.what() + ")");
  }
}

static const char* type_name(const Json& j) {
  return j.type_name();
}

JsonObject::JsonObject(const Json& j, std::string what, std::string path)
    : j_(j), what_(std::move(what)), path_(std::move(path)) {
  if (!j_.is_object()) throw InputError(what_ + ": " + path_, std::string("must be an object, not ") + type_name(j_));
}

bool JsonObject::has(const std::string& key) const { return j_.contains(key); }

std::string JsonObject::path_of(const std::string& key) const { return path_ + "." + key; }

void JsonObject::fail(const std::string& key, const std::string& rule) const {
  throw InputError(what_ + ": " + (key.empty() ? path_ : path_of(key)), rule);
}

const Json& JsonObject::raw(const std::string& key) {
  auto it = j_.find(key);
  if (it == j_.end()) fail(key, "required field is missing");
  read_.insert(key);
  return *it;
}

std::string JsonObject::str(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_string()) fail(key, std::string("must be a string, not ") + type_name(v));
  return v.get<std::string>();
}

std::string JsonObject::str_or(const std::string& key, const std::string& fallback) {
  return has(key) ? str(key) : fallback;
}

double JsonObject::number(const std::string& key, double min, double max) {
  const Json& v = raw(key);
  if (!v.is_number()) fail(key, std::string("must be a number, not ") + type_name(v));
  double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "must be finite");
  if (x < min || x > max) {
    // An open-ended range (positive() without a cap) says only its lower bound.
    if (max == std::numeric_limits<double>::max()) fail(key, "must be at least " + fmt_number(min) + ", got " + fmt_number(x));
    fail(key, "must be in [" + fmt_number(min) + ", " + fmt_number(max) + "], got " + fmt_number(x));
  }
  return x;
}

double JsonObject::number_or(const std::string& key, double fallback, double min, double max) {
  return has(key) ? number(key, min, max) : fallback;
}

double JsonObject::positive(const std::string& key, double max) {
  double x = number(key, 0.0, max);
  if (!(x > 0)) fail(key, "must be greater than 0");
  return x;
}

int64_t JsonObject::integer(const std::string& key, int64_t min, int64_t max) {
  const Json& v = raw(key);
  if (!v.is_number_integer()) fail(key, std::string("must be an integer, not ") + (v.is_number() ? "a fraction" : type_name(v)));
  // Unsigned values above int64 range come back as huge numbers; compare in the signed domain safely.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(key, "is too large");
  int64_t x = v.get<int64_t>();
  if (x < min || x > max) fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(x));
  return x;
}

int64_t JsonObject::integer_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  return has(key) ? integer(key, min, max) : fallback;
}

bool JsonObject::boolean_or(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const Json& v = raw(key);
  if (!v.is_boolean()) fail(key, std::string("must be true or false, not ") + type_name(v));
  return v.get<bool>();
}

JsonObject JsonObject::object(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_object()) fail(key, std::string("must be an object, not ") + type_name(v));
  return JsonObject(v, what_, path_of(key));
}

void JsonObject::reject_unknown() const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (!read_.count(it.key())) fail(it.key(), "unknown field");
}

JsonObject array_object(const Json& array, size_t i, const std::string& what, const std::string& array_path) {
  return JsonObject(array.at(i), what, array_path + "[" + std::to_string(i) + "]");
}

}  // namespace dtsim
