// Ed25519 keys for the audit log. Signing goes through OpenSSL 3
// (EVP_PKEY_ED25519); verifying goes through libsodium's
// crypto_sign_verify_detached, about 2.4x faster here (57 vs 136 us), which is
// what bounds `cocoon audit verify` of a log signed on every line. Both are
// RFC 8032 Ed25519: every signature OpenSSL makes verifies under libsodium,
// whose checks are only stricter (canonical S, no small-order key or R), so
// they can reject a malformed or forged signature, never an honest one.
//
// Files: the private key is PKCS#8 PEM, mode 0600; the public key is
// SubjectPublicKeyInfo PEM at PATH.pub. A trust file holds one or more public
// key PEM blocks. The key id is "ed25519:" + the first 32 hex digits of
// SHA-256(raw 32-byte public key), so it is derived from the key alone.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::audit {

using Signature = std::array<uint8_t, 64>;
using Digest = std::array<uint8_t, 32>;

class PublicKey {
 public:
  static Result<PublicKey> FromRaw(std::string_view raw32);
  const std::string& key_id() const { return key_id_; }
  const std::string& raw() const { return raw_; }  // 32 bytes
  std::string Base64() const;
  // libsodium's crypto_sign_verify_detached over "cocoon-audit-sig-v1\n" ||
  // hash. Stateless and thread-safe. False for a bad signature, and for a
  // default-constructed key or a failed PrepareVerification (fail closed).
  bool Verify(const Digest& hash, const Signature& signature) const;

 private:
  std::string raw_;
  std::string key_id_;
};

// Runs sodium_init() once per process (later calls return its first answer;
// thread-safe). VerifyLogs calls it before starting its workers, and
// PublicKey::Verify before each check. False: libsodium could not start, and
// no signature can be verified. Writers sign with OpenSSL; they verify only
// the log's last line when it claims their own key (ReadTail).
bool PrepareVerification();

class SigningKey {
 public:
  static Result<SigningKey> Generate();
  static Result<SigningKey> LoadPem(const std::string& path);
  const PublicKey& public_key() const { return public_key_; }
  const std::string& key_id() const { return public_key_.key_id(); }
  // Thread-safe.
  Result<Signature> Sign(const Digest& hash) const;
  Result<std::string> PrivatePem() const;
  Result<std::string> PublicPem() const;

 private:
  std::shared_ptr<void> pkey_;  // EVP_PKEY*
  PublicKey public_key_;
};

// `cocoon audit keygen --out PATH`: PATH (0600, refuses to overwrite) + PATH.pub.
Status WriteKeyPair(const SigningKey& key, const std::string& path);

// Every public key PEM block in the file.
Result<std::vector<PublicKey>> LoadPublicKeys(const std::string& path);

std::string KeyIdFromRaw(std::string_view raw32);

// Domain-separated line hash: SHA-256("cocoon-audit-v1\n" || preimage).
Digest LineHash(std::string_view preimage);

// LineHash fed in pieces, so the part of a line known early can be absorbed
// first (on another core) and the rest later: the writer hashes each line's
// bytes before integrity.prev in parallel and only the rest in chain order.
// One OpenSSL digest context, reused by Start(); not thread-safe.
class LineHasher {
 public:
  LineHasher();
  ~LineHasher();
  LineHasher(const LineHasher&) = delete;
  LineHasher& operator=(const LineHasher&) = delete;
  bool ok() const { return ctx_ != nullptr; }  // false: OpenSSL could not allocate the context
  void Start();  // absorbs the domain tag
  void Update(std::string_view bytes);
  Digest Finish();

 private:
  void* ctx_;  // EVP_MD_CTX*
};
// The same over the concatenation of `parts` (no copy).
Digest LineHashParts(std::initializer_list<std::string_view> parts);
std::string HexEncode(const uint8_t* data, size_t size);
bool HexDecode(std::string_view hex, uint8_t* out, size_t size);
std::string Base64Encode(const uint8_t* data, size_t size);
bool Base64Decode(std::string_view text, std::string* out);
// Base64Decode of exactly `size` bytes into `out`, with no allocation (one
// signature per verified line): the same strict, single-spelling rules.
bool Base64DecodeExact(std::string_view text, uint8_t* out, size_t size);

}  // namespace cocoon::audit
