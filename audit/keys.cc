// Ed25519 keys and signing through OpenSSL 3's EVP interface, loaded on
// first use (audit/libcrypto.h says why); SHA-256 through OpenSSL's
// low-level functions, linked (the same assembly without EVP's tables);
// Ed25519 verification through libsodium (see keys.h for why).
#include "audit/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// SHA256_Init/Update/Final: deprecated in favour of EVP, not removed (see
// compiler/common/digest.cc), and EVP is what this file no longer links.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <sodium.h>

#include "audit/libcrypto.h"
#include "compiler/common/digest.h"

namespace cocoon::audit {
namespace {

constexpr std::string_view kHashTag = "cocoon-audit-v1\n";
constexpr std::string_view kSignatureTag = "cocoon-audit-sig-v1\n";

EVP_PKEY* Raw(const std::shared_ptr<void>& p) { return static_cast<EVP_PKEY*>(p.get()); }
// Only called with libcrypto loaded: every EVP_PKEY came from it.
std::shared_ptr<void> Own(const LibCrypto& lc, EVP_PKEY* p) {
  return std::shared_ptr<void>(p, [free_key = lc.EVP_PKEY_free](void* k) { free_key(static_cast<EVP_PKEY*>(k)); });
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const {
    if (auto lc = LoadLibCrypto(); lc.ok()) (*lc)->EVP_MD_CTX_free(c);
  }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

// EVP_DigestSignInit fetches the Ed25519 implementation from the provider
// and builds a fresh EVP_PKEY_CTX each time (about 4 us). A one-shot
// EVP_DigestSign leaves the context ready for the next message (Ed25519 is
// "pure": nothing is buffered), so each thread keeps its initialised signing
// contexts for the last few keys. The weak_ptr tells a live key from a freed
// one whose address was reused. If a later OpenSSL refuses reuse, the caller
// re-inits (fresh) and retries, so reuse can only cost time, never a wrong
// signature.
class SignContexts {
 public:
  EVP_MD_CTX* Get(const LibCrypto& lc, const std::shared_ptr<void>& key, bool fresh) {
    Entry* slot = nullptr;
    for (auto& entry : entries_) {
      if (entry.ctx && entry.raw == key.get() && !entry.key.expired()) slot = &entry;
    }
    if (slot != nullptr && !fresh) return slot->ctx.get();
    if (slot == nullptr) {
      slot = &entries_[next_++ % entries_.size()];
      slot->ctx.reset(lc.EVP_MD_CTX_new());
    }
    if (!slot->ctx) return nullptr;
    slot->raw = key.get();
    slot->key = key;
    lc.EVP_MD_CTX_reset(slot->ctx.get());
    if (lc.EVP_DigestSignInit(slot->ctx.get(), nullptr, nullptr, nullptr, static_cast<EVP_PKEY*>(key.get())) != 1) {
      slot->ctx.reset();
      return nullptr;
    }
    return slot->ctx.get();
  }

 private:
  struct Entry {
    MdCtx ctx;
    const void* raw = nullptr;
    std::weak_ptr<void> key;
  };
  std::array<Entry, 4> entries_;
  size_t next_ = 0;
};

EVP_MD_CTX* SignCtx(const LibCrypto& lc, const std::shared_ptr<void>& key, bool fresh) {
  thread_local SignContexts contexts;
  return contexts.Get(lc, key, fresh);
}

std::array<uint8_t, 52> SignedMessage(const Digest& hash) {
  std::array<uint8_t, 52> message{};
  std::memcpy(message.data(), kSignatureTag.data(), kSignatureTag.size());
  std::memcpy(message.data() + kSignatureTag.size(), hash.data(), hash.size());
  return message;
}
static_assert(kSignatureTag.size() + 32 == 52);

Result<std::string> RawPublic(const LibCrypto& lc, EVP_PKEY* pkey) {
  std::string raw(32, '\0');
  size_t len = raw.size();
  if (lc.EVP_PKEY_get_raw_public_key(pkey, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 || len != 32)
    return InvalidArgumentError("not an Ed25519 key");
  return raw;
}

Result<std::string> BioToString(const LibCrypto& lc, BIO* bio) {
  char* data = nullptr;
  long len = lc.BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);  // BIO_get_mem_data
  std::string out(data != nullptr && len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string());
  lc.BIO_free(bio);
  return out;
}

// SHA-256("cocoon-audit-v1\n" || parts...).
Digest TaggedSha256(std::initializer_list<std::string_view> parts) {
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, kHashTag.data(), kHashTag.size());
  for (std::string_view part : parts) SHA256_Update(&ctx, part.data(), part.size());
  Digest out{};
  SHA256_Final(out.data(), &ctx);
  return out;
}

}  // namespace

std::string HexEncode(const uint8_t* data, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 0xF];
  }
  return out;
}

