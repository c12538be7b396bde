// Inheritance, include/import resolution, and cycles, over real files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "compiler/common/digest.h"
#include "compiler/frontend/checker.h"
#include "compiler/frontend/lineage.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

namespace fs = std::filesystem;

class ResolutionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cocoon-frontend-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "lib");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  std::optional<ir::Policy> Compile(const std::string& path, const std::string& profile, std::string* rendered,
                                    std::vector<std::string> search = {}) {
    Diagnostics diagnostics;
    FrontendOptions options;
    options.search_paths = std::move(search);
    auto policy = CompilePolicyFile(path, profile, options, diagnostics);
    *rendered = diagnostics.Render();
    return policy;
  }

  // `cocoon check`: every profile the file defines.
  bool Check(const std::string& path, std::string* rendered, DiagnosticsOptions cap = {}) {
    Diagnostics diagnostics(cap);
    FrontendOptions options;
    options.diagnostics = cap;
    bool ok = CheckPolicyFile(path, "", options, diagnostics);
    *rendered = diagnostics.Render();
    last_suppressed_ = diagnostics.suppressed();
    last_errors_ = diagnostics.error_count();
    return ok;
  }

  fs::path dir_;
  size_t last_suppressed_ = 0;
  size_t last_errors_ = 0;
};

constexpr char kBase[] =
    "profile base {\n"
    "  limits { memory 64MiB processes 8 }\n"
    "  filesystem { readonly /usr tmpfs /tmp size 8MiB }\n"
    "  syscalls { default errno ENOSYS allow read write deny ptrace }\n"
    "  environment { set A \"1\" set B \"2\" }\n"
    "}\n";

// A diagnostic inside a file the user's policy did not name itself says why
// that file was read: the `extends` (checker) or the `import` chain (parser,
// loader) in the user's file, each a note with its caret.
// `check` reports in source order: an escape error (found before parsing)
// at line 4 came before the syntax error at line 3, and a warning the
// checker found after the errors of its profile came after them.
TEST_F(ResolutionTest, CheckReportsInSourceOrder) {
  std::string out;
  EXPECT_FALSE(Check(Write("o.cocoon", "profile p {\n  description \"x\"\n  network of\n"
                                       "  description \"bad \\q\"\n}\n"),
                     &out));
  const size_t syntax = out.find("o.cocoon:3:11:");
  const size_t escape = out.find("o.cocoon:4:");
  ASSERT_NE(syntax, std::string::npos) << out;
  ASSERT_NE(escape, std::string::npos) << out;
  EXPECT_LT(syntax, escape) << out;

  EXPECT_FALSE(Check(Write("e.cocoon", "profile p {\n  environment { sett FOO \"x\" }\n}\n"), &out));
  const size_t warning = out.find("WARNING: ");
  const size_t error = out.find("ERROR: ");
  ASSERT_NE(warning, std::string::npos) << out;
  ASSERT_NE(error, std::string::npos) << out;
  EXPECT_LT(warning, error) << out;  // the warning is at line 1, the error at line 2
}

// --max-errors caps what is shown, not what is counted: syntax errors past
// it are counted (up to the parser's own stop at 25).
TEST_F(ResolutionTest, CheckCountsSyntaxErrorsPastTheCap) {
  std::string text = "profile p {\n";
  for (int i = 0; i < 40; ++i) text += "  hostname = x" + std::to_string(i) + "\n";
  text += "}\n";
  std::string out;
  EXPECT_FALSE(Check(Write("many.cocoon", text), &out, DiagnosticsOptions{3}));
  EXPECT_EQ(last_errors_, 3u) << out;
  EXPECT_EQ(last_errors_ + last_suppressed_, 25u) << out;
  EXPECT_NE(out.find("stopped parsing after 25 syntax errors"), std::string::npos) << out;
}

// A syntax error stops checking only the statement it is in (and the
// profiles that extend its profile): the other profiles' mistakes are still
// reported, and a '#' that swallows a line hides no syntax error before it.
TEST_F(ResolutionTest, CheckReportsOtherProfilesMistakesDespiteASyntaxError) {
  std::string out;
  EXPECT_FALSE(Check(Write("s.cocoon",
                           "profile a {\n  network offf\n}\n"
                           "profile b {\n  limits { memroy 1GiB }\n}\n"
                           "profile c extends a {\n  limits { wall_tme 1s }\n}\n"),
                     &out));
  EXPECT_NE(out.find("s.cocoon:2:11: unexpected 'offf'"), std::string::npos) << out;
  EXPECT_NE(out.find("s.cocoon:5:12: unknown limit 'memroy'"), std::string::npos) << out;
  // c extends the broken a: not checked, so nothing that follows from a.
  EXPECT_EQ(out.find("wall_tme"), std::string::npos) << out;
  EXPECT_EQ(last_errors_, 2u) << out;

  EXPECT_FALSE(Check(Write("o.cocoon", "profile p {\n  network of\n  filesystem { hide /etc/shadow#x }\n}\n"), &out));
  EXPECT_NE(out.find("o.cocoon:2:11: unexpected 'of'"), std::string::npos) << out;
  EXPECT_NE(out.find("o.cocoon:3:32: '#' right after the path"), std::string::npos) << out;
  EXPECT_EQ(out.find("block opened here"), std::string::npos) << out;
  EXPECT_EQ(last_errors_, 2u) << out;

  // Two profiles whose names recovery made up are not "defined twice".
  EXPECT_FALSE(Check(Write("n.cocoon", "profile {\n  network off\n}\nprofile {\n  network off\n}\n"), &out));
  EXPECT_EQ(out.find("already defined"), std::string::npos) << out;
}

