#pragma once
// Strict reading of hand-written JSON: every field is typed and range-checked, every error names
// the file, the JSON path and the rule, and fields nobody reads are rejected (a typo in a field
// name must not silently fall back to a default).
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace dtsim {

using Json = nlohmann::json;

// Parses a whole file; a missing file or malformed JSON is an InputError naming the file.
Json load_json_file(const std::string& path);

class JsonObject {
 public:
  // `what` names the document (usually a file path); `path` is the JSON path of this object.
  JsonObject(const Json& j, std::string what, std::string path);

  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& rule) const;

  std::string str(const std::string& key);
  std::string str_or(const std::string& key, const std::string& fallback);
  // Finite numbers in [min, max]; `positive` excludes zero as well.
  double number(const std::string& key, double min, double max);
  double number_or(const std::string& key, double fallback, double min, double max);
  double positive(const std::string& key, double max = std::numeric_limits<double>::max());
  int64_t integer(const std::string& key, int64_t min, int64_t max);
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  bool boolean_or(const std::string& key, bool fallback);
  JsonObject object(const std::string& key);
  // Raw access for fields with several accepted forms; marks the key as read.
  const Json& raw(const std::string& key);
  // Every key of the object must have been read by now.
  void reject_unknown() const;

  const std::string& what() const { return what_; }
  const std::string& path() const { return path_; }

 private:
  const Json& j_;
  std::string what_;
  std::string path_;
  std::set<std::string> read_;
};

// Wraps an element of an array: checks it is an object.
JsonObject array_object(const Json& array, size_t i, const std::string& what, const std::string& array_path);

}  // namespace dtsim
