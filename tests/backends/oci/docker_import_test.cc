// `cocoon import docker-seccomp`: moby's default profile resolved for x86_64
// with no capabilities, and hostile input rejected with an error.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/backends/oci/docker_seccomp_import.h"

namespace cocoon {
namespace {

using backends::oci::DockerImportOptions;
using backends::oci::ImportDockerSeccomp;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Moby() { return ReadFile(std::string(COCOON_SOURCE_DIR) + "/tests/backends/oci/data/moby-default-seccomp.json"); }

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n    " + line + "\n") != std::string::npos;
}

TEST(DockerImport, MobyDefaultResolvesForX8664WithoutCapabilities) {
  const std::string moby = Moby();
  ASSERT_FALSE(moby.empty());
  DockerImportOptions options;
  options.profile_name = "docker-default";
  auto text = ImportDockerSeccomp(moby, options);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("profile docker-default {"), std::string::npos);
  EXPECT_TRUE(HasLine(*text, "default errno EPERM")) << *text;  // defaultErrnoRet 1
  EXPECT_TRUE(HasLine(*text, "allow clone if (arg0 & 0x7e020000) == 0")) << *text;  // excludes CAP_SYS_ADMIN
  EXPECT_TRUE(HasLine(*text, "deny clone3 errno ENOSYS")) << *text;                 // errnoRet 38
  EXPECT_TRUE(HasLine(*text, "allow personality if arg0 == 0x20008")) << *text;
  EXPECT_TRUE(HasLine(*text, "allow socket if arg0 != 0x28") || HasLine(*text, "allow socket if arg0 < 0x26"))
      << *text;
  EXPECT_NE(text->find(" \"kill\""), std::string::npos) << "keyword-named syscalls must be quoted";
  // CAP_SYS_ADMIN-only, s390-only and arm-only entries are skipped.
  EXPECT_EQ(text->find(" mount "), std::string::npos);
  EXPECT_EQ(text->find("s390_pci_mmio_read"), std::string::npos);
  EXPECT_EQ(text->find("arm_fadvise64_64 "), std::string::npos);
  EXPECT_NE(text->find("# Dropped names"), std::string::npos);
}

TEST(DockerImport, GrantedCapabilityIncludesItsRules) {
  DockerImportOptions options;
  options.capabilities = {"CAP_SYS_PTRACE"};
  auto text = ImportDockerSeccomp(Moby(), options);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find(" kcmp"), std::string::npos);
  options.capabilities = {"CAP_SYS_ADMIN"};
  text = ImportDockerSeccomp(Moby(), options);
  ASSERT_TRUE(text.ok());
  // excludes.caps CAP_SYS_ADMIN: the clone guard and the clone3 ENOSYS go away.
  EXPECT_FALSE(HasLine(*text, "deny clone3 errno ENOSYS"));
  EXPECT_NE(text->find(" mount"), std::string::npos);
}

TEST(DockerImport, ArchSelectsArchOnlyRules) {
  DockerImportOptions options;
  options.arch = ir::Arch::kAarch64;
  auto text = ImportDockerSeccomp(Moby(), options);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->find(" arch_prctl"), std::string::npos);  // amd64/x32 only
  EXPECT_NE(text->find(" accept4"), std::string::npos);
  auto x86_64 = ImportDockerSeccomp(Moby(), {});
  ASSERT_TRUE(x86_64.ok());
  EXPECT_NE(x86_64->find(" arch_prctl"), std::string::npos);
}

// runc (libcontainer/seccomp matchCall): when an entry's args repeat an index,
// each condition is a rule of its own (ORed); otherwise they are ANDed.
TEST(DockerImport, RepeatedArgumentIndexesBecomeSeparateRules) {
  auto text = ImportDockerSeccomp(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
           {"names": ["socket"], "action": "SCMP_ACT_ERRNO",
            "args": [{"index": 0, "value": 16, "op": "SCMP_CMP_EQ"},
                     {"index": 0, "value": 17, "op": "SCMP_CMP_EQ"}]},
           {"names": ["personality"], "action": "SCMP_ACT_ERRNO",
            "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
                     {"index": 1, "value": 2, "op": "SCMP_CMP_EQ"},
                     {"index": 0, "value": 3, "op": "SCMP_CMP_EQ"}]},
           {"names": ["setns"], "action": "SCMP_ACT_ERRNO",
            "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
                     {"index": 1, "value": 2, "op": "SCMP_CMP_EQ"}]}]})",
      {});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(HasLine(*text, "deny socket if arg0 == 0x10 errno EPERM")) << *text;
  EXPECT_TRUE(HasLine(*text, "deny socket if arg0 == 0x11 errno EPERM")) << *text;
  EXPECT_EQ(text->find("arg0 == 0x10 and"), std::string::npos) << *text;
  // One repeated index splits every condition of the entry, arg1's included.
  EXPECT_TRUE(HasLine(*text, "deny personality if arg0 == 1 errno EPERM")) << *text;
  EXPECT_TRUE(HasLine(*text, "deny personality if arg1 == 2 errno EPERM")) << *text;
  EXPECT_TRUE(HasLine(*text, "deny personality if arg0 == 3 errno EPERM")) << *text;
  // Distinct indexes stay one ANDed rule.
  EXPECT_TRUE(HasLine(*text, "deny setns if arg0 == 1 and arg1 == 2 errno EPERM")) << *text;
}

TEST(DockerImport, RejectsMalformedProfiles) {
  const char* bad[] = {
      "",
      "[]",
      "{\"defaultAction\": 3}",
      "{\"defaultAction\": \"SCMP_ACT_NOPE\"}",
      "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": {}}",
      "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": \"read\", \"action\": \"SCMP_ACT_ALLOW\"}]}",
      "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
      " \"args\": [{\"index\": 9, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}",
      "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
      " \"args\": [{\"index\": 0, \"value\": -1, \"op\": \"SCMP_CMP_EQ\"}]}]}",
      "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 99999}",
  };
  for (const char* input : bad) {
    auto text = ImportDockerSeccomp(input, {});
    EXPECT_FALSE(text.ok()) << input;
    EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument) << input;
  }
}

TEST(DockerImport, HostileNamesNeverReachThePolicyText) {
  DockerImportOptions options;
  options.profile_name = "a b\"c";
  options.source_name = "in\nject.json";
  auto text = ImportDockerSeccomp(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
           {"names": ["read", "x\n}\nprofile evil {", "\"quoted\""], "action": "SCMP_ACT_TRACE"},
           {"name": "kill", "action": "SCMP_ACT_KILL_THREAD"}]})",
      options);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->find("profile evil"), std::string::npos);
  EXPECT_EQ(text->find("\"quoted\""), std::string::npos);
  EXPECT_NE(text->find("profile a_b_c {"), std::string::npos);
  EXPECT_TRUE(HasLine(*text, "default allow"));
  EXPECT_TRUE(HasLine(*text, "deny read errno ENOSYS"));
  EXPECT_TRUE(HasLine(*text, "kill \"kill\""));
  EXPECT_NE(text->find("WARNING"), std::string::npos);
  EXPECT_EQ(text->find("in\nject"), std::string::npos);
}

}  // namespace
}  // namespace cocoon
