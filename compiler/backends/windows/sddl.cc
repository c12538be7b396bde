#include "compiler/backends/windows/sddl.h"

#include <cctype>

namespace cocoon::backends::windows {

bool IsValidSid(std::string_view sid) {
  if (sid.size() == 2) return std::isupper(static_cast<unsigned char>(sid[0])) && std::isupper(static_cast<unsigned char>(sid[1]));
  if (sid.substr(0, 2) != "S-") return false;
  size_t parts = 0;
  size_t digits = 0;
  for (size_t i = 2; i <= sid.size(); ++i) {
    if (i == sid.size() || sid[i] == '-') {
      if (digits == 0 || digits > 10) return false;
      ++parts;
      digits = 0;
    } else if (std::isdigit(static_cast<unsigned char>(sid[i]))) {
      ++digits;
    } else {
      return false;
    }
  }
  return parts >= 3 && parts <= 17;  // revision, authority, 1..15 sub-authorities
}

Result<std::string> Ace(AceType type, std::string_view rights, std::string_view sid) {
  if (!IsValidSid(sid)) return InvalidArgumentError("invalid SID '" + std::string(sid) + "'");
  for (char c : rights) {
    if (!std::isupper(static_cast<unsigned char>(c))) return InvalidArgumentError("invalid SDDL rights");
  }
  std::string_view code = type == AceType::kAllow ? "A" : type == AceType::kDeny ? "D" : "ML";
  return "(" + std::string(code) + ";OICI;" + std::string(rights) + ";;;" + std::string(sid) + ")";
}

}  // namespace cocoon::backends::windows
