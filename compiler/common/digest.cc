#include "compiler/common/digest.h"

// OpenSSL 3's one-shot SHA256() goes through EVP_Q_digest: the first call
// loads openssl.cnf, starts the default provider and builds its name map
// (~1 ms of CPU, a third of a cached `cocoon enforce` launch). The low-level
// SHA256_Init/Update/Final run the same assembly without any of that; they
// are only deprecated in favour of EVP, not removed (OpenSSL 3 migration guide).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace cocoon {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_CTX context;
  SHA256_Init(&context);
  SHA256_Update(&context, bytes.data(), bytes.size());
  SHA256_Final(digest, &context);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char byte : digest) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

}  // namespace cocoon
