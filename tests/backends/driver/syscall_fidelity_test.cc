// The syscall rules of a real policy (front end included, so each rule's
// provenance is the checker's) on the targets with no syscall filter: what
// macOS and Windows can express is carried out, and the profile's own rules
// that they cannot are named in one warning per target, at the syscalls
// block's line. They used to be dropped silently: strict + `network on` +
// `deny socket connect` / `deny execve execveat` / `deny fork vfork clone
// clone3` gave (allow process-exec), (allow process-fork),
// (allow network-outbound) and a Windows plan with the network on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "compiler/frontend/frontend.h"

namespace cocoon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRepo = fs::path(COCOON_SOURCE_DIR).lexically_normal();

ir::Policy CompileText(const std::string& text) {
  frontend::FrontendOptions options;
  options.search_paths = {(kRepo / "policies").string()};
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("p.cocoon", text, "", options, diagnostics);
  EXPECT_TRUE(policy.has_value()) << diagnostics.Render();
  return policy.value_or(ir::Policy{});
}

struct Output {
  std::string sb;
  json windows;
  std::vector<std::string> warnings;  // every warning that mentions 'syscalls'
};

Output Compile(const ir::Policy& policy) {
  Output out;
  auto sbpl = backends::CompileSbpl(policy);
  auto windows = backends::CompileWindows(policy);
  EXPECT_TRUE(sbpl.ok() && windows.ok());
  if (!sbpl.ok() || !windows.ok()) return out;
  out.sb = (*sbpl)[0].bytes;
  out.windows = json::parse((*windows)[0].bytes);
  for (const auto* artifacts : {&*sbpl, &*windows}) {
    for (const std::string& w : (*artifacts)[0].warnings) {
      if (w.find("'syscalls'") != std::string::npos) out.warnings.push_back(w);
    }
  }
  return out;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SyscallFidelity, WhatMacosAndWindowsCanExpressIsCarriedOutAndTheRestWarnedAtTheBlock) {
  const Output out = Compile(CompileText(R"(import "strict"
profile n extends strict {
  relaxes network
  network on
  syscalls {
    deny socket connect
    deny execve execveat
    deny fork vfork clone clone3
    deny tkill
    deny bind if arg2 > 16
  }
}
)"));
  EXPECT_FALSE(Has(out.sb, "process-exec")) << out.sb;
  EXPECT_FALSE(Has(out.sb, "process-fork")) << out.sb;
  EXPECT_FALSE(Has(out.sb, "network-")) << out.sb;
  EXPECT_FALSE(Has(out.sb, "system-socket")) << out.sb;
  EXPECT_FALSE(Has(out.sb, "dnssd")) << out.sb;
  EXPECT_EQ(out.windows["network"]["mode"], "off");
  EXPECT_EQ(out.windows["job"]["active_process_limit"], 1);
  EXPECT_NE(std::find(out.windows["job"]["limit_flags"].begin(), out.windows["job"]["limit_flags"].end(),
                      "JOB_OBJECT_LIMIT_ACTIVE_PROCESS"),
            out.windows["job"]["limit_flags"].end());
  ASSERT_EQ(out.warnings.size(), 2u) << ::testing::PrintToString(out.warnings);
  for (const std::string& w : out.warnings) {
    EXPECT_TRUE(w.rfind("macos: the 'syscalls' block (at p.cocoon:5)", 0) == 0 ||
                w.rfind("windows: the 'syscalls' block (at p.cocoon:5)", 0) == 0)
        << w;
    EXPECT_TRUE(Has(w, "threads stay allowed")) << w;
    EXPECT_TRUE(Has(w, "not enforced at all: bind if arg2 > 16, tkill")) << w;
    // strict's own rules are the parent's, not this profile's.
    EXPECT_FALSE(Has(w, "@mount")) << w;
  }
}

// Denying part of a capability leaves the target's operation in place (the
// rest of it stays allowed on Linux too), and the rule is named.
TEST(SyscallFidelity, PartOfACapabilityIsNamedAndTheOperationStays) {
  const Output out = Compile(CompileText(R"(import "strict"
profile p extends strict {
  relaxes network
  network on
  syscalls {
    deny fork
    deny socket if arg0 == 2
  }
}
)"));
  EXPECT_TRUE(Has(out.sb, "(allow process-fork)")) << out.sb;
  EXPECT_TRUE(Has(out.sb, "(allow network-outbound)")) << out.sb;
  EXPECT_EQ(out.windows["network"]["mode"], "on");
  ASSERT_EQ(out.warnings.size(), 2u) << ::testing::PrintToString(out.warnings);
  for (const std::string& w : out.warnings) {
    EXPECT_TRUE(Has(w, "not enforced at all: fork, socket if arg0 == 2")) << w;
    EXPECT_FALSE(Has(w, "takes effect only as")) << w;
  }
}

// A profile whose own block restricts nothing is not warned about; nor is
// a child with no syscalls block (the parent's rules are the parent's).
TEST(SyscallFidelity, InheritedRulesAndAllowsAreNotWarnedAbout) {
  EXPECT_TRUE(Compile(CompileText("import \"build\"\nprofile q extends build { }\n")).warnings.empty());
  EXPECT_TRUE(Compile(CompileText("import \"strict\"\nprofile q extends strict {\n  relaxes syscalls\n"
                                  "  syscalls { allow @chown }\n}\n"))
                  .warnings.empty());
}

// A restrictive default the profile's own block sets is named: on these
// targets every call outside the allow list is allowed. It used to pass
// without a word (`default kill` + `allow @system-service` gave no warning).
TEST(SyscallFidelity, AnOwnRestrictiveDefaultIsNamed) {
  const Output out = Compile(CompileText(R"(profile b {
  network off
  filesystem { root host readonly /usr /bin /lib work /work quota 64MiB }
  syscalls {
    default kill
    allow @system-service
  }
}
)"));
  ASSERT_EQ(out.warnings.size(), 2u) << ::testing::PrintToString(out.warnings);
  for (const std::string& w : out.warnings) {
    EXPECT_TRUE(Has(w, "default kill (at p.cocoon:5) is not enforced: every syscall outside the allow list is "
                       "allowed on this target"))
        << w;
    EXPECT_FALSE(Has(w, "not enforced at all")) << w;
  }
}

// Rules that repeat the default action are the profile's own rules too:
// the checker drops them from the rule list (they change nothing on
// Linux), but these targets do not carry them out either. Only
// `personality` used to be listed here.
TEST(SyscallFidelity, RulesThatRepeatTheDefaultAreListed) {
  const Output out = Compile(CompileText(R"(profile b {
  network off
  filesystem { root host readonly /usr /bin /lib work /work quota 64MiB }
  syscalls {
    default errno EPERM
    allow @system-service
    deny ptrace errno EPERM
    deny @aio errno EPERM
    deny personality errno ENOSYS
  }
}
)"));
  ASSERT_EQ(out.warnings.size(), 2u) << ::testing::PrintToString(out.warnings);
  for (const std::string& w : out.warnings) {
    EXPECT_TRUE(Has(w, "default errno EPERM (at p.cocoon:5) is not enforced")) << w;
    EXPECT_TRUE(Has(w, "not enforced at all: @aio, personality, ptrace")) << w;
  }
}

// strict itself: its `deny @aio errno ENOSYS` repeats its default.
TEST(SyscallFidelity, StrictListsItsAioRuleAndItsDefault) {
  const Output out = Compile(CompileText("import \"strict\"\nprofile s extends strict { }\n"));
  EXPECT_TRUE(out.warnings.empty()) << ::testing::PrintToString(out.warnings);
  frontend::FrontendOptions options;
  options.search_paths = {(kRepo / "policies").string()};
  Diagnostics diagnostics;
  auto strict = frontend::CompilePolicyFile((kRepo / "policies" / "strict.cocoon").string(), "strict", options,
                                            diagnostics);
  ASSERT_TRUE(strict.has_value()) << diagnostics.Render();
  const Output own = Compile(*strict);
  ASSERT_EQ(own.warnings.size(), 2u) << ::testing::PrintToString(own.warnings);
  for (const std::string& w : own.warnings) {
    EXPECT_TRUE(Has(w, "default errno ENOSYS (at ")) << w;
    EXPECT_TRUE(Has(w, "@aio, ")) << w;
    EXPECT_TRUE(Has(w, "@mount")) << w;
  }
}

}  // namespace
}  // namespace cocoon
