// The macOS back end: the profile must be a well-formed deny-default SBPL
// program that uses only known operations and filters, and no string from the
// policy may ever appear in its text (paths travel as parameters).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "compiler/backends/environment_plan.h"
#include "compiler/backends/sbpl/macos_applier.h"
#include "compiler/backends/sbpl/sbpl_params.h"
#include "tests/backends/driver/test_policy.h"
#include "tests/backends/sbpl/sexpr.h"

namespace cocoon {
namespace {

using backends::sbpl::ParamRole;
using testing::SExpr;

const std::set<std::string> kOperations = {
    "default",         "process-exec",     "process-fork",  "signal",      "process-info*",
    "sysctl-read",     "mach-lookup",      "file-read*",    "file-write*", "file-write-data",
    "file-ioctl",      "network-outbound", "network-bind",  "network-inbound", "system-socket",
    "file-write-unlink", "file-write-create"};
const std::set<std::string> kFilters = {"literal", "subpath",    "require-all", "require-not", "target",
                                        "remote",  "local",      "global-name", "with",        "param"};

struct Compiled {
  std::string sb;
  backends::sbpl::SbplParams params;
  std::vector<std::string> warnings;
};

Compiled Compile(const ir::Policy& policy) {
  auto artifacts = backends::CompileSbpl(policy);
  EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  Compiled out;
  EXPECT_EQ(artifacts->size(), 2u);
  out.sb = (*artifacts)[0].bytes;
  EXPECT_EQ((*artifacts)[0].path, "macos.sb");
  EXPECT_EQ((*artifacts)[1].path, "macos.params.json");
  auto params = backends::sbpl::ParseSbplParams((*artifacts)[1].bytes);
  EXPECT_TRUE(params.ok()) << params.status().ToString();
  out.params = *params;
  out.warnings = (*artifacts)[0].warnings;
  return out;
}

// Checks a filter subtree; collects every string it contains.
void CheckFilter(const SExpr& filter, const std::set<std::string>& param_names) {
  ASSERT_EQ(filter.kind, SExpr::Kind::kList);
  ASSERT_FALSE(filter.items.empty());
  const std::string& head = filter.items[0].text;
  ASSERT_TRUE(kFilters.count(head)) << "unknown filter " << head;
  if (head == "param") {
    ASSERT_EQ(filter.items.size(), 2u);
    EXPECT_TRUE(param_names.count(filter.items[1].text)) << "undeclared param " << filter.items[1].text;
    return;
  }
  for (size_t i = 1; i < filter.items.size(); ++i) {
    const SExpr& item = filter.items[i];
    if (item.kind == SExpr::Kind::kList) {
      CheckFilter(item, param_names);
    } else if (item.kind == SExpr::Kind::kString) {
      // Literal strings are back-end constants only: absolute system paths,
      // mach service names, localhost endpoints or the denial message tag.
      const std::string& s = item.text;
      bool ok = s.rfind("/", 0) == 0 || s.rfind("com.apple.", 0) == 0 || s.rfind("localhost:", 0) == 0 ||
                s.rfind("cocoon:", 0) == 0;
      EXPECT_TRUE(ok) << "unexpected string literal " << s;
      for (char c : s) EXPECT_TRUE(c != '"' && c != '\\' && c != '\n') << s;
    } else {
      EXPECT_TRUE(item.text == "same-sandbox" || item.text == "ip" || item.text == "message") << item.text;
    }
  }
}

void ValidateProfile(const Compiled& compiled) {
  std::string error;
  std::vector<SExpr> forms = testing::SExprReader(compiled.sb).ReadAll(error);
  ASSERT_TRUE(error.empty()) << error << "\n" << compiled.sb;
  ASSERT_GE(forms.size(), 3u);
  ASSERT_EQ(forms[0].items.size(), 2u);
  EXPECT_EQ(forms[0].items[0].text, "version");
  EXPECT_EQ(forms[0].items[1].text, "1");
  EXPECT_EQ(forms[1].items[0].text, "deny");
  EXPECT_EQ(forms[1].items[1].text, "default");
  std::set<std::string> params;
  for (const auto& p : compiled.params.params) params.insert(p.name);
  for (size_t i = 1; i < forms.size(); ++i) {
    const SExpr& form = forms[i];
    ASSERT_EQ(form.kind, SExpr::Kind::kList);
    ASSERT_TRUE(form.items[0].text == "allow" || form.items[0].text == "deny") << form.items[0].text;
    size_t j = 1;
    for (; j < form.items.size() && form.items[j].kind == SExpr::Kind::kAtom; ++j) {
      EXPECT_TRUE(kOperations.count(form.items[j].text)) << "unknown operation " << form.items[j].text;
    }
    EXPECT_GT(j, 1u) << "rule without an operation";
    for (; j < form.items.size(); ++j) CheckFilter(form.items[j], params);
  }
  // Only one (allow default) would make the profile allow-default: never.
  EXPECT_EQ(compiled.sb.find("(allow default"), std::string::npos);
}

const backends::sbpl::SbplParam* FindParam(const Compiled& c, std::string_view name) {
  for (const auto& p : c.params.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(SbplBackend, StrictIsWellFormedDenyDefault) {
  Compiled c = Compile(testing::StrictPolicy());
  ValidateProfile(c);
  EXPECT_EQ(c.sb.find("network-outbound"), std::string::npos) << "network off must not allow outbound";
  ASSERT_NE(FindParam(c, "WORK_DIR"), nullptr);
  EXPECT_EQ(FindParam(c, "WORK_DIR")->value, "/work");
  EXPECT_EQ(FindParam(c, "TMP_DIR_0")->value, "/private/tmp");
  EXPECT_EQ(FindParam(c, "READ_ROOT_1")->value, "/private/etc/ssl/certs");
  EXPECT_EQ(FindParam(c, "HIDDEN_0")->value, "/private/etc/shadow");
  EXPECT_EQ(c.params.wall_time_ms, 5000u);
}

// Seatbelt sees the host's paths: a path hidden under an aliased bind
// (`readonly /opt/app as /app`, `hide /app/secrets`) is denied where it is
// on the host, /opt/app/secrets; /app/secrets does not exist there. Under a
// writable alias the hidden path also stays out of that root's writes.
// Seatbelt has no say over the environment: macos.params.json carries the
// policy's, and the applier replaces the process's own with it, so a
// `clear` policy hands the command none of the caller's variables (the
// documented sandbox-exec invocation handed it all of them before).
TEST(SbplBackend, TheParamsCarryThePolicysEnvironment) {
  Compiled c = Compile(testing::StrictPolicy());
  EXPECT_TRUE(c.params.environment.clear);
  EXPECT_EQ(c.params.environment.set, testing::StrictPolicy().environment.set);
  EXPECT_EQ(c.params.environment.pass, (std::vector<std::string>{"LANG", "TERM"}));
  const std::vector<std::string> env = backends::SandboxEnvironment(
      c.params.environment, {"AWS_SECRET_ACCESS_KEY=x", "LANG=fr_FR.UTF-8", "PATH=/opt/evil", "TERM=xterm", "junk"});
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/work", "LANG=fr_FR.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin",
                                           "TERM=xterm"}));
  ir::Environment inherit;
  inherit.clear = false;
  inherit.unset = {"AWS_SECRET_ACCESS_KEY"};
  inherit.set = {{"X", "1"}};
  EXPECT_EQ(backends::SandboxEnvironment(inherit, {"AWS_SECRET_ACCESS_KEY=x", "USER=me", "X=0"}),
            (std::vector<std::string>{"USER=me", "X=1"}));
  // A params file without the section is refused, not read as "inherit".
  std::string text = backends::sbpl::SbplParamsToJson(c.params);
  auto doc = nlohmann::ordered_json::parse(text);
  doc.erase("environment");
  EXPECT_FALSE(backends::sbpl::ParseSbplParams(doc.dump()).ok());
}

TEST(SbplBackend, HiddenPathsUnderAnAliasAreDeniedOnTheHost) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/opt/app", "/app", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kWritable, "/srv/data", "/data", 0, false});
  policy.filesystem.hidden = {"/app/secrets", "/data/keys", "/etc/shadow"};
  Compiled c = Compile(policy);
  ValidateProfile(c);
  std::set<std::string> hidden;
  for (const auto& p : c.params.params) {
    if (p.role == ParamRole::kHidden) hidden.insert(p.value);
  }
  EXPECT_EQ(hidden, (std::set<std::string>{"/opt/app/secrets", "/srv/data/keys", "/private/etc/shadow"}));
  bool keys_protected = false;
  for (const auto& p : c.params.params) {
    keys_protected |= p.role == ParamRole::kProtected && p.value == "/srv/data/keys";
  }
  EXPECT_TRUE(keys_protected) << "the hidden path must stay unwritable inside its writable root";
}

