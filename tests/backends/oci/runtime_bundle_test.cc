// Runs the compiled oci/config.json for real with both OCI runtimes Debian
// ships, crun and runc (the reference implementation), LABELS integration.
//
// The bundle's rootfs is an empty directory; the config binds /usr, /bin,
// /lib, /lib64 read-only into it. Debian's crun 1.8 refuses this machine's
// mixed cgroup layout (v1 controllers plus an empty v2 at
// /sys/fs/cgroup/unified), so each runtime runs inside a private mount
// namespace (`unshare -m`, everything made rprivate) where that v2 mount is
// detached. Nothing here changes a host mount: all mount changes die with
// the namespace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "tests/backends/driver/test_policy.h"

namespace cocoon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult RunShell(const std::string& command) {
  RunResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  result.status = pclose(pipe);
  return result;
}

ir::Policy BundlePolicy() {
  ir::Policy policy = testing::StrictPolicy();
  policy.name = "oci-runtime-test";
  policy.filesystem.mounts = {testing::ReadOnly("/bin"), testing::ReadOnly("/lib"), testing::ReadOnly("/lib64", true),
                              testing::ReadOnly("/usr")};
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/tmp", 8 << 20, false});
  policy.filesystem.hidden = {};
  // Permissive default so /bin/sh works; the explicit denials are what we test.
  policy.syscalls.default_action = {ir::ActionKind::kAllow, 0};
  policy.syscalls.default_explicitly_allows = true;
  policy.syscalls.rules = {testing::Rule("mkdir", ir::ActionKind::kErrno, 1),
                           testing::Rule("mkdirat", ir::ActionKind::kErrno, 1)};
  policy.cwd = "/work";
  return policy;
}

// The parameter is the runtime's command: "crun" or "runc".
class RuntimeBundleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED LOUDLY: the OCI bundle test needs root (runtime + mount namespace)";
    if (RunShell("command -v " + GetParam()).status != 0) {
      GTEST_SKIP() << "SKIPPED LOUDLY: " << GetParam() << " is not installed (setup.sh installs it)";
    }
    char tmpl[] = "/tmp/cocoon-oci-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    bundle_ = tmpl;
    fs::create_directories(bundle_ / "rootfs");
    fs::create_directories(bundle_ / "work");
    fs::create_directories(bundle_ / "state");
    chmod((bundle_ / "work").c_str(), 0777);  // the sandbox runs as 65534
  }
  void TearDown() override {
    if (!bundle_.empty()) {
      std::error_code ec;
      fs::remove_all(bundle_, ec);
    }
  }

  RunResult RunInBundle(const std::string& script, const ir::Policy& policy = BundlePolicy()) {
    auto artifacts = backends::CompileOci(policy);
    EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    if (!artifacts.ok()) return {};
    json config = json::parse((*artifacts)[0].bytes);
    config["process"]["args"] = {"/bin/sh", "-c", script};
    // Keep the runtime's cgroup inside a throwaway path of its own.
    config["linux"]["cgroupsPath"] = "/cocoon-" + GetParam() + "-test-" + std::to_string(getpid());
    std::ofstream(bundle_ / "config.json") << config.dump(2);
    const std::string inner =
        "mount --make-rprivate / && (umount -l /sys/fs/cgroup/unified 2>/dev/null; true) && " +
        GetParam() + " --root " + (bundle_ / "state").string() + " run --bundle " + bundle_.string() + " cocoon-test-" +
        std::to_string(getpid());
    // stdin a pipe (stdout and stderr are popen's): crun 1.8 run as root
    // gives its stdio to the container's user (uid 65534), and with the
    // test's stdin on the host's /dev/null it made that node nobody's.
    return RunShell(": | unshare -m -- sh -c '" + inner + "'");
  }

  // A run the runtime refused over cgroups (its own setup, not the
  // bundle's confinement): the skip reason, said loudly; nullopt otherwise.
  std::optional<std::string> CgroupSetupFailure(const RunResult& run) const {
    if (run.status == 0 || run.output.find("cgroup") == std::string::npos) return std::nullopt;
    return "SKIPPED LOUDLY: " + GetParam() + " could not set up cgroups here: " + run.output;
  }

  fs::path bundle_;
};

