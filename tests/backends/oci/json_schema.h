// A minimal JSON Schema (draft-07 subset) checker for the fields Cocoon emits:
// type, required, properties, additionalProperties (bool or schema), items,
// enum, const, minimum, maximum, minItems, pattern. Returns every violation
// as "path: message", so a failing test says what is wrong where.
#pragma once

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

namespace cocoon::testing {

class JsonSchema {
 public:
  explicit JsonSchema(nlohmann::json schema) : schema_(std::move(schema)) {}

  std::vector<std::string> Validate(const nlohmann::json& doc) const {
    std::vector<std::string> errors;
    Check(schema_, doc, "$", errors);
    return errors;
  }

 private:
  static bool HasType(const nlohmann::json& v, const std::string& type) {
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "boolean") return v.is_boolean();
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "null") return v.is_null();
    return false;
  }

  static void Check(const nlohmann::json& s, const nlohmann::json& v, const std::string& path,
                    std::vector<std::string>& errors) {
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok |= HasType(v, t.get<std::string>());
      } else {
        ok = HasType(v, s["type"].get<std::string>());
      }
      if (!ok) {
        errors.push_back(path + ": expected type " + s["type"].dump() + ", got " + v.dump());
        return;
      }
    }
    if (s.contains("const") && v != s["const"]) errors.push_back(path + ": must be " + s["const"].dump());
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found |= e == v;
      if (!found) errors.push_back(path + ": " + v.dump() + " not in " + s["enum"].dump());
    }
    if (v.is_number() && s.contains("minimum") && v.get<double>() < s["minimum"].get<double>()) {
      errors.push_back(path + ": below minimum");
    }
    if (v.is_number() && s.contains("maximum") && v.get<double>() > s["maximum"].get<double>()) {
      errors.push_back(path + ": above maximum");
    }
    if (v.is_string() && s.contains("pattern") &&
        !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>()))) {
      errors.push_back(path + ": " + v.dump() + " does not match " + s["pattern"].get<std::string>());
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) errors.push_back(path + ": too few items");
      if (s.contains("items")) {
        for (size_t i = 0; i < v.size(); ++i) Check(s["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
      }
    }
    if (v.is_object()) CheckObject(s, v, path, errors);
  }

  static void CheckObject(const nlohmann::json& s, const nlohmann::json& v, const std::string& path,
                          std::vector<std::string>& errors) {
    if (s.contains("required")) {
      for (const auto& key : s["required"]) {
        if (!v.contains(key.get<std::string>())) errors.push_back(path + ": missing " + key.get<std::string>());
      }
    }
    const nlohmann::json props = s.value("properties", nlohmann::json::object());
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string child = path + "." + it.key();
      if (props.contains(it.key())) {
        Check(props[it.key()], it.value(), child, errors);
      } else if (s.contains("additionalProperties")) {
        const auto& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) errors.push_back(child + ": unexpected property");
        if (extra.is_object()) Check(extra, it.value(), child, errors);
      }
    }
  }

  nlohmann::json schema_;
};

}  // namespace cocoon::testing