// The values of the protected parameters derived from `base`.
std::set<std::string> ProtectedUnder(const Compiled& c, std::string_view base) {
  std::set<std::string> out;
  for (const auto& p : c.params.params) {
    if (p.role == ParamRole::kProtected && p.base == base) out.insert(p.value);
  }
  return out;
}

// A read-only path whose host source lies in a writable root stays
// unwritable, also under an alias (`readonly /tmp/shared/models as
// /models` under `tmpfs /tmp`, the reviewer's case: TMP_DIR_0 used to
// protect only .git, so the sandbox could write the read-only models). The
// comparison is on host paths as Seatbelt sees them (/var is /private/var),
// and the part of an aliased writable root that a read-only mount covers
// on Linux stays unwritable too.
TEST(SbplBackend, ReadOnlySourcesInsideAWritableRootStayUnwritable) {
  ir::Policy policy = testing::StrictPolicy();
  auto& mounts = policy.filesystem.mounts;
  mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/tmp/shared/models", "/models", 0, false});
  mounts.push_back(ir::Mount{ir::MountKind::kWritable, "/srv/data", "/data", 0, false});
  mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/opt/ro", "/data/ro", 0, false});
  mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/data/keys", "/keys", 0, false});
  mounts.push_back(ir::Mount{ir::MountKind::kWritable, "/private/var/cache", "/cache", 0, false});
  mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/var/cache/pinned", "/pinned", 0, false});
  std::sort(mounts.begin(), mounts.end(), [](const ir::Mount& a, const ir::Mount& b) { return a.target < b.target; });
  Compiled c = Compile(policy);
  ValidateProfile(c);
  ASSERT_EQ(FindParam(c, "TMP_DIR_0")->value, "/private/tmp");
  EXPECT_EQ(ProtectedUnder(c, "TMP_DIR_0"), (std::set<std::string>{"/private/tmp/.git/config",
                                                                    "/private/tmp/.git/hooks",
                                                                    "/private/tmp/shared/models"}));
  std::string data, cache;
  for (const auto& p : c.params.params) {
    if (p.role == ParamRole::kWriteRoot && p.value == "/srv/data") data = p.name;
    if (p.role == ParamRole::kWriteRoot && p.value == "/private/var/cache") cache = p.name;
  }
  EXPECT_EQ(ProtectedUnder(c, data), (std::set<std::string>{"/srv/data/.git/config", "/srv/data/.git/hooks",
                                                             "/srv/data/keys", "/srv/data/ro"}));
  EXPECT_EQ(ProtectedUnder(c, cache), (std::set<std::string>{"/private/var/cache/.git/config",
                                                              "/private/var/cache/.git/hooks",
                                                              "/private/var/cache/pinned"}));
  // Each is excluded from its root's write rule.
  for (const auto& p : c.params.params) {
    if (p.role != ParamRole::kProtected) continue;
    EXPECT_NE(c.sb.find("(require-not (subpath (param \"" + p.name + "\")))"), std::string::npos) << p.name;
  }
}