TEST_P(RuntimeBundleTest, DeniedSyscallIsDeniedAndReadOnlyPathIsReadOnly) {
  RunResult run = RunInBundle(
      "id -u; "
      "if mkdir /tmp/x 2>/dev/null; then echo MKDIR_ALLOWED; else echo MKDIR_DENIED; fi; "
      "if touch /usr/cocoon-escape 2>/dev/null; then echo USR_WRITABLE; else echo USR_READONLY; fi; "
      "if echo ok > /tmp/ok; then echo TMP_WRITABLE; fi; "
      "echo result > /work/out.txt && echo WORK_WRITABLE");
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("65534"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("MKDIR_DENIED"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("MKDIR_ALLOWED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("USR_READONLY"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("USR_WRITABLE"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("TMP_WRITABLE"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("WORK_WRITABLE"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(bundle_ / "work" / "out.txt"));
  EXPECT_FALSE(fs::exists("/usr/cocoon-escape"));
}

// A read-only bind and a tmpfs under the work dir: mounted after the work
// dir, so they are not hidden under it (the work dir used to come last).
TEST_P(RuntimeBundleTest, MountsUnderTheWorkDirAreNotHiddenByIt) {
  fs::create_directories(bundle_ / "vendor-src");
  std::ofstream(bundle_ / "vendor-src" / "lib.txt") << "vendored\n";
  ir::Policy policy = BundlePolicy();
  policy.filesystem.mounts.push_back(
      ir::Mount{ir::MountKind::kReadOnly, (bundle_ / "vendor-src").string(), "/work/vendor", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/work/cache", 1 << 20, false});
  RunResult run = RunInBundle(
      "cat /work/vendor/lib.txt; "
      "if touch /work/vendor/x 2>/dev/null; then echo VENDOR_WRITABLE; else echo VENDOR_READONLY; fi; "
      "echo c > /work/cache/c && echo CACHE_WRITABLE; "
      "echo r > /work/out.txt && echo WORK_WRITABLE",
      policy);
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("vendored"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("VENDOR_READONLY"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("CACHE_WRITABLE"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("WORK_WRITABLE"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(bundle_ / "vendor-src" / "x"));
  EXPECT_FALSE(fs::exists(bundle_ / "work" / "cache" / "c")) << "the tmpfs was hidden under the work dir";
}

// The policy's user is inside a user namespace: the default 65534 is host
// 65534, and `user 0:0` is inside root but host 65534, not host root.
TEST_P(RuntimeBundleTest, PolicyUserIsMappedInAUserNamespace) {
  for (uint32_t id : {0u, 65534u}) {
    SCOPED_TRACE(id);
    ir::Policy policy = BundlePolicy();
    policy.user = {id, id};
    std::error_code ec;
    fs::remove(bundle_ / "work" / "made", ec);
    if (id == 0) {
      // Runtimes build the container as inside root, here host 65534: the
      // bundle must be traversable and rootfs/ its own, or the
      // runtime cannot make the mountpoints (docs/targets.md).
      chmod(bundle_.c_str(), 0755);
      ASSERT_EQ(chown((bundle_ / "rootfs").c_str(), 65534, 65534), 0);
    }
    RunResult run = RunInBundle("echo UID=$(id -u) GID=$(id -g); cat /proc/self/uid_map; echo x > /work/made", policy);
    if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
    ASSERT_EQ(run.status, 0) << run.output;
    EXPECT_NE(run.output.find("UID=" + std::to_string(id) + " GID=" + std::to_string(id)), std::string::npos)
        << run.output;
    // /proc/self/uid_map: inside id, host id, count.
    std::istringstream words(run.output);
    std::string map, word;
    while (words >> word) map += word + " ";
    EXPECT_NE(map.find(std::to_string(id) + " 65534 1"), std::string::npos) << run.output;
    if (id == 0) {
      EXPECT_EQ(map.find("0 0 1"), std::string::npos) << "host root is mapped: " << run.output;
    }
    struct stat st {};
    ASSERT_EQ(stat((bundle_ / "work" / "made").c_str(), &st), 0) << run.output;
    EXPECT_EQ(st.st_uid, 65534u) << "the file the sandbox made belongs to host " << st.st_uid << "\n" << run.output;
    EXPECT_EQ(st.st_gid, 65534u) << run.output;
  }
}

// crun 1.8.1 in a user namespace drops nosuid,nodev from a writable bind of
// a host path given only the plain options; rnosuid/rnodev keep them. Read-
// only binds are ro,nosuid,nodev, and a bind of a FILE runs (crun 1.8.1
// refuses one that carries a recursive option).
TEST_P(RuntimeBundleTest, BindsAreNosuidNodevAndFileBindsRun) {
  fs::create_directories(bundle_ / "ro-src");
  fs::create_directories(bundle_ / "rw-src");
  ir::Policy policy = BundlePolicy();
  policy.filesystem.mounts.push_back(
      ir::Mount{ir::MountKind::kReadOnly, (bundle_ / "ro-src").string(), "/data", 0, false});
  policy.filesystem.mounts.push_back(
      ir::Mount{ir::MountKind::kWritable, (bundle_ / "rw-src").string(), "/scratch", 0, false});
  policy.filesystem.mounts.push_back(testing::ReadOnly("/etc/passwd"));
  RunResult run = RunInBundle(
      "grep -c '^root:' /etc/passwd; grep -E ' /(data|scratch|work|etc/passwd) ' /proc/self/mountinfo", policy);
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_EQ(run.status, 0) << run.output;
  std::istringstream lines(run.output);
  std::map<std::string, std::string> options_at;
  for (std::string line; std::getline(lines, line);) {
    // mountinfo: id parent dev root mountpoint options ...
    std::istringstream fields(line);
    std::string id, parent, dev, root, mountpoint, options;
    if (fields >> id >> parent >> dev >> root >> mountpoint >> options) options_at[mountpoint] = options;
  }
  ASSERT_EQ(options_at.size(), 4u) << run.output;
  for (const auto& [mountpoint, options] : options_at) {
    const bool writable = mountpoint == "/work" || mountpoint == "/scratch";
    EXPECT_NE(options.find("nosuid"), std::string::npos) << mountpoint << " " << options;
    EXPECT_NE(options.find("nodev"), std::string::npos) << mountpoint << " " << options;
    EXPECT_EQ(options.rfind(writable ? "rw," : "ro,", 0), 0u) << mountpoint << " " << options;
  }
}

TEST_P(RuntimeBundleTest, PrologueBlocksNamespaceCreation) {
  // unshare(CLONE_NEWUSER) is denied by the compiler prologue even though the
  // policy's default is allow.
  RunResult run = RunInBundle("if unshare -U true 2>/dev/null; then echo UNSHARE_OK; else echo UNSHARE_DENIED; fi");
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("UNSHARE_DENIED"), std::string::npos) << run.output;
}

// personality under the same permissive default, as runc and crun build the
// profile with libseccomp: the 0xffffffff query (perl's raw syscall: glibc's
// wrapper hides a seccomp errno) and PER_LINUX32 work, ADDR_NO_RANDOMIZE is
// refused. The query used to be refused (the prologue denied every value
// with a bit outside the safe personas', and the query sets them all).
TEST_P(RuntimeBundleTest, PrologueKeepsSafePersonalitiesUnderAPermissiveDefault) {
  const std::string query = "perl -e 'my $r = syscall(" + std::to_string(SYS_personality) +
                            ", 0xffffffff); print $r >= 0 ? \"QUERY_OK\\n\" : \"QUERY_REFUSED $!\\n\"'";
  RunResult run = RunInBundle(query +
                              "; setarch linux32 uname -m; "
                              "if setarch -R true 2>/dev/null; then echo NO_ASLR_APPLIED; else echo NO_ASLR_REFUSED; "
                              "fi");
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("QUERY_OK"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("i686"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("NO_ASLR_REFUSED"), std::string::npos) << run.output;
}

// `devices { kvm on }` gives the sandbox /dev/kvm (c 10:232), openable
// read-write under crun, which makes the node for the sandbox's user (and
// only with the device cgroup's allow rule: EPERM without it). runc binds
// the host's node, whose mode decides (the sandbox is host uid 65534).
// Without the setting there is no /dev/kvm.
TEST_P(RuntimeBundleTest, KvmOnGivesTheSandboxDevKvm) {
  struct stat host {};
  if (stat("/dev/kvm", &host) != 0 || !S_ISCHR(host.st_mode)) {
    GTEST_SKIP() << "SKIPPED LOUDLY: this host has no /dev/kvm to grant";
  }
  ir::Policy policy = BundlePolicy();
  policy.filesystem.devices.kvm = ir::DeviceAccess::kAllowed;
  const std::string script =
      "if [ -c /dev/kvm ]; then stat -c 'KVM %t:%T' /dev/kvm; else echo NO_KVM; fi; "
      "perl -e 'print open(my $f, \"+<\", \"/dev/kvm\") ? \"OPEN_RW_OK\\n\" : \"OPEN_RW_FAILED $!\\n\"'";
  RunResult with = RunInBundle(script, policy);
  if (auto why = CgroupSetupFailure(with)) GTEST_SKIP() << *why;
  ASSERT_EQ(with.status, 0) << with.output;
  EXPECT_NE(with.output.find("KVM a:e8"), std::string::npos) << with.output;  // 10:232
  const bool host_node_lets_others_in = (host.st_mode & 0006) == 0006;
  if (GetParam() == "crun" || host_node_lets_others_in) {
    EXPECT_NE(with.output.find("OPEN_RW_OK"), std::string::npos) << with.output;
  } else {
    EXPECT_NE(with.output.find("OPEN_RW_FAILED Permission denied"), std::string::npos) << with.output;
  }
  RunResult without = RunInBundle(script);
  ASSERT_EQ(without.status, 0) << without.output;
  EXPECT_NE(without.output.find("NO_KVM"), std::string::npos) << without.output;
}

// crun 1.8 run as root gives its stdin, stdout and stderr to the
// container's user: with this process's stdin on the host's /dev/null, a
// bundle run made that node nobody's (and nobody could then chmod it). The
// harness gives the runtime a pipe; this holds it to that, with stdin on
// /dev/null as ctest may give it, and puts the owner back if it changed.
TEST_P(RuntimeBundleTest, TheRuntimeLeavesTheHostsDevNullAlone) {
  struct stat before {};
  ASSERT_EQ(stat("/dev/null", &before), 0);
  const int saved_stdin = dup(STDIN_FILENO);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  dup2(null_fd, STDIN_FILENO);
  RunResult run = RunInBundle("echo ran");
  dup2(saved_stdin, STDIN_FILENO);
  close(saved_stdin);
  close(null_fd);
  struct stat after {};
  ASSERT_EQ(stat("/dev/null", &after), 0);
  if (after.st_uid != before.st_uid || after.st_gid != before.st_gid) {
    (void)chown("/dev/null", before.st_uid, before.st_gid);
  }
  EXPECT_EQ(after.st_uid, before.st_uid) << "the runtime changed the owner of the host's /dev/null";
  EXPECT_EQ(after.st_gid, before.st_gid);
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  EXPECT_EQ(run.status, 0) << run.output;
}

// `hide` masks the host file under every name a bind gives it: the child's
// bind of the hidden file's directory (/alias) and, on a merged-/usr host,
// /usr/bin/su beside a hidden /bin/su. maskedPaths used to carry the
// hidden path alone, and both printed the file.
TEST_P(RuntimeBundleTest, HiddenFilesAreMaskedUnderEveryName) {
  fs::create_directories(bundle_ / "data" / "sub");
  std::ofstream(bundle_ / "data" / "sub" / "secret.txt") << "SECRET\n";
  std::ofstream(bundle_ / "data" / "pub.txt") << "PUBLIC\n";
  ir::Policy policy = BundlePolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, (bundle_ / "data").string(), "/data", 0, false});
  policy.filesystem.mounts.push_back(
      ir::Mount{ir::MountKind::kReadOnly, (bundle_ / "data" / "sub").string(), "/alias", 0, false});
  policy.filesystem.hidden = {"/bin/su", "/data/sub/secret.txt"};
  RunResult run = RunInBundle(
      "cat /data/pub.txt; cat /data/sub/secret.txt /alias/secret.txt 2>/dev/null; "
      "if [ -s /usr/bin/su ]; then echo USR_SU_READABLE; fi; if [ -s /bin/su ]; then echo BIN_SU_READABLE; fi; "
      "echo END",
      policy);
  if (auto why = CgroupSetupFailure(run)) GTEST_SKIP() << *why;
  ASSERT_NE(run.output.find("END"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("PUBLIC"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("SECRET"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("BIN_SU_READABLE"), std::string::npos) << run.output;
  std::error_code ec;
  if (fs::equivalent("/bin/su", "/usr/bin/su", ec)) {
    EXPECT_EQ(run.output.find("USR_SU_READABLE"), std::string::npos) << run.output;
  } else {
    std::cerr << "NOT CHECKED: this host is not merged-/usr (/bin/su and /usr/bin/su are not one file)\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimeBundleTest, ::testing::Values("crun", "runc"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace cocoon
