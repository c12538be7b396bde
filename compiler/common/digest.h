// SHA-256 helper shared by the compiler (artifact and policy hashes), the
// enforcer (manifest verification, BPF cache) and audit. This and audit/ are
// the only places that include OpenSSL.
#pragma once

#include <string>
#include <string_view>

namespace cocoon {

// Lower-case hex SHA-256 of the bytes.
std::string Sha256Hex(std::string_view bytes);

}  // namespace cocoon