// Seatbelt has no tmpfs: TMP_DIR_n is the host's own directory unless the
// launcher points it elsewhere, and nothing caps it. Said at the policy's
// line instead of passing for Linux's fresh, capped mount.
TEST(SbplBackend, ATmpfsItCannotReproduceIsWarnedAboutAtItsLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.back().size_bytes = 8 << 20;  // tmpfs /tmp
  policy.provenance["filesystem.mount:/tmp"] = {"strict", "mac.cocoon", 3};
  Compiled c = Compile(policy);
  bool tmpfs = false;
  for (const auto& w : c.warnings) {
    tmpfs |= w.rfind("macos: 'tmpfs /tmp size 8MiB' (at mac.cocoon:3) is not a fresh, capped tmpfs: TMP_DIR_0 "
                     "defaults to the host's own /private/tmp, shared with the host",
                     0) == 0;
  }
  EXPECT_TRUE(tmpfs) << ::testing::PrintToString(c.warnings);
}

// The work dir is written in place: not staged, no quota, and nothing
// checks what the run leaves there; said at the `work` line.
TEST(SbplBackend, AWorkDirItCannotStageIsWarnedAboutAtItsLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.provenance["filesystem.work"] = {"strict", "mac.cocoon", 2};
  Compiled c = Compile(policy);
  bool work = false;
  for (const auto& w : c.warnings) {
    work |= w.rfind("macos: 'work /work quota 64MiB' (at mac.cocoon:2): Seatbelt cannot stage the work dir: the "
                    "sandbox writes WORK_DIR directly, with no quota, and nothing checks what the run leaves there",
                    0) == 0;
  }
  EXPECT_TRUE(work) << ::testing::PrintToString(c.warnings);
}

