#include "compiler/common/strict_json.h"

#include <set>
#include <vector>

namespace cocoon {

StrictJson ParseJsonRejectingDuplicateKeys(std::string_view text) {
  StrictJson out;
  std::vector<std::set<std::string>> open_objects;  // the keys seen so far, per open object
  StrictJson::Error found = StrictJson::Error::kNone;
  auto check = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end && !open_objects.empty()) {
      open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty() && found == StrictJson::Error::kNone) {
      auto key = parsed.get<std::string>();
      if (key.find('\0') != std::string::npos) {
        found = StrictJson::Error::kNulInKey;
        for (char c : key.substr(0, 64)) out.key += c == '\0' ? std::string("\\u0000") : std::string(1, c);
      } else if (!open_objects.back().insert(key).second) {
        found = StrictJson::Error::kDuplicateKey;
        out.key = key.substr(0, 64);
      }
    }
    return true;
  };
  out.value = nlohmann::json::parse(text, check, /*allow_exceptions=*/false);
  if (found != StrictJson::Error::kNone) {
    out.error = found;
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
  } else if (out.value.is_discarded()) {
    out.error = StrictJson::Error::kInvalid;
  }
  return out;
}

}  // namespace cocoon