namespace {

// Value of each byte as a lower-case hex digit, -1 otherwise (upper case is
// not canonical). A table: the verifier decodes two digests per line.
constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int c = '0'; c <= '9'; ++c) table[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) table[c] = static_cast<int8_t>(c - 'a' + 10);
  return table;
}();

}  // namespace

bool HexDecode(std::string_view hex, uint8_t* out, size_t size) {
  if (hex.size() != size * 2) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(hex.data());
  size_t i = 0;
#if defined(__SSE2__)
  // 16 digits -> 8 bytes per step (the verifier decodes two digests per line).
  // A byte is a digit when (unsigned)(c - '0') < 10, a letter when
  // (unsigned)(c - 'a') < 6; unsigned compares as signed ones after ^ 0x80.
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  for (; i + 8 <= size; i += 8) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    __m128i l = _mm_sub_epi8(v, _mm_set1_epi8('a'));
    __m128i is_digit = _mm_cmplt_epi8(_mm_xor_si128(d, bias), _mm_xor_si128(_mm_set1_epi8(10), bias));
    __m128i is_letter = _mm_cmplt_epi8(_mm_xor_si128(l, bias), _mm_xor_si128(_mm_set1_epi8(6), bias));
    if (_mm_movemask_epi8(_mm_or_si128(is_digit, is_letter)) != 0xFFFF) return false;
    __m128i nibble = _mm_or_si128(_mm_and_si128(is_digit, d),
                                  _mm_and_si128(is_letter, _mm_add_epi8(l, _mm_set1_epi8(10))));
    // Each 16-bit lane holds (high digit, low digit): (high << 4) | low.
    __m128i pairs = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(nibble, 4), _mm_set1_epi16(0x00FF)),
                                 _mm_srli_epi16(nibble, 8));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(pairs, pairs));
  }
#endif
  int bad = 0;
  for (; i < size; ++i) {
    int hi = kHexValue[p[2 * i]], lo = kHexValue[p[2 * i + 1]];
    bad |= hi | lo;  // any -1 sets the sign bit
    out[i] = static_cast<uint8_t>(((hi & 0xF) << 4) | (lo & 0xF));
  }
  return bad >= 0;
}

static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Inverse of kB64 (-1: not a base64 digit), instead of a strchr per character.
static constexpr std::array<int8_t, 256> kB64Value = [] {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kB64[i])] = static_cast<int8_t>(i);
  return table;
}();

std::string Base64Encode(const uint8_t* data, size_t size) {
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    uint32_t n = data[i] << 16;
    if (i + 1 < size) n |= data[i + 1] << 8;
    if (i + 2 < size) n |= data[i + 2];
    out += kB64[(n >> 18) & 63];
    out += kB64[(n >> 12) & 63];
    out += i + 1 < size ? kB64[(n >> 6) & 63] : '=';
    out += i + 2 < size ? kB64[n & 63] : '=';
  }
  return out;
}

// Strict: padded, no whitespace, and it must re-encode to the same text (so a
// signature has exactly one accepted spelling).
bool Base64Decode(std::string_view text, std::string* out) {
  if (text.size() % 4 != 0) return false;
  out->clear();
  uint32_t buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return false;
      ++padding;
      continue;
    }
    if (padding) return false;
    int value = kB64Value[static_cast<unsigned char>(c)];
    if (value < 0) return false;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return Base64Encode(reinterpret_cast<const uint8_t*>(out->data()), out->size()) == text;
}

// Canonical means: exactly the padding `size` needs, and the bits of the last
// digit beyond the data are zero (what Base64Decode checks by re-encoding).
bool Base64DecodeExact(std::string_view text, uint8_t* out, size_t size) {
  const size_t padding = (3 - size % 3) % 3;
  if (text.size() != (size + 2) / 3 * 4) return false;
  const size_t digits = text.size() - padding;
  for (size_t i = digits; i < text.size(); ++i)
    if (text[i] != '=') return false;
  uint32_t buffer = 0;
  int bits = 0;
  size_t n = 0;
  for (size_t i = 0; i < digits; ++i) {
    int value = kB64Value[static_cast<unsigned char>(text[i])];
    if (value < 0) return false;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n == size) return false;
      out[n++] = static_cast<uint8_t>((buffer >> bits) & 0xFF);
    }
  }
  return n == size && (buffer & ((1u << bits) - 1)) == 0;
}

std::string KeyIdFromRaw(std::string_view raw32) {
  // The first 16 bytes of the SHA-256, in hex.
  return "ed25519:" + Sha256Hex(raw32).substr(0, 32);
}