// Seatbelt's remote ip filter takes "localhost" (127.0.0.1 and ::1) or "*",
// no address: 127.0.0.1 or [::1] alone is widened to both families on that
// port, said at the policy's line; another 127/8 address is not what
// "localhost" matches, so it stays blocked (fail closed) and is said too,
// as is a host name that merely starts with "127." (it used to pass for
// loopback).
TEST(SbplBackend, LoopbackAddressesAreWidenedOrBlockedAndWarned) {
  ir::Policy policy = testing::WithNetworkCalls(testing::StrictPolicy());
  policy.network.mode = ir::NetworkMode::kAllowList;
  policy.network.allow = {{"127.0.0.1", 80}, {"127.0.0.2", 22}, {"127.example.com", 23}, {"::1", 9000},
                          {"localhost", 3128}};
  policy.provenance["network"] = {"strict", "net.cocoon", 5};
  Compiled c = Compile(policy);
  ValidateProfile(c);
  EXPECT_NE(c.sb.find("(allow network-outbound (remote ip \"localhost:80\") (remote ip \"localhost:9000\") "
                      "(remote ip \"localhost:3128\"))"),
            std::string::npos)
      << c.sb;
  EXPECT_EQ(c.sb.find(":22\""), std::string::npos) << "127.0.0.2 must not open localhost:22";
  EXPECT_EQ(c.sb.find(":23\""), std::string::npos) << "a host name is not loopback for starting with 127.";
  std::vector<std::string> network;
  for (const auto& w : c.warnings) {
    if (w.find("network allow") != std::string::npos) network.push_back(w);
  }
  ASSERT_EQ(network.size(), 3u) << ::testing::PrintToString(c.warnings);
  EXPECT_EQ(network[0].rfind("macos: network allow 127.0.0.1:80 (at net.cocoon:5) is widened to (remote ip "
                             "\"localhost:80\"), both 127.0.0.1 and [::1] on port 80",
                             0),
            0u);
  EXPECT_EQ(network[1].rfind("macos: network allow 127.0.0.2:22 (at net.cocoon:5) stays blocked", 0), 0u);
  EXPECT_EQ(network[2].rfind("macos: network allow [::1]:9000 (at net.cocoon:5) is widened", 0), 0u);
  bool remote = false;
  for (const auto& w : c.warnings) {
    remote |= w == "macos: Seatbelt cannot filter by remote host; 127.example.com:23 stays blocked (route it "
                   "through a loopback proxy)";
  }
  EXPECT_TRUE(remote) << ::testing::PrintToString(c.warnings);
}

