// OpenSSL's libcrypto, loaded when an audit key is first used, not at start.
//
// Linked into the executable, libcrypto's EVP/PEM/provider layer brings
// ~330 KiB of pointer tables (object ids, algorithm and error tables) that
// the loader relocates at every start: ~80 pages copied on write, about
// 0.3-0.4 ms of each `cocoon` process on this VM (issue 4's launch figures;
// docs/performance.md, "Launch: where the time goes", item 7). Audit signing
// is opt-in (--audit-log/--audit-key), so the processes that sign pay for
// libcrypto.so.3 and the others do not. SHA-256 stays linked: the low-level
// SHA256_* functions bring none of those tables (compiler/common/digest.cc).
//
// This is the pattern systemd uses for its optional libraries (dlopen by
// soname, each symbol typed by its own header's declaration), so a changed
// prototype is a compile error, not a crash.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "compiler/common/status.h"

namespace cocoon::audit {

struct LibCrypto {
  decltype(&::EVP_PKEY_free) EVP_PKEY_free;
  decltype(&::EVP_PKEY_get_id) EVP_PKEY_get_id;
  decltype(&::EVP_PKEY_get_raw_public_key) EVP_PKEY_get_raw_public_key;
  decltype(&::EVP_PKEY_Q_keygen) EVP_PKEY_Q_keygen;
  decltype(&::EVP_MD_CTX_new) EVP_MD_CTX_new;
  decltype(&::EVP_MD_CTX_free) EVP_MD_CTX_free;
  decltype(&::EVP_MD_CTX_reset) EVP_MD_CTX_reset;
  decltype(&::EVP_DigestSignInit) EVP_DigestSignInit;
  decltype(&::EVP_DigestSign) EVP_DigestSign;
  decltype(&::PEM_read_PrivateKey) PEM_read_PrivateKey;
  decltype(&::PEM_write_bio_PrivateKey) PEM_write_bio_PrivateKey;
  decltype(&::PEM_write_bio_PUBKEY) PEM_write_bio_PUBKEY;
  decltype(&::PEM_read_bio_PUBKEY) PEM_read_bio_PUBKEY;
  decltype(&::BIO_new) BIO_new;
  decltype(&::BIO_s_mem) BIO_s_mem;
  decltype(&::BIO_new_file) BIO_new_file;
  decltype(&::BIO_ctrl) BIO_ctrl;  // BIO_get_mem_data is a macro over it
  decltype(&::BIO_free) BIO_free;
};

// libcrypto.so.3, loaded once per process (thread-safe); later calls return
// the first answer. An error says which library or symbol is missing and
// which Debian package provides it.
Result<const LibCrypto*> LoadLibCrypto();

}  // namespace cocoon::audit
