#include "audit/libcrypto.h"

#include <dlfcn.h>

#include <string>

namespace cocoon::audit {
namespace {

// The soname: OpenSSL 3 keeps its ABI within a major version, and this is
// the library Debian's libssl-dev headers describe (package libssl3).
constexpr const char* kLibCryptoSoname = "libcrypto.so.3";

struct Loaded {
  LibCrypto functions{};
  std::string error;  // empty: loaded
};

template <typename Fn>
bool Bind(void* handle, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (out == nullptr && error.empty()) error = std::string(kLibCryptoSoname) + " has no symbol " + name;
  return out != nullptr;
}

Loaded Load() {
  Loaded loaded;
  // RTLD_LOCAL: its symbols never interpose on the SHA-256 functions linked
  // into the executable. RTLD_NOW: a missing symbol is an error here, not a
  // crash in the middle of writing an audit line. Never unloaded: OpenSSL
  // keeps thread-local state and atexit handlers.
  void* handle = dlopen(kLibCryptoSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    loaded.error = std::string("audit signing needs OpenSSL's ") + kLibCryptoSoname +
                   " (Debian package libssl3): " + (why != nullptr ? why : "dlopen failed");
    return loaded;
  }
  LibCrypto& f = loaded.functions;
  std::string& e = loaded.error;
#define COCOON_BIND(name) Bind(handle, #name, f.name, e)
  COCOON_BIND(EVP_PKEY_free);
  COCOON_BIND(EVP_PKEY_get_id);
  COCOON_BIND(EVP_PKEY_get_raw_public_key);
  COCOON_BIND(EVP_PKEY_Q_keygen);
  COCOON_BIND(EVP_MD_CTX_new);
  COCOON_BIND(EVP_MD_CTX_free);
  COCOON_BIND(EVP_MD_CTX_reset);
  COCOON_BIND(EVP_DigestSignInit);
  COCOON_BIND(EVP_DigestSign);
  COCOON_BIND(PEM_read_PrivateKey);
  COCOON_BIND(PEM_write_bio_PrivateKey);
  COCOON_BIND(PEM_write_bio_PUBKEY);
  COCOON_BIND(PEM_read_bio_PUBKEY);
  COCOON_BIND(BIO_new);
  COCOON_BIND(BIO_s_mem);
  COCOON_BIND(BIO_new_file);
  COCOON_BIND(BIO_ctrl);
  COCOON_BIND(BIO_free);
#undef COCOON_BIND
  return loaded;
}

}  // namespace

Result<const LibCrypto*> LoadLibCrypto() {
  static const Loaded loaded = Load();  // magic static: one load, thread-safe
  if (!loaded.error.empty()) return FailedPreconditionError(loaded.error);
  return &loaded.functions;
}

}  // namespace cocoon::audit