TEST(SbplBackend, ProtectedSubpathsGetLiteralAndSubpath) {
  Compiled c = Compile(testing::StrictPolicy());
  const auto* hooks = FindParam(c, "WORK_DIR_PROTECTED_1");
  ASSERT_NE(hooks, nullptr);
  EXPECT_EQ(hooks->value, "/work/.git/hooks");
  EXPECT_EQ(hooks->role, ParamRole::kProtected);
  EXPECT_NE(c.sb.find("(require-not (literal (param \"WORK_DIR_PROTECTED_1\")))"), std::string::npos);
  EXPECT_NE(c.sb.find("(require-not (subpath (param \"WORK_DIR_PROTECTED_1\")))"), std::string::npos);
}

TEST(SbplBackend, HostilePathsNeverReachTheProfileText) {
  ir::Policy policy = testing::HostilePolicy();
  Compiled c = Compile(policy);
  ValidateProfile(c);
  EXPECT_EQ(c.sb.find("evil"), std::string::npos);
  EXPECT_EQ(c.sb.find("a\\\"b"), std::string::npos);
  EXPECT_EQ(c.sb.find("example.com"), std::string::npos);
  EXPECT_NE(c.sb.find("cocoon:ev_il__profile_"), std::string::npos);
  // The hostile values survive verbatim in the JSON sidecar instead.
  bool found = false;
  for (const auto& p : c.params.params) found |= p.value == "/data/a\"b)(allow default)(c;d\\e\nf";
  EXPECT_TRUE(found);
  EXPECT_EQ(FindParam(c, "WORK_DIR")->value, policy.filesystem.work.path);
}