Digest LineHash(std::string_view preimage) { return TaggedSha256({preimage}); }

LineHasher::LineHasher() : ctx_(new SHA256_CTX) {}
LineHasher::~LineHasher() { delete static_cast<SHA256_CTX*>(ctx_); }

void LineHasher::Start() {
  auto* ctx = static_cast<SHA256_CTX*>(ctx_);
  SHA256_Init(ctx);
  SHA256_Update(ctx, kHashTag.data(), kHashTag.size());
}

void LineHasher::Update(std::string_view bytes) {
  SHA256_Update(static_cast<SHA256_CTX*>(ctx_), bytes.data(), bytes.size());
}

Digest LineHasher::Finish() {
  Digest out{};
  SHA256_Final(out.data(), static_cast<SHA256_CTX*>(ctx_));
  return out;
}

Digest LineHashParts(std::initializer_list<std::string_view> parts) { return TaggedSha256(parts); }

// No point validation here (OpenSSL's EVP_PKEY_new_raw_public_key did none
// either): Verify rejects a key that is not a canonical point of large order.
Result<PublicKey> PublicKey::FromRaw(std::string_view raw32) {
  if (raw32.size() != crypto_sign_PUBLICKEYBYTES) return InvalidArgumentError("an Ed25519 public key is 32 bytes");
  PublicKey key;
  key.raw_ = std::string(raw32);
  key.key_id_ = KeyIdFromRaw(raw32);
  return key;
}

std::string PublicKey::Base64() const {
  return Base64Encode(reinterpret_cast<const uint8_t*>(raw_.data()), raw_.size());
}

bool PrepareVerification() {
  // sodium_init is itself thread-safe and idempotent (0 first, 1 after);
  // the static keeps later calls to one load. -1: it could not start.
  static const bool ready = sodium_init() >= 0;
  return ready;
}

// crypto_sign_verify_detached (libsodium 1.0.18, built without
// ED25519_COMPAT) rejects S >= L, a small-order R or key and a non-canonical
// key encoding before the group equation, then checks [S]B = R + [k]A with
// k = SHA-512(R || A || message): RFC 8032 section 5.1.7 with its optional
// strict checks. It keeps no state, so the verifier's workers share nothing.
bool PublicKey::Verify(const Digest& hash, const Signature& signature) const {
  static_assert(std::tuple_size_v<Signature> == crypto_sign_BYTES);
  if (raw_.size() != crypto_sign_PUBLICKEYBYTES || !PrepareVerification()) return false;
  auto message = SignedMessage(hash);
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(),
                                     reinterpret_cast<const unsigned char*>(raw_.data())) == 0;
}

Result<SigningKey> SigningKey::Generate() {
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  EVP_PKEY* pkey = lc->EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (pkey == nullptr) return InternalError("Ed25519 key generation failed");
  SigningKey key;
  key.pkey_ = Own(*lc, pkey);
  COCOON_ASSIGN_OR_RETURN(std::string raw, RawPublic(*lc, pkey));
  COCOON_ASSIGN_OR_RETURN(key.public_key_, PublicKey::FromRaw(raw));
  return key;
}