// The rest of a profile with a syntax error is checked too: its other
// mistakes are reported (`memroy`, the hostname), at their lines, and
// nothing that only follows from the statements the parser dropped: no
// "no syscalls section" for a profile whose section may be the broken one,
// no `relaxes` "acknowledges nothing" when the weakening was the broken
// line, no "inside the work dir" against /work when `work /x` was.
TEST_F(ResolutionTest, CheckReportsTheOtherMistakesOfAProfileWithASyntaxError) {
  std::string out;
  const std::string path = Write("b.cocoon",
                                 "profile a {\n  network offf\n  limits { memroy 1GiB }\n  cwd relative\n"
                                 "  limits { memory 1GiB bogus }\n  hostname \"bad name!\"\n}\n");
  EXPECT_FALSE(Check(path, &out));
  EXPECT_NE(out.find("b.cocoon:2:11: unexpected 'offf'"), std::string::npos) << out;
  EXPECT_NE(out.find("ERROR: " + path + ":3:12: unknown limit 'memroy'\n"
                     " |   limits { memroy 1GiB }\n"
                     " |            ^~~~~~\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("b.cocoon:4:7: unexpected 'relative'"), std::string::npos) << out;
  EXPECT_NE(out.find("b.cocoon:5:30: unexpected '}'"), std::string::npos) << out;
  EXPECT_NE(out.find("b.cocoon:6:12: invalid hostname 'bad name!'"), std::string::npos) << out;
  EXPECT_EQ(out.find("syscalls section"), std::string::npos) << out;
  EXPECT_EQ(last_errors_, 5u) << out;

  EXPECT_FALSE(Check(Write("c.cocoon", "profile base {\n  limits { memory 64MiB }\n  syscalls { allow read }\n}\n"
                                       "profile c extends base {\n  relaxes limits\n  limits { memory = 2GiB }\n"
                                       "  filesystem { work /x quota 1GiB = 3  hide /work/y }\n"
                                       "  limits { wall_tme 1s }\n}\n"),
                     &out));
  EXPECT_NE(out.find("c.cocoon:7:19: unexpected '='"), std::string::npos) << out;
  EXPECT_NE(out.find("c.cocoon:8:35: unexpected '='"), std::string::npos) << out;
  EXPECT_NE(out.find("c.cocoon:9:12: unknown limit 'wall_tme'"), std::string::npos) << out;
  EXPECT_EQ(out.find("acknowledges nothing"), std::string::npos) << out;
  EXPECT_EQ(out.find("work dir"), std::string::npos) << out;
  EXPECT_EQ(last_errors_, 3u) << out;
}

TEST_F(ResolutionTest, DiagnosticsInAnotherFileSayWhyItWasRead) {
  Write("lib/base.cocoon", "profile base {\n  filesystem { writable /opt }\n  syscalls { allow read }\n}\n");
  Write("mid.cocoon", "import \"lib/base\"\nprofile mid extends base {\n}\n");
  std::string rendered;
  const std::string user = Write("user.cocoon", "include \"mid.cocoon\"\nprofile p extends mid {\n}\n");
  EXPECT_TRUE(Check(user, &rendered));
  const std::string base = (dir_ / "lib/base.cocoon").string(), mid = (dir_ / "mid.cocoon").string();
  EXPECT_EQ(rendered,
            "WARNING: " + base + ":2:25: writable bind mount of host path '/opt': the sandbox can change the host "
            "there\n"
            " |   filesystem { writable /opt }\n"
            " |                         ^~~~\n"
            " = help: prefer `work` (staged and verified) or `tmpfs` unless the host must see the writes\n"
            "NOTE: " + mid + ":2:21: in profile 'base' (" + base + "), which profile 'mid' extends here\n"
            " | profile mid extends base {\n"
            " |                     ^~~~\n"
            "NOTE: " + user + ":2:19: in profile 'mid' (" + mid + "), which profile 'p' extends here\n"
            " | profile p extends mid {\n"
            " |                   ^~~\n")
      << rendered;

  Write("lib/broken.cocoon", "profile broken {\n  netwrk off\n");
  Write("mid.cocoon", "import \"lib/broken\"\n");
  EXPECT_FALSE(Check(user, &rendered));
  const std::string broken = (dir_ / "lib/broken.cocoon").string();
  EXPECT_NE(rendered.find("ERROR: " + broken + ":2:13: unexpected end of file"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("NOTE: " + mid + ":1:1: " + broken + " is imported here\n"
                          " | import \"lib/broken\"\n"
                          " | ^~~~~~~~~~~~~~~~~~~\n"
                          "NOTE: " + user + ":1:1: " + mid + " is included here\n"
                          " | include \"mid.cocoon\"\n"
                          " | ^~~~~~~~~~~~~~~~~~~~\n"),
            std::string::npos)
      << rendered;
}

// One missing syscalls section at the top of a chain is one warning, with
// the count and the first names (a file of 65 profiles extending a base
// without one said it 65 times); a profile alone keeps its own warning.
TEST_F(ResolutionTest, OneMissingSyscallsSectionIsOneWarningForItsChain) {
  std::string text = "profile base {\n  description \"b\"\n}\n";
  for (int i = 0; i < 64; ++i) text += "profile p" + std::to_string(i) + " extends base {\n}\n";
  text += "profile alone {\n}\n";
  const std::string path = Write("many.cocoon", text);
  std::string rendered;
  EXPECT_TRUE(Check(path, &rendered));
  EXPECT_EQ(rendered,
            "WARNING: " + path + ":1:9: 'base' and the 64 profiles extending it have no syscalls section: every "
            "syscall will fail with ENOSYS in each ('base', 'p0', 'p1' and 62 more)\n"
            " | profile base {\n"
            " |         ^~~~\n"
            " = help: one syscalls section in 'base' would serve them all; or start from a shipped profile: import "
            "\"strict\" and write `extends strict`\n"
            "WARNING: " + path + ":132:9: profile 'alone' has no syscalls section: every syscall will fail with "
            "ENOSYS\n"
            " | profile alone {\n"
            " |         ^~~~~\n"
            " = help: start from a shipped profile: import \"strict\" and write `extends strict`\n");

  // The top of the chain in another file: said at the first profile checked.
  Write("lib/libbase.cocoon", "profile libbase {\n}\n");
  const std::string user = Write("user.cocoon", "import \"lib/libbase\"\nprofile a extends libbase {\n}\n"
                                                "profile b extends libbase {\n}\n");
  EXPECT_TRUE(Check(user, &rendered));
  EXPECT_EQ(rendered.rfind("WARNING: " + user + ":2:9: 2 profiles extending 'libbase' have no syscalls section, nor "
                           "has 'libbase': every syscall will fail with ENOSYS in each ('a' and 'b')\n",
                           0),
            0u)
      << rendered;
  EXPECT_EQ(rendered.find("WARNING", 1), std::string::npos) << rendered;
}

TEST_F(ResolutionTest, ChildOverridesScalarsAndMergesLists) {
  Write("lib/base.cocoon", kBase);
  std::string main = Write("main.cocoon",
                           "import \"base\"\n"
                           "profile main extends base {\n"
                           "  limits { processes 4 }\n"
                           "  filesystem { readonly /opt }\n"
                           "  syscalls { allow close }\n"
                           "  environment { set B \"3\" unset A }\n"
                           "}\n");
  std::string out;
  auto policy = Compile(main, "", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(out, "");
  EXPECT_EQ(policy->lineage, (std::vector<std::string>{"main", "base"}));
  EXPECT_EQ(policy->limits.memory_bytes.value, 64u << 20);  // inherited
  EXPECT_EQ(policy->limits.processes.value, 4u);            // overridden (stricter: no warning)
  ASSERT_EQ(policy->filesystem.mounts.size(), 3u);
  EXPECT_EQ(policy->filesystem.mounts[0].target, "/opt");
  EXPECT_EQ(policy->filesystem.mounts[1].target, "/tmp");
  EXPECT_EQ(policy->filesystem.mounts[2].target, "/usr");
  ASSERT_EQ(policy->environment.set.size(), 1u);
  EXPECT_EQ(policy->environment.set[0].name, "B");
  EXPECT_EQ(policy->environment.set[0].value, "3");
  // Provenance says where each setting came from.
  EXPECT_EQ(policy->provenance.at("limits.memory").profile, "base");
  EXPECT_EQ(policy->provenance.at("limits.memory").line, 2u);
  EXPECT_EQ(policy->provenance.at("limits.processes").profile, "main");
  EXPECT_EQ(policy->provenance.at("filesystem.mount:/opt").profile, "main");
  std::string explained = ExplainPolicy(*policy);
  EXPECT_NE(explained.find("inherited from base"), std::string::npos) << explained;
  EXPECT_EQ(policy->source_files.size(), 2u);
}

// The paths an import or include tried before the file it read are the
// policy's shadowing_paths: a file put there later would be read instead
// (the launch refuses a work dir holding one, the artifact cache misses).
// What resolved at its first candidate has none.
TEST_F(ResolutionTest, ThePathsTriedBeforeTheFileReadAreRecorded) {
  Write("lib/base.cocoon", kBase);
  Write("common.cocoon", "");
  std::string main = Write("main.cocoon",
                           "include \"common.cocoon\"\n"
                           "import \"base\"\n"
                           "profile main extends base {\n"
                           "}\n");
  std::string out;
  auto policy = Compile(main, "", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(policy) << out;
  const std::string root = fs::canonical(dir_).string();
  EXPECT_EQ(policy->shadowing_paths,
            (std::vector<std::string>{root + "/common.cocoon.cocoon", root + "/base.cocoon", root + "/base"}));
}

// Under `inherit`, unset must take the name out of the caller's environment
// too (not only out of the set/pass lists); a child's set brings it back.
TEST_F(ResolutionTest, UnsetRemovesANameFromAnInheritedEnvironment) {
  Write("lib/base.cocoon", kBase);
  std::string main = Write("main.cocoon",
                           "import \"base\"\n"
                           "profile open extends base {\n"
                           "  relaxes environment\n"
                           "  environment { inherit unset AWS_SECRET_ACCESS_KEY A TOKEN }\n"
                           "}\n"
                           "profile main extends open {\n"
                           "  environment { set TOKEN \"public\" }\n"
                           "}\n");
  std::string out;
  auto open = Compile(main, "open", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(open) << out;
  EXPECT_FALSE(open->environment.clear);
  EXPECT_EQ(open->environment.unset, (std::vector<std::string>{"A", "AWS_SECRET_ACCESS_KEY", "TOKEN"}));
  EXPECT_EQ(open->provenance.at("environment.unset:A").line, 4u);
  EXPECT_NE(ExplainPolicy(*open).find("unset AWS_SECRET_ACCESS_KEY"), std::string::npos);
  auto policy = Compile(main, "main", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->environment.unset, (std::vector<std::string>{"A", "AWS_SECRET_ACCESS_KEY"}));
  EXPECT_EQ(policy->provenance.count("environment.unset:TOKEN"), 0u);
}

// Variables merge per name, the child winning: its `pass` replaces the
// parent's `set` (and the reverse), in the IR and in what explain shows.
TEST_F(ResolutionTest, AChildsPassOrSetReplacesTheParentsForThatName) {
  std::string file = Write("env.cocoon",
                           "profile sets { syscalls { allow read } environment { set FOO \"parent\" } }\n"
                           "profile passes { syscalls { allow read } environment { pass FOO } }\n"
                           "profile child_passes extends sets {\n  environment { pass FOO }\n}\n"
                           "profile child_sets extends passes {\n  environment { set FOO \"child\" }\n}\n");
  std::string out;
  auto passes = Compile(file, "child_passes", &out);
  ASSERT_TRUE(passes) << out;
  EXPECT_TRUE(passes->environment.set.empty());
  EXPECT_EQ(passes->environment.pass, (std::vector<std::string>{"FOO"}));
  EXPECT_EQ(passes->provenance.count("environment.set:FOO"), 0u);
  EXPECT_EQ(passes->provenance.at("environment.pass:FOO").line, 4u);
  std::string explained = ExplainPolicy(*passes);
  EXPECT_NE(explained.find("pass FOO from the caller"), std::string::npos) << explained;
  EXPECT_EQ(explained.find("FOO=parent"), std::string::npos) << explained;

  auto sets = Compile(file, "child_sets", &out);
  ASSERT_TRUE(sets) << out;
  ASSERT_EQ(sets->environment.set.size(), 1u);
  EXPECT_EQ(sets->environment.set[0].value, "child");
  EXPECT_TRUE(sets->environment.pass.empty());
  EXPECT_EQ(sets->provenance.count("environment.pass:FOO"), 0u);
  explained = ExplainPolicy(*sets);
  EXPECT_NE(explained.find("set  FOO=child"), std::string::npos) << explained;
  EXPECT_EQ(explained.find("pass FOO"), std::string::npos) << explained;
}

// A child's `pass` of a name its parent `set` hands the sandbox the
// caller's value instead of the parent's: a weakening (a warning at the
// name, naming where the value was set), unless `relaxes environment` says
// it is meant. Passing a name the parent only passed, or set nothing for, is
// not one; nor is a child's own `set` over a parent's.
TEST_F(ResolutionTest, PassOverAnInheritedSetIsAWeakening) {
  std::string file = Write("env.cocoon",
                           "profile base {\n  syscalls { allow read }\n  environment { set FOO \"policy\" pass BAR }\n}\n"
                           "profile mid extends base { }\n"
                           "profile child extends mid {\n  environment { pass FOO }\n}\n"
                           "profile meant extends mid {\n  relaxes environment\n  environment { pass FOO }\n}\n"
                           "profile others extends base {\n  environment { pass BAR BAZ set FOO \"mine\" }\n}\n");
  std::string out;
  EXPECT_TRUE(Check(file, &out));
  EXPECT_EQ(out, "WARNING: " + file + ":7:22: profile 'child' weakens environment inherited from 'mid': `pass FOO` "
                 "gives the sandbox the caller's FOO in place of the value 'base' sets at line 3\n"
                 " |   environment { pass FOO }\n"
                 " |                      ^~~\n"
                 " = help: if this is deliberate, say so with `relaxes environment` in profile 'child'\n");
  // A value set in another file is named with its file.
  Write("lib/base.cocoon", "profile base {\n  syscalls { allow read }\n  environment { set FOO \"policy\" }\n}\n");
  file = Write("child.cocoon", "import \"base\"\nprofile child extends base {\n  environment { pass FOO }\n}\n");
  auto policy = Compile(file, "", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(policy) << out;
  EXPECT_NE(out.find("`pass FOO` gives the sandbox the caller's FOO in place of the value 'base' sets at " +
                     (dir_ / "lib" / "base.cocoon").string() + ":3\n"),
            std::string::npos)
      << out;
}

// Under a parent's `inherit`, its `unset NAME` is what keeps the caller's
// NAME (a token, a cloud key) out; a child's `pass NAME` brings it back: a
// weakening, said at the name with where it was unset, whatever the child
// says of clear/inherit. Not one: `relaxes environment`; a child's `set`;
// passing a name nothing unset; undoing the profile's own `unset`; and a
// pass under an inherited `clear`, where the unset kept nothing of the
// caller's out.
TEST_F(ResolutionTest, PassOverAnInheritedUnsetIsAWeakening) {
  std::string file = Write("env.cocoon",
                           "profile base {\n  syscalls { allow read }\n  environment { inherit unset SECRET }\n}\n"
                           "profile mid extends base { }\n"
                           "profile child extends mid {\n  environment { pass SECRET }\n}\n"
                           "profile meant extends mid {\n  relaxes environment\n  environment { pass SECRET }\n}\n"
                           "profile narrowed extends base {\n  environment { pass SECRET clear }\n}\n"
                           "profile others extends base {\n"
                           "  environment { set SECRET \"mine\" pass HOME unset TMP pass TMP }\n}\n"
                           "profile closed {\n  syscalls { allow read }\n  environment { clear unset SECRET }\n}\n"
                           "profile reopened extends closed {\n  environment { pass SECRET }\n}\n");
  std::string out;
  EXPECT_TRUE(Check(file, &out));
  EXPECT_EQ(out, "WARNING: " + file + ":7:22: profile 'child' weakens environment inherited from 'mid': `pass SECRET` "
                 "gives the sandbox the caller's SECRET, which 'base' unsets at line 3\n"
                 " |   environment { pass SECRET }\n"
                 " |                      ^~~~~~\n"
                 " = help: if this is deliberate, say so with `relaxes environment` in profile 'child'\n"
                 "WARNING: " + file + ":14:22: profile 'narrowed' weakens environment inherited from 'base': `pass "
                 "SECRET` gives the sandbox the caller's SECRET, which 'base' unsets at line 3\n"
                 " |   environment { pass SECRET clear }\n"
                 " |                      ^~~~~~\n"
                 " = help: if this is deliberate, say so with `relaxes environment` in profile 'narrowed'\n");
  // An unset in another file is named with its file.
  Write("lib/base.cocoon", "profile base {\n  syscalls { allow read }\n  environment { inherit unset SECRET }\n}\n");
  file = Write("child.cocoon", "import \"base\"\nprofile child extends base {\n  environment { pass SECRET }\n}\n");
  auto policy = Compile(file, "", &out, {(dir_ / "lib").string()});
  ASSERT_TRUE(policy) << out;
  EXPECT_NE(out.find("`pass SECRET` gives the sandbox the caller's SECRET, which 'base' unsets at " +
                     (dir_ / "lib" / "base.cocoon").string() + ":3\n"),
            std::string::npos)
      << out;
  // The merged result is unchanged: the caller's SECRET is passed.
  EXPECT_TRUE(policy->environment.unset.empty());
  EXPECT_EQ(policy->environment.pass, std::vector<std::string>{"SECRET"});
  // The child's own `unset` first, in the same block or another, does not
  // hide the ancestor's: the pass still undoes it (it went unreported).
  file = Write("again.cocoon",
               "profile base {\n  syscalls { allow read }\n  environment { inherit unset SECRET }\n}\n"
               "profile again extends base {\n  environment { unset SECRET pass SECRET }\n}\n"
               "profile split extends base {\n  environment { unset SECRET }\n  environment { pass SECRET }\n}\n");
  EXPECT_TRUE(Check(file, &out));
  EXPECT_NE(out.find(file + ":6:35: profile 'again' weakens environment inherited from 'base': `pass SECRET` gives the "
                            "sandbox the caller's SECRET, which 'base' unsets at line 3"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(file + ":10:22: profile 'split' weakens environment inherited from 'base': `pass SECRET` gives "
                            "the sandbox the caller's SECRET, which 'base' unsets at line 3"),
            std::string::npos)
      << out;
}

// In one profile, `set` and `pass` of a name contradict each other: an error
// at whichever comes second.
TEST_F(ResolutionTest, SetAndPassOfOneNameInOneProfileConflict) {
  std::string file = Write("env.cocoon",
                           "profile env {\n  syscalls { allow read }\n  environment {\n"
                           "    set FOO \"policy\"\n    pass BAR FOO\n  }\n}\n");
  std::string out;
  EXPECT_FALSE(Compile(file, "", &out));
  EXPECT_EQ(out, "ERROR: " + file + ":5:14: variable FOO is both set (line 4) and passed in profile 'env'\n"
                 " |     pass BAR FOO\n"
                 " |              ^~~\n"
                 " = help: keep one: `set` gives it the policy's value, `pass` the caller's\n");
  file = Write("env.cocoon",
               "profile env {\n  syscalls { allow read }\n  environment { pass FOO }\n"
               "  environment { set FOO \"policy\" }\n}\n");
  EXPECT_FALSE(Compile(file, "", &out));
  EXPECT_NE(out.find(file + ":4:17: variable FOO is both passed (line 3) and set in profile 'env'"),
            std::string::npos)
      << out;
}

// `cocoon check` shares a CheckSession across a file's profiles, which
// starts each profile from what applying its nearest kept ancestor gave
// (and replays what that reported). Each profile must get exactly what
// checking it alone gives, whatever the order: its policy (explain shows
// every setting and where it came from) and its diagnostics, a parent's
// weakening warning and error included. 20 bases with two children each
// also pass the session's capacity (16 ancestors kept).
TEST_F(ResolutionTest, ASessionGivesEachProfileWhatCheckingItAloneGives) {
  std::string text =
      "profile base {\n  syscalls { allow read write }\n  limits { memory 64MiB }\n"
      "  environment { set A \"1\" }\n}\n"
      "profile mid extends base {\n  limits { memory 128MiB }\n  filesystem { readonly /opt }\n}\n"
      "profile broken extends base {\n  limits { memroy 1MiB }\n}\n"
      "profile c1 extends mid {\n  environment { set B \"2\" }\n}\n"
      "profile c2 extends mid {\n  syscalls { allow close }\n}\n"
      "profile c3 extends broken { }\n"
      "profile c4 extends base {\n  relaxes limits\n  limits { memory 1GiB }\n}\n";
  for (int i = 0; i < 20; ++i) {
    const std::string n = std::to_string(i);
    text += "profile b" + n + " extends mid {\n  limits { processes " + std::to_string(i + 2) + " }\n}\n";
  }
  for (int i = 0; i < 40; ++i) {
    text += "profile k" + std::to_string(i) + " extends b" + std::to_string(i % 20) + " {\n  cwd /k" +
            std::to_string(i) + "\n}\n";
  }
  const std::string file = Write("many.cocoon", text);
  Diagnostics load_diagnostics;
  const Program program = LoadProgramFromFile(file, LoadOptions{}, load_diagnostics);
  ASSERT_FALSE(load_diagnostics.has_errors()) << load_diagnostics.Render();
  std::vector<const ProfileRef*> refs;
  for (const ast::Profile& profile : program.root()->ast.profiles) refs.push_back(&program.profiles.at(profile.name.text));
  ASSERT_EQ(refs.size(), 67u);
  for (int order = 0; order < 2; ++order) {
    if (order == 1) std::reverse(refs.begin(), refs.end());
    CheckSession session(program);
    for (const ProfileRef* ref : refs) {
      Diagnostics alone_diagnostics, shared_diagnostics;
      const std::optional<ir::Policy> alone = CheckProfile(program, *ref, alone_diagnostics);
      const std::optional<ir::Policy> shared = CheckProfile(program, *ref, session, shared_diagnostics);
      const std::string& name = ref->profile->name.text;
      EXPECT_EQ(shared_diagnostics.Render(), alone_diagnostics.Render()) << name;
      ASSERT_EQ(shared.has_value(), alone.has_value()) << name;
      if (alone) {
        EXPECT_EQ(ExplainPolicy(*shared), ExplainPolicy(*alone)) << name;
      }
    }
  }
  // The parent's problems reach its children: a warning, and an error.
  Diagnostics d;
  CheckSession session(program);
  EXPECT_TRUE(CheckProfile(program, program.profiles.at("mid"), session, d));
  EXPECT_TRUE(CheckProfile(program, program.profiles.at("c1"), session, d));
  EXPECT_EQ(d.warning_count(), 2u) << d.Render();
  EXPECT_FALSE(CheckProfile(program, program.profiles.at("c3"), session, d));
  EXPECT_NE(d.Render().find("unknown limit 'memroy'"), std::string::npos) << d.Render();
}

TEST_F(ResolutionTest, IncludeIsRelativeToTheIncludingFile) {
  Write("lib/base.cocoon", kBase);
  Write("lib/mid.cocoon", "include \"base.cocoon\"\nprofile mid extends base { }\n");
  std::string main = Write("main.cocoon", "include \"lib/mid.cocoon\"\nprofile main extends mid { }\n");
  std::string out;
  auto policy = Compile(main, "", &out);
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->lineage, (std::vector<std::string>{"main", "mid", "base"}));
}

TEST_F(ResolutionTest, DiamondIncludesLoadOnce) {
  Write("base.cocoon", kBase);
  Write("a.cocoon", "include \"base.cocoon\"\nprofile a extends base { }\n");
  Write("b.cocoon", "include \"base.cocoon\"\nprofile b extends base { }\n");
  std::string main = Write("main.cocoon", "include \"a.cocoon\"\ninclude \"b.cocoon\"\nprofile main extends a { }\n");
  std::string out;
  auto policy = Compile(main, "", &out);
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->source_files.size(), 4u);
}

TEST_F(ResolutionTest, IncludeCycleIsReported) {
  Write("a.cocoon", "include \"b.cocoon\"\nprofile a { }\n");
  Write("b.cocoon", "include \"a.cocoon\"\nprofile b { }\n");
  std::string out;
  auto policy = Compile((dir_ / "a.cocoon").string(), "a", &out);
  EXPECT_FALSE(policy);
  EXPECT_NE(out.find("include cycle: a.cocoon -> b.cocoon -> a.cocoon"), std::string::npos) << out;
}

TEST_F(ResolutionTest, IncludeDepthIsBounded) {
  for (int i = 0; i < 20; ++i) {
    Write("f" + std::to_string(i) + ".cocoon", "include \"f" + std::to_string(i + 1) + ".cocoon\"\n");
  }
  Write("f20.cocoon", kBase);
  std::string out;
  EXPECT_FALSE(Compile((dir_ / "f0.cocoon").string(), "base", &out));
  EXPECT_NE(out.find("includes nest deeper than the limit of 16"), std::string::npos) << out;
}

TEST_F(ResolutionTest, MissingImportSaysWhereItLooked) {
  std::string main = Write("main.cocoon", "import \"nowhere\"\nprofile main { }\n");
  std::string out;
  EXPECT_FALSE(Compile(main, "", &out));
  EXPECT_NE(out.find("cannot find \"nowhere\" in " + dir_.string()), std::string::npos) << out;
}

// include and import read only *.cocoon files, symlinks resolved: a policy
// under review must not get a secret's first line printed in a diagnostic.
TEST_F(ResolutionTest, IncludeAndImportReadOnlyPolicyFiles) {
  Write("secret.env", "AWS_SECRET_ACCESS_KEY=canary-7f3a\n");
  std::filesystem::create_symlink(dir_ / "secret.env", dir_ / "leak.cocoon");
  for (const std::string& directive :
       {std::string("include \"secret.env\""), std::string("import \"secret.env\""),
        std::string("include \"leak.cocoon\""), std::string("include \"/proc/self/environ\""),
        "include \"" + (dir_ / "secret.env").string() + "\""}) {
    std::string main = Write("main.cocoon", directive + "\nprofile main { }\n");
    std::string out;
    EXPECT_FALSE(Compile(main, "", &out)) << directive;
    EXPECT_NE(out.find("which is not a policy file"), std::string::npos) << directive << "\n" << out;
    EXPECT_EQ(out.find("canary-7f3a"), std::string::npos) << directive << "\n" << out;
    EXPECT_EQ(out.find("PATH="), std::string::npos) << directive << "\n" << out;
  }
  // NAME.cocoon is preferred over a same-named file without the extension.
  Write("common", "not a policy\n");
  Write("common.cocoon", kBase);
  std::string main = Write("main.cocoon", "import \"common\"\nprofile main extends base { }\n");
  std::string out;
  EXPECT_TRUE(Compile(main, "main", &out)) << out;
}

TEST_F(ResolutionTest, ShippedPoliciesAreFoundFromAnywhere) {
  std::string main = Write("main.cocoon", "import \"runtimes/python\"\nprofile mine extends python { }\n");
  std::string out;
  auto policy = Compile(main, "", &out);
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->lineage, (std::vector<std::string>{"mine", "python", "strict"}));
  ASSERT_TRUE(policy->runtime);
  EXPECT_EQ(policy->runtime->flags, (std::vector<std::string>{"-I", "-S", "-B"}));
}

TEST_F(ResolutionTest, ProfileSelection) {
  std::string two = Write("two.cocoon", "profile a { }\nprofile two { }\n");
  std::string out;
  auto policy = Compile(two, "", &out);  // named like the file
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->name, "two");
  policy = Compile(two, "a", &out);
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->name, "a");
  EXPECT_FALSE(Compile(two, "c", &out));
  EXPECT_NE(out.find("no profile named 'c'"), std::string::npos) << out;
}

TEST_F(ResolutionTest, RelaxesSilencesTheNamedWeakening) {
  Write("base.cocoon", kBase);
  std::string quiet = Write("quiet.cocoon",
                            "include \"base.cocoon\"\nprofile quiet extends base {\n  relaxes limits\n"
                            "  limits { memory 1GiB }\n}\n");
  std::string out;
  ASSERT_TRUE(Compile(quiet, "", &out));
  EXPECT_EQ(out, "");
  std::string loud = Write("loud.cocoon",
                           "include \"base.cocoon\"\nprofile loud extends base {\n  relaxes limits\n"
                           "  syscalls { allow ptrace }\n}\n");
  ASSERT_TRUE(Compile(loud, "", &out));
  EXPECT_NE(out.find("weakens syscalls inherited from 'base': allow 'ptrace', which it denied"), std::string::npos)
      << out;
}

TEST_F(ResolutionTest, IncludeOfADirectoryOrADeviceSaysItIsNotARegularFile) {
  fs::create_directories(dir_ / "sub");
  for (const auto& [directive, path] :
       {std::pair<std::string, std::string>{"include \"sub\"", (dir_ / "sub").string()},
        std::pair<std::string, std::string>{"include \"/dev/zero\"", "/dev/zero"}}) {
    std::string main = Write("main.cocoon", directive + "\nprofile main { }\n");
    std::string out;
    EXPECT_FALSE(Compile(main, "", &out)) << directive;
    EXPECT_NE(out.find("is " + path + ", which is not a regular file"), std::string::npos) << out;
    EXPECT_EQ(out.find("cannot find"), std::string::npos) << out;
  }
}

// A name defined twice is one error; it must not hide the others in the
// file: each definition's body is checked, once.
TEST_F(ResolutionTest, CheckReportsOtherErrorsBesideADuplicateProfile) {
  std::string file = Write("dup.cocoon",
                           "profile a { network off limits { memroy 1MiB } }\n"
                           "profile a { network off limits { memroy 1MiB } }\n"
                           "profile b { limits { prcesses 1 } }\n");
  std::string out;
  EXPECT_FALSE(Check(file, &out));
  EXPECT_NE(out.find("dup.cocoon:2:9: profile 'a' is already defined at"), std::string::npos) << out;
  EXPECT_NE(out.find("dup.cocoon:1:34: unknown limit 'memroy'"), std::string::npos) << out;
  EXPECT_NE(out.find("dup.cocoon:2:34: unknown limit 'memroy'"), std::string::npos) << out;
  EXPECT_NE(out.find("dup.cocoon:3:22: unknown limit 'prcesses'"), std::string::npos) << out;
  EXPECT_EQ(last_errors_, 4u) << out;
}

// The errors past --max-errors are counted, not dropped unseen.
TEST_F(ResolutionTest, CheckCountsTheErrorsPastTheCap) {
  std::string text = "import \"strict\"\nprofile p extends strict {\n  limits {\n";
  for (int i = 0; i < 60; ++i) text += "    nolimit" + std::to_string(i) + " 1\n";
  text += "  }\n}\n";
  std::string file = Write("many.cocoon", text);
  std::string out;
  EXPECT_FALSE(Check(file, &out));
  EXPECT_EQ(last_errors_, 50u);
  EXPECT_EQ(last_suppressed_, 10u);
  EXPECT_NE(out.find("NOTE: 10 more error(s) not shown (limit 50)"), std::string::npos) << out;
  EXPECT_FALSE(Check(file, &out, DiagnosticsOptions{.max_errors = 5}));
  EXPECT_EQ(last_errors_, 5u);
  EXPECT_EQ(last_suppressed_, 55u);
}

// profile a0 { ... }, then a1 extends a0, ..., up to a(count - 1).
std::string ExtendsChain(int count) {
  std::string text = "profile a0 { syscalls { allow read } }\n";
  for (int i = 1; i < count; ++i) {
    text += "profile a" + std::to_string(i) + " extends a" + std::to_string(i - 1) + " { }\n";
  }
  return text;
}

// kMaxExtendsDepth ancestors are fine: a65 has 64 (a64 ... a0).
TEST_F(ResolutionTest, AnExtendsChainAtTheDepthLimitChecks) {
  ASSERT_EQ(kMaxExtendsDepth, 64u);
  std::string file = Write("chain.cocoon", ExtendsChain(65));
  std::string out;
  EXPECT_TRUE(Check(file, &out)) << out;
  EXPECT_EQ(out, "");
  auto policy = Compile(file, "a64", &out);
  ASSERT_TRUE(policy) << out;
  EXPECT_EQ(policy->lineage.size(), 65u);
}

// Past the limit, the profile that first goes over it is reported, once,
// at its `extends`: not once for each of the thousands of profiles below it.
TEST_F(ResolutionTest, AnExtendsChainPastTheDepthLimitIsReportedOnce) {
  std::string file = Write("chain.cocoon", ExtendsChain(10000));
  const std::string expected = "ERROR: " + file +
                               ":66:21: extends chain too deep: profile 'a65' has more than 64 ancestors (the limit)\n"
                               " | profile a65 extends a64 { }\n"
                               " |                     ^~~\n"
                               " = help: flatten the hierarchy: merge profiles of the chain, or extend one nearer "
                               "the root (docs/language.md, Profiles and `extends`)\n";
  std::string out;
  EXPECT_FALSE(Check(file, &out));
  EXPECT_EQ(out, expected);
  EXPECT_EQ(last_errors_, 1u);
  // Compiling a profile below it says the same.
  EXPECT_FALSE(Compile(file, "a9999", &out));
  EXPECT_EQ(out, expected);
  EXPECT_TRUE(Compile(file, "a64", &out)) << out;
}

// A cycle is one mistake: reported once, from the member defined first,
// whichever profile of the cycle (or below it) is checked.
TEST_F(ResolutionTest, AnExtendsCycleIsReportedOnce) {
  std::string file = Write("cycle.cocoon",
                           "profile d extends a { }\n"
                           "profile a extends b { }\n"
                           "profile b extends c { }\n"
                           "profile c extends a { }\n");
  std::string out;
  EXPECT_FALSE(Check(file, &out));
  EXPECT_EQ(out, "ERROR: " + file + ":4:19: extends cycle: a -> b -> c -> a\n"
                 " | profile c extends a { }\n"
                 " |                   ^\n");
  for (const std::string profile : {"b", "d"}) {
    EXPECT_FALSE(Compile(file, profile, &out));
    EXPECT_NE(out.find(":4:19: extends cycle: a -> b -> c -> a"), std::string::npos) << out;
  }
}

// The digest over a program's files (hashed once each, at load) is the
// SHA-256 of their hex digests in load order, the same for every profile.
TEST_F(ResolutionTest, EveryProfileCarriesTheDigestOfItsFiles) {
  Write("base.cocoon", kBase);
  const std::string main_text = "include \"base.cocoon\"\nprofile a extends base { }\nprofile b { }\n";
  std::string main = Write("main.cocoon", main_text);
  const std::string expected = Sha256Hex(Sha256Hex(main_text) + Sha256Hex(kBase));
  std::string out;
  for (const std::string profile : {"a", "b"}) {
    auto policy = Compile(main, profile, &out);
    ASSERT_TRUE(policy) << out;
    EXPECT_EQ(policy->source_sha256, expected) << profile;
  }
}

// What explain and compile refuse, check refuses too.
TEST_F(ResolutionTest, CheckRefusesAFileWithNoProfile) {
  for (const std::string& text : {std::string(), std::string("# nothing\n"), std::string("import \"strict\"\n")}) {
    std::string file = Write("empty.cocoon", text);
    std::string out;
    EXPECT_FALSE(Check(file, &out)) << text;
    EXPECT_NE(out.find("ERROR: " + file + ":1:1: no profile in " + file), std::string::npos) << out;
    std::string compiled;
    EXPECT_FALSE(Compile(file, "", &compiled));
    EXPECT_NE(compiled.find("no profile in " + file), std::string::npos) << compiled;
  }
}

// `wall_time 5 sec` was only "unexpected '}'" at the brace. The unit is
// reported at the value, and check still reports the rest of the file
// (the `memroy` on the same line); compile stops at the slip.
TEST_F(ResolutionTest, CheckReportsAUnitWrittenApartAndTheFilesOtherMistakes) {
  const std::string path = Write("p.cocoon",
                                 "profile p {\n  limits { memroy 128MiB  wall_time 5 sec }\n"
                                 "  syscalls { default errno ENOSYS allow @system-service }\n}\n");
  std::string out;
  EXPECT_FALSE(Check(path, &out));
  EXPECT_EQ(last_errors_, 2u) << out;
  EXPECT_NE(out.find(":2:37: unknown unit 'sec', written apart from its number\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" = help: write 5s\n"), std::string::npos) << out;
  EXPECT_NE(out.find(":2:12: unknown limit 'memroy'\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("unexpected"), std::string::npos) << out;
  EXPECT_EQ(out.find("missing unit"), std::string::npos) << out;  // the number is not reported twice
  EXPECT_FALSE(Compile(path, "", &out));
  EXPECT_NE(out.find("unknown unit 'sec'"), std::string::npos) << out;
}

}  // namespace
}  // namespace cocoon::frontend