TEST(SbplBackend, AllowListOnlyOpensLoopbackAndWarnsForTheRest) {
  Compiled c = Compile(testing::WithNetworkCalls(testing::HostilePolicy()));
  EXPECT_NE(c.sb.find("(allow network-outbound (remote ip \"localhost:8080\"))"), std::string::npos);
  EXPECT_EQ(c.sb.find(":443"), std::string::npos);
  bool warned = false;
  for (const auto& w : c.warnings) warned |= w.find("cannot filter by remote host") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(SbplBackend, NetworkOnAllowsOutbound) {
  ir::Policy policy = testing::WithNetworkCalls(testing::StrictPolicy());
  policy.network.mode = ir::NetworkMode::kOn;
  Compiled c = Compile(policy);
  ValidateProfile(c);
  EXPECT_NE(c.sb.find("(allow network-outbound)"), std::string::npos);
}

// Seatbelt filters no system calls, but refusing every exec, every
// fork/clone or a network call is an operation it can leave out; the
// profile stays well formed without them (they used to be granted always).
TEST(SbplBackend, RefusedExecForkAndNetworkCallsLeaveTheirOperationsOut) {
  ir::Policy policy = testing::StrictPolicy();
  policy.network.mode = ir::NetworkMode::kOn;
  std::erase_if(policy.syscalls.rules, [](const ir::SyscallRule& r) { return r.name == "execve"; });
  policy.syscalls.rules.push_back(testing::Rule("listen", ir::ActionKind::kAllow));
  for (const char* name : {"bind", "clone", "clone3", "connect", "execve", "execveat", "fork", "vfork"}) {
    policy.syscalls.rules.push_back(testing::Rule(name, ir::ActionKind::kErrno, 1));
  }
  Compiled c = Compile(policy);
  ValidateProfile(c);
  EXPECT_EQ(c.sb.find("process-exec"), std::string::npos) << c.sb;
  EXPECT_EQ(c.sb.find("process-fork"), std::string::npos) << c.sb;
  EXPECT_EQ(c.sb.find("network-outbound"), std::string::npos) << c.sb;
  EXPECT_EQ(c.sb.find("network-bind"), std::string::npos) << c.sb;
  EXPECT_EQ(c.sb.find("dnssd"), std::string::npos) << c.sb;
  EXPECT_NE(c.sb.find("(allow network-inbound (local ip \"localhost:*\"))"), std::string::npos) << c.sb;
  // execveat refused, execve allowed: programs still run on Linux, so exec stays.
  policy = testing::StrictPolicy();
  policy.syscalls.rules.push_back(testing::Rule("execveat", ir::ActionKind::kErrno, 1));
  c = Compile(policy);
  ValidateProfile(c);
  EXPECT_NE(c.sb.find("(allow process-exec)"), std::string::npos) << c.sb;
}

// tty is granted (a /dev/tty rule); gpu and kvm, which Seatbelt cannot
// grant, are reported at the policy's line (kvm used to vanish silently).
TEST(SbplBackend, DevicesItCannotGrantAreWarnedAboutAtThePolicyLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.devices = {ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed};
  policy.provenance["filesystem.devices.gpu"] = {"strict", "dev.cocoon", 4};
  policy.provenance["filesystem.devices.kvm"] = {"strict", "dev.cocoon", 6};
  Compiled c = Compile(policy);
  ValidateProfile(c);
  EXPECT_NE(c.sb.find("(literal \"/dev/tty\")"), std::string::npos);
  bool gpu = false, kvm = false;
  for (const auto& w : c.warnings) {
    gpu |= w.rfind("macos: 'devices { gpu on }' (at dev.cocoon:4) has no Seatbelt equivalent", 0) == 0;
    kvm |= w.rfind("macos: 'devices { kvm on }' (at dev.cocoon:6) has no macOS equivalent", 0) == 0;
  }
  EXPECT_TRUE(gpu);
  EXPECT_TRUE(kvm);
}

// Protected paths are denied by name, so renaming a directory above one
// inside a writable root would carry it to an unprotected name (mv .git .g;
// echo x > .g/hooks/pre-commit; mv .g .git). The ancestors between a root
// and a protected path cannot be renamed, removed or made anew, nor can the
// roots themselves be renamed; after every writable root, so that no later
// allow of an enclosing root reopens them.
TEST(SbplBackend, AncestorsOfProtectedPathsCannotBeRenamed) {
  ir::Policy policy = testing::StrictPolicy();
  // A hidden host file two levels down in the tmpfs root (/private/tmp).
  policy.filesystem.hidden.push_back("/tmp/a/b/secret");
  Compiled c = Compile(policy);
  ValidateProfile(c);
  std::map<std::string, std::string> ancestors;  // value -> name
  for (const auto& p : c.params.params) {
    if (p.role == ParamRole::kProtectedAncestor) ancestors[p.value] = p.name;
  }
  ASSERT_TRUE(ancestors.count("/work/.git")) << c.sb;
  ASSERT_TRUE(ancestors.count("/private/tmp/a")) << c.sb;
  ASSERT_TRUE(ancestors.count("/private/tmp/a/b")) << c.sb;
  EXPECT_FALSE(ancestors.count("/work/.git/hooks"));
  EXPECT_EQ(FindParam(c, ancestors["/work/.git"])->base, "WORK_DIR");
  EXPECT_EQ(FindParam(c, ancestors["/work/.git"])->relative, ".git");
  const size_t unlink_roots = c.sb.find("(deny file-write-unlink\n    (literal (param \"WORK_DIR\"))");
  const size_t ancestors_rule = c.sb.find("(deny file-write-create file-write-unlink");
  ASSERT_NE(unlink_roots, std::string::npos) << c.sb;
  ASSERT_NE(ancestors_rule, std::string::npos) << c.sb;
  EXPECT_NE(c.sb.find("(literal (param \"TMP_DIR_0\"))", unlink_roots), std::string::npos);
  EXPECT_NE(c.sb.find("(literal (param \"" + ancestors["/private/tmp/a/b"] + "\"))", ancestors_rule), std::string::npos);
  EXPECT_GT(unlink_roots, c.sb.rfind("(allow file-write*"));
}

// `root rootfs` on macOS: the sandbox sees the host, and the warning says
// what it may read there, the system locations included (it used to claim
// only the listed read-only paths were readable).
TEST(SbplBackend, RootfsWarningNamesWhatStaysReadable) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.root = ir::RootKind::kRootfs;
  policy.filesystem.rootfs = "/srv/bundle";
  policy.provenance["filesystem.root"] = {"strict", "r.cocoon", 3};
  Compiled c = Compile(policy);
  bool said = false;
  for (const auto& w : c.warnings) {
    said |= w.rfind("macos: 'root rootfs /srv/bundle' (at r.cocoon:3) has no macOS equivalent", 0) == 0 &&
            w.find("/usr/lib") != std::string::npos && w.find("/System/Library") != std::string::npos;
    EXPECT_EQ(w.find("only the listed read-only paths are readable"), std::string::npos) << w;
  }
  EXPECT_TRUE(said) << ::testing::PrintToString(c.warnings);
}