Result<SigningKey> SigningKey::LoadPem(const std::string& path) {
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  FILE* file = std::fopen(path.c_str(), "re");
  if (file == nullptr) return ErrnoError("opening audit signing key " + path);
  // Whoever can read the private key can forge the whole log, and whoever
  // can write it can swap in a key of their own: like ssh with its keys,
  // refuse one that others may read or write (keygen writes 0600), or that
  // belongs to someone else (root's is fine: only root could have made it so).
  struct stat st {};
  if (fstat(fileno(file), &st) != 0) {
    int err = errno;
    std::fclose(file);
    return ErrnoError("stat of audit signing key " + path, err);
  }
  if ((st.st_mode & 077) != 0 || (st.st_uid != geteuid() && st.st_uid != 0)) {
    std::fclose(file);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const bool foreign = st.st_uid != geteuid() && st.st_uid != 0;
    return PermissionDeniedError("audit signing key " + path + " (mode " + mode + ", owner uid " +
                                 std::to_string(st.st_uid) + ") " +
                                 (foreign ? "belongs to another user, who can read or replace it"
                                          : "may be read or changed by others") +
                                 ", and whoever can read it can forge the log: " +
                                 (foreign ? "use a key of your own (cocoon audit keygen), or chown it to yourself"
                                          : "make it private (chmod 600 " + path + ")"));
  }
  // A second name for the key (a hard link in a directory a sandbox is
  // shown, or its work dir) hands it out, and no check of this path can see
  // it: launches compare the key's path, and its inode where a directory is
  // bound under another name (cli/host_overlap_guard.cc), not every file of
  // every tree. keygen makes keys with one link; refuse any other.
  if (st.st_nlink > 1) {
    std::fclose(file);
    return PermissionDeniedError("audit signing key " + path + " has " + std::to_string(st.st_nlink) +
                                 " hard links: another name for it (in a directory a sandbox is shown, or someone "
                                 "else's) would hand out the key, and whoever reads it can forge the log. Keep one "
                                 "name: find the others with `find / -xdev -samefile " + path +
                                 "` and remove them, or make a new key (cocoon audit keygen)");
  }
  EVP_PKEY* pkey = lc->PEM_read_PrivateKey(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  if (pkey == nullptr) return InvalidArgumentError(path + ": not a PEM private key");
  SigningKey key;
  key.pkey_ = Own(*lc, pkey);
  if (lc->EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) return InvalidArgumentError(path + ": not an Ed25519 key");
  COCOON_ASSIGN_OR_RETURN(std::string raw, RawPublic(*lc, pkey));
  COCOON_ASSIGN_OR_RETURN(key.public_key_, PublicKey::FromRaw(raw));
  return key;
}

Result<Signature> SigningKey::Sign(const Digest& hash) const {
  // Loaded already: a SigningKey only comes from Generate or LoadPem.
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  if (!pkey_) return FailedPreconditionError("signing with an empty key");
  auto message = SignedMessage(hash);
  Signature signature{};
  size_t len = signature.size();
  for (bool fresh : {false, true}) {
    EVP_MD_CTX* ctx = SignCtx(*lc, pkey_, fresh);
    len = signature.size();
    if (ctx != nullptr && lc->EVP_DigestSign(ctx, signature.data(), &len, message.data(), message.size()) == 1 &&
        len == 64)
      return signature;
  }
  return InternalError("Ed25519 signing failed");
}

Result<std::string> SigningKey::PrivatePem() const {
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  BIO* bio = lc->BIO_new(lc->BIO_s_mem());
  if (bio == nullptr) return InternalError("encoding private key: out of memory");
  if (lc->PEM_write_bio_PrivateKey(bio, Raw(pkey_), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    lc->BIO_free(bio);
    return InternalError("encoding private key");
  }
  return BioToString(*lc, bio);
}

Result<std::string> SigningKey::PublicPem() const {
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  BIO* bio = lc->BIO_new(lc->BIO_s_mem());
  if (bio == nullptr) return InternalError("encoding public key: out of memory");
  if (lc->PEM_write_bio_PUBKEY(bio, Raw(pkey_)) != 1) {
    lc->BIO_free(bio);
    return InternalError("encoding public key");
  }
  return BioToString(*lc, bio);
}

static Status WriteNewFile(const std::string& path, const std::string& data, mode_t mode) {
  // O_EXCL: never overwrite an existing key; the mode is set at creation so
  // the private key is never readable by others, not even briefly.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return ErrnoError("creating " + path);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      int err = errno;
      close(fd);
      return ErrnoError("writing " + path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError("finishing " + path, err);
  }
  if (close(fd) != 0) return ErrnoError("closing " + path);
  return Status::Ok();
}

Status WriteKeyPair(const SigningKey& key, const std::string& path) {
  COCOON_ASSIGN_OR_RETURN(std::string private_pem, key.PrivatePem());
  COCOON_ASSIGN_OR_RETURN(std::string public_pem, key.PublicPem());
  COCOON_RETURN_IF_ERROR(WriteNewFile(path, private_pem, 0600));
  return WriteNewFile(path + ".pub", public_pem, 0644);
}

Result<std::vector<PublicKey>> LoadPublicKeys(const std::string& path) {
  COCOON_ASSIGN_OR_RETURN(const LibCrypto* lc, LoadLibCrypto());
  BIO* bio = lc->BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) return NotFoundError("cannot open trust file " + path);
  std::vector<PublicKey> keys;
  while (EVP_PKEY* pkey = lc->PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr)) {
    auto owned = Own(*lc, pkey);
    if (lc->EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
      lc->BIO_free(bio);
      return InvalidArgumentError(path + ": holds a key that is not Ed25519");
    }
    Result<std::string> raw = RawPublic(*lc, pkey);
    if (!raw.ok()) {
      lc->BIO_free(bio);
      return raw.status();
    }
    Result<PublicKey> key = PublicKey::FromRaw(*raw);
    if (!key.ok()) {
      lc->BIO_free(bio);
      return key.status();
    }
    keys.push_back(std::move(*key));
  }
  lc->BIO_free(bio);
  if (keys.empty()) return InvalidArgumentError(path + ": no PEM public key found");
  return keys;
}

}  // namespace cocoon::audit
