// audit/keys.h after libcrypto moved behind dlopen (audit/libcrypto.h): the
// loader binds every function, the linked SHA-256 gives the known answers,
// and keys survive a PEM round trip and sign what libsodium verifies.
#include "audit/keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "audit/libcrypto.h"

namespace cocoon::audit {
namespace {

TEST(LibCryptoTest, LoadsOnceWithEverySymbolBound) {
  auto first = LoadLibCrypto();
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = LoadLibCrypto();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  const LibCrypto& lc = **first;
  for (const void* fn : {reinterpret_cast<const void*>(lc.EVP_PKEY_free), reinterpret_cast<const void*>(lc.EVP_PKEY_get_id),
                         reinterpret_cast<const void*>(lc.EVP_PKEY_get_raw_public_key),
                         reinterpret_cast<const void*>(lc.EVP_PKEY_Q_keygen), reinterpret_cast<const void*>(lc.EVP_MD_CTX_new),
                         reinterpret_cast<const void*>(lc.EVP_MD_CTX_free), reinterpret_cast<const void*>(lc.EVP_MD_CTX_reset),
                         reinterpret_cast<const void*>(lc.EVP_DigestSignInit), reinterpret_cast<const void*>(lc.EVP_DigestSign),
                         reinterpret_cast<const void*>(lc.PEM_read_PrivateKey),
                         reinterpret_cast<const void*>(lc.PEM_write_bio_PrivateKey),
                         reinterpret_cast<const void*>(lc.PEM_write_bio_PUBKEY),
                         reinterpret_cast<const void*>(lc.PEM_read_bio_PUBKEY), reinterpret_cast<const void*>(lc.BIO_new),
                         reinterpret_cast<const void*>(lc.BIO_s_mem), reinterpret_cast<const void*>(lc.BIO_new_file),
                         reinterpret_cast<const void*>(lc.BIO_ctrl), reinterpret_cast<const void*>(lc.BIO_free)}) {
    EXPECT_NE(fn, nullptr);
  }
}

// Known answers from Python's hashlib: sha256(b"cocoon-audit-v1\nabc") and
// the first 16 bytes of sha256(bytes(range(32))).
TEST(KeysTest, LinkedSha256GivesTheKnownAnswers) {
  Digest line = LineHash("abc");
  EXPECT_EQ(HexEncode(line.data(), line.size()), "e858477baa08693a69e5f7726bb2a0c206df86a7e86c00feb5875dc29560ed10");
  Digest parts = LineHashParts({"a", "", "bc"});
  EXPECT_EQ(parts, line);
  LineHasher hasher;
  ASSERT_TRUE(hasher.ok());
  for (int round = 0; round < 2; ++round) {  // Start() resets the context
    hasher.Start();
    hasher.Update("ab");
    hasher.Update("c");
    EXPECT_EQ(hasher.Finish(), line);
  }
  std::string raw;
  for (int i = 0; i < 32; ++i) raw.push_back(static_cast<char>(i));
  EXPECT_EQ(KeyIdFromRaw(raw), "ed25519:630dcd2966c4336691125448bbb25b4f");
}

TEST(KeysTest, PemRoundTripKeepsTheKeyAndItsSignatures) {
  auto key = SigningKey::Generate();
  ASSERT_TRUE(key.ok()) << key.status().message();
  char dir_template[] = "/tmp/cocoon-keys-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/key";
  ASSERT_TRUE(WriteKeyPair(*key, path).ok());
  EXPECT_FALSE(WriteKeyPair(*key, path).ok()) << "an existing key must never be overwritten";

  auto loaded = SigningKey::LoadPem(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->key_id(), key->key_id());
  auto trusted = LoadPublicKeys(path + ".pub");
  ASSERT_TRUE(trusted.ok()) << trusted.status().message();
  ASSERT_EQ(trusted->size(), 1u);
  EXPECT_EQ((*trusted)[0].raw(), key->public_key().raw());

  Digest hash = LineHash("event");
  auto signature = loaded->Sign(hash);
  ASSERT_TRUE(signature.ok()) << signature.status().message();
  EXPECT_TRUE((*trusted)[0].Verify(hash, *signature));
  Digest other = LineHash("other event");
  EXPECT_FALSE((*trusted)[0].Verify(other, *signature));

  // A private key others may read (whoever reads it can forge the log) is
  // refused, like ssh refuses one; private again, it loads.
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  auto exposed = SigningKey::LoadPem(path);
  ASSERT_FALSE(exposed.ok());
  EXPECT_NE(exposed.status().message().find("chmod 600"), std::string::npos) << exposed.status().ToString();
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(SigningKey::LoadPem(path).ok());

  // A second name for the key (a hard link, maybe in a directory a sandbox
  // is shown) is refused whichever name is given; with one name again, it loads.
  const std::string other_name = std::string(dir_template) + "/elsewhere";
  ASSERT_EQ(link(path.c_str(), other_name.c_str()), 0);
  for (const std::string& name : {path, other_name}) {
    auto linked = SigningKey::LoadPem(name);
    ASSERT_FALSE(linked.ok()) << name;
    EXPECT_NE(linked.status().message().find("audit signing key " + name + " has 2 hard links"), std::string::npos)
        << linked.status().message();
    EXPECT_NE(linked.status().message().find("find / -xdev -samefile " + name), std::string::npos)
        << linked.status().message();
  }
  ASSERT_EQ(unlink(other_name.c_str()), 0);
  EXPECT_TRUE(SigningKey::LoadPem(path).ok());

  // A private key where a trust file is expected, and garbage, are refused.
  EXPECT_FALSE(LoadPublicKeys(path).ok());
  EXPECT_FALSE(SigningKey::LoadPem(path + ".pub").ok());
  EXPECT_FALSE(SigningKey::LoadPem(std::string(dir_template) + "/missing").ok());
  std::filesystem::remove_all(dir_template);
}

}  // namespace
}  // namespace cocoon::audit