TEST(SbplBackend, HiddenRulesComeLast) {
  Compiled c = Compile(testing::StrictPolicy());
  // Seatbelt: the last matching rule wins, so the hidden deny must follow every allow.
  EXPECT_GT(c.sb.rfind("(deny file-read* file-write*"), c.sb.rfind("(allow "));
}

TEST(SbplParams, OverrideRecomputesDerivedParams) {
  Compiled c = Compile(testing::StrictPolicy());
  auto resolved = backends::sbpl::ResolveParams(c.params, {{"WORK_DIR", "/tmp/run-1"}});
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  std::map<std::string, std::string> values(resolved->begin(), resolved->end());
  EXPECT_EQ(values["WORK_DIR"], "/private/tmp/run-1");
  EXPECT_EQ(values["WORK_DIR_PROTECTED_1"], "/private/tmp/run-1/.git/hooks");
  EXPECT_FALSE(backends::sbpl::ResolveParams(c.params, {{"NOPE", "/x"}}).ok());
  EXPECT_FALSE(backends::sbpl::ResolveParams(c.params, {{"WORK_DIR", "relative"}}).ok());
  EXPECT_FALSE(backends::sbpl::ResolveParams(c.params, {{"WORK_DIR_PROTECTED_1", "/x"}}).ok());
}

TEST(SbplParams, CanonicalisesPrivateSymlinks) {
  EXPECT_EQ(backends::sbpl::CanonicalMacosPath("/tmp"), "/private/tmp");
  EXPECT_EQ(backends::sbpl::CanonicalMacosPath("/var/folders/x"), "/private/var/folders/x");
  EXPECT_EQ(backends::sbpl::CanonicalMacosPath("/tmpx"), "/tmpx");
  EXPECT_EQ(backends::sbpl::CanonicalMacosPath("/usr/lib"), "/usr/lib");
}

TEST(MacosApplier, FailsClearlyOffMacos) {
#ifndef __APPLE__
  auto artifacts = backends::CompileSbpl(testing::StrictPolicy());
  ASSERT_TRUE(artifacts.ok());
  Status status = backends::sbpl::ApplyMacosSandbox({(*artifacts)[0].bytes, (*artifacts)[1].bytes, {}});
  EXPECT_EQ(status.code(), ErrorCode::kUnimplemented);
  status = backends::sbpl::ApplyMacosSandbox({(*artifacts)[0].bytes, "{", {}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
#endif
}

}  // namespace
}  // namespace cocoon

namespace cocoon {
namespace {

TEST(SExprReader, RejectsUnbalancedAndUnterminatedInput) {
  std::string error;
  testing::SExprReader("(version 1)(allow file-read* (subpath \"/x\")").ReadAll(error);
  EXPECT_NE(error.find("missing ')'"), std::string::npos);
  error.clear();
  testing::SExprReader("(allow))").ReadAll(error);
  EXPECT_NE(error.find("unbalanced ')'"), std::string::npos);
  error.clear();
  testing::SExprReader("(literal \"/a)").ReadAll(error);
  EXPECT_NE(error.find("unterminated string"), std::string::npos);
  error.clear();
  auto forms = testing::SExprReader("(literal \"a\\\"b\") ; comment\n").ReadAll(error);
  ASSERT_TRUE(error.empty());
  EXPECT_EQ(forms[0].items[1].text, "a\"b");
}

}  // namespace
}  // namespace cocoon
