// Integration tests for the agent interfaces, through the real `cocoon`
// binary: run (every installed runtime), pipeline, --stream (binary data and
// a 1 GiB flood with bounded memory), doctor and info. They start real
// sandboxes, so they carry LABELS integration.
#include <algorithm>
#include <set>
#include <map>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Ran {
  int status = -1;
  std::string out;
  std::string err;
  long max_rss_kib = 0;
};

// fork/exec with stdout and stderr captured (to files, so a flood cannot
// deadlock the test), and the child's peak RSS from wait4.
// `binary` is the launcher to run (tests/cli copies it to check the split
// into `cocoon` and cocoon-full); `stdin_text`, when given, is its stdin.
Ran Cocoon(const std::vector<std::string>& args, const std::string& cwd = "",
           const std::vector<std::pair<std::string, std::string>>& env = {},
           const std::string& binary = COCOON_BINARY, const std::optional<std::string>& stdin_text = std::nullopt) {
  std::string dir = fs::temp_directory_path() / ("cocoon-cli-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string out_path = dir + "/out", err_path = dir + "/err", in_path = dir + "/in";
  if (stdin_text) std::ofstream(in_path) << *stdin_text;
  pid_t pid = fork();
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(125);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    FILE* out = freopen(out_path.c_str(), "w", stdout);
    FILE* err = freopen(err_path.c_str(), "w", stderr);
    if (!out || !err || (stdin_text && !freopen(in_path.c_str(), "r", stdin))) _exit(125);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  Ran ran;
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ran.max_rss_kib = usage.ru_maxrss;
  std::ifstream o(out_path), e(err_path);
  std::stringstream so, se;
  so << o.rdbuf();
  se << e.rdbuf();
  ran.out = so.str();
  ran.err = se.str();
  std::error_code ignored;
  fs::remove_all(dir, ignored);  // one per test process: do not leave hundreds in /tmp
  return ran;
}

// Waits for `pid` and returns its exit status (128+N for a signal) and what
// it wrote to `err_path`, which is removed.
std::pair<int, std::string> WaitAndReadStderr(pid_t pid, const std::string& err_path) {
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  unlink(err_path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err.str()};
}

json Json(const Ran& ran) {
  json j = json::parse(ran.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << ran.out << ran.err;
  return j;
}

TEST(CocoonRun, PythonInlineJson) {
  Ran ran = Cocoon({"run", "--json", "-r", "python", "-c", "print(6*7)"});
  ASSERT_EQ(ran.status, 0) << ran.out << ran.err;
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], "42\n");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_TRUE(j["overrides"].is_array());
}

TEST(CocoonRun, PassThroughAndExitStatus) {
  Ran ran = Cocoon({"run", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(ran.status, 7) << ran.err;
  EXPECT_EQ(ran.out, "out\n");
  EXPECT_NE(ran.err.find("err\n"), std::string::npos);
}

// Everything after `--` is the command's, also right after a repeatable
// option: CLI11 once let `--env A=1 --` end only --env's values, and the
// command's own `--allow-network --mem 4096` then opened the sandbox.
TEST(CocoonRun, WordsAfterDoubleDashAreTheCommandsEvenAfterARepeatableOption) {
  Ran ran = Cocoon({"run", "--json", "--env", "A=1", "--ro", "/usr", "--", "/bin/echo", "--allow-network", "--mem",
                    "4096", "-c", "x", "--env", "B=2"});
  json j = Json(ran);
  EXPECT_EQ(j["exit_code"], 0) << ran.err;
  EXPECT_EQ(j["stdout"], "--allow-network --mem 4096 -c x --env B=2\n");
  for (const auto& o : j["overrides"]) {
    EXPECT_EQ(o.get<std::string>().find("network"), std::string::npos) << o;
    EXPECT_EQ(o.get<std::string>().find("memory"), std::string::npos) << o;
  }
  EXPECT_NE(std::find(j["namespaces"].begin(), j["namespaces"].end(), "net"), j["namespaces"].end());

  Ran enforce = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--copy", "/etc/hostname", "--", "/bin/echo",
                        "--work", "/", "--copy", "/etc/shadow"});
  // --copy needs a work dir: a usage error, never reading the command's
  // words as cocoon's --work / --copy.
  EXPECT_EQ(enforce.status, 2);
  EXPECT_EQ(enforce.out.find("--work"), std::string::npos) << enforce.out;
  EXPECT_NE(enforce.err.find("work"), std::string::npos) << enforce.err;
}

// strict's 64 MiB disk quota holds on the host too: 20 sparse 8 MiB files
// (no blocks on the sandbox's tmpfs) and 100 names of one 1 MiB file would be
// 160 MiB and 101 MiB once committed. The run is refused at the commit and
// the host work dir keeps exactly what it had. The command did run, so the
// Outcome still comes, saying the work dir was not verified (exit 125).
// The sandbox's own network namespace is the barrier of `network off`, but a
// socket keeps the namespace it was made in: given a host TCP socket as its
// stdin, the sandbox could connect it to the host's loopback services (this
// reached a host listener before inherited_stdin.h). cocoon refuses such a
// stdin; a connected AF_UNIX stream (Node's child stdio) still passes.
TEST(CocoonEnforce, StdinIsAPipeOrRefusedNeverAHostFileDirectoryOrSocket) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  std::string code = "import socket; s=socket.socket(fileno=0); s.connect(('127.0.0.1'," +
                     std::to_string(ntohs(address.sin_port)) + ")); s.send(b'escaped'); print('sent')";
  auto run_with_stdin = [](int stdin_fd, const std::vector<std::string>& command) {
    std::string err_path = fs::temp_directory_path() / ("cocoon-stdin-test-" + std::to_string(getpid()));
    pid_t pid = fork();
    if (pid == 0) {
      if (dup2(stdin_fd, 0) != 0 || !freopen(err_path.c_str(), "w", stderr)) _exit(125);
      std::vector<const char*> argv = {COCOON_BINARY, "enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--"};
      for (const auto& word : command) argv.push_back(word.c_str());
      argv.push_back(nullptr);
      execv(COCOON_BINARY, const_cast<char* const*>(argv.data()));
      _exit(127);
    }
    return WaitAndReadStderr(pid, err_path);
  };
  int host_socket = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(host_socket, 0);
  auto [status, err] = run_with_stdin(host_socket, {"/usr/bin/python3", "-c", code});
  close(host_socket);
  EXPECT_EQ(status, 1) << err;
  EXPECT_NE(err.find("stdin is a socket (AF_INET stream, unconnected) of the host's network namespace"),
            std::string::npos) << err;
  int accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_LT(accepted, 0) << "ESCAPE: the sandbox reached a host loopback listener through its stdin";
  if (accepted >= 0) close(accepted);
  close(listener);

  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_EQ(write(pair[1], "from a socketpair\n", 18), 18);
  shutdown(pair[1], SHUT_WR);
  auto [cat_status, cat_err] = run_with_stdin(pair[0], {"/bin/sh", "-c", "cat > /tmp/in; cat /tmp/in >&2"});
  close(pair[0]);
  close(pair[1]);
  EXPECT_EQ(cat_status, 0) << cat_err;
  EXPECT_NE(cat_err.find("from a socketpair"), std::string::npos) << cat_err;

  // A regular file is not handed over (through /proc/self/fd/0 the sandbox
  // could chmod or touch the host's file): its bytes come through a pipe.
  std::string file = fs::temp_directory_path() / ("cocoon-stdin-file-" + std::to_string(getpid()));
  std::ofstream(file) << "from a file\n";
  int file_fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file_fd, 0);
  auto [file_status, file_err] =
      run_with_stdin(file_fd, {"/bin/sh", "-c", "readlink /proc/self/fd/0 >&2; cat >&2"});
  close(file_fd);
  unlink(file.c_str());
  EXPECT_EQ(file_status, 0) << file_err;
  EXPECT_NE(file_err.find("pipe:["), std::string::npos) << file_err;
  EXPECT_NE(file_err.find("from a file"), std::string::npos) << file_err;

  // A directory would be a way into the host's tree: refused.
  int directory = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(directory, 0);
  auto [dir_status, dir_err] = run_with_stdin(directory, {"/bin/true"});
  close(directory);
  EXPECT_EQ(dir_status, 1) << dir_err;
  EXPECT_NE(dir_err.find("stdin is a directory"), std::string::npos) << dir_err;
}

// Work dir entries are named by the sandbox; cocoon's notes about them must
// not carry its escape sequences or newlines to the caller's terminal, nor
// one line per entry without end.
TEST(CocoonEnforce, NotesAboutWorkDirEntriesAreEscapedAndCapped) {
  std::string dir = fs::temp_directory_path() / ("cocoon-notes-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  chmod(dir.c_str(), 0777);
  std::string script =
      "ln -s /etc/passwd \"/work/a$(printf '\\033]0;PWNED\\007\\033[2J')\nFAKE: all clean\"; "
      "for i in $(seq 1 30); do ln -s /etc/passwd /work/link$i; done";
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir, "--", "/bin/sh", "-c", script});
  fs::remove_all(dir);
  EXPECT_EQ(ran.err.find('\033'), std::string::npos) << ran.err;
  EXPECT_EQ(ran.err.find("\nFAKE"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("\\x1b]0;PWNED\\x07\\x1b[2J\\x0aFAKE: all clean"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("11 more work dir entries like these"), std::string::npos) << ran.err;
}

// `cocoon enforce DIR` loads a `cocoon compile` output through the driver's
// loader (docs/targets.md): no artifact through a symlink, even with the
// same bytes (linux.plan.json -> ../plan.copy used to be accepted), and a
// manifest read by its schema (any nested {path, sha256} object used to
// count, the last one winning).
TEST(CocoonEnforce, ACompiledDirIsReadWithoutSymlinksAndByItsManifestsSchema) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-enforce-dir-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  Ran compiled = Cocoon({"compile", COCOON_POLICIES_DIR "/strict.cocoon", "--target", "linux", "-o", out.string()});
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  Ran ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 0) << ran.err;

  fs::copy_file(out / "linux.plan.json", dir / "plan.copy");
  fs::remove(out / "linux.plan.json");
  fs::create_symlink("../plan.copy", out / "linux.plan.json");
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("artifact linux.plan.json is a symbolic link"), std::string::npos) << ran.err;
  fs::remove(out / "linux.plan.json");
  fs::copy_file(dir / "plan.copy", out / "linux.plan.json");

  const fs::path manifest_path = out / "manifest.json";
  std::ifstream in(manifest_path);
  const std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  json manifest = json::parse(original);
  manifest["extra"] = {{"path", "linux.plan.json"}, {"sha256", manifest["artifacts"][0]["sha256"]}};
  std::ofstream(manifest_path, std::ios::trunc) << manifest.dump(2);
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("unknown member 'extra'"), std::string::npos) << ran.err;

  std::ofstream(manifest_path, std::ios::trunc) << original;
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  fs::remove_all(dir);
}

// A compiled dir holds one profile: `--profile` naming another (or none the
// policy has) is refused, as it is for the policy file, never ignored (it
// used to run the dir's profile, build's 1 GiB and 256 processes for
// --profile strict).
TEST(CocoonEnforce, AProfileOtherThanTheCompiledDirsIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-enforce-dir-profile-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  Ran compiled = Cocoon({"compile", COCOON_POLICIES_DIR "/build.cocoon", "--target", "linux", "-o", out.string()});
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  for (const std::string profile : {"strict", "no-such-profile"}) {
    Ran ran = Cocoon({"enforce", out.string(), "--profile", profile, "--json", "--", "/bin/true"});
    EXPECT_EQ(ran.status, 1) << profile << ": " << ran.out << ran.err;
    EXPECT_NE(ran.err.find("--profile " + profile + ": " + out.string() + " was compiled from profile 'build'"),
              std::string::npos)
        << ran.err;
    EXPECT_EQ(Json(ran).value("refused", false), true) << ran.out;
  }
  Ran ran = Cocoon({"enforce", out.string(), "--profile", "build", "--", "/bin/true"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  fs::remove_all(dir);
}

// run, pipeline and mcp extend their --policy: a compiled dir (no source)
// is refused saying to use `cocoon enforce DIR` (it used to fail with "is
// not a regular file ... the policy does not check").
TEST(CocoonRun, ACompiledDirAsPolicyIsRefusedPointingAtEnforce) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-run-dir-policy-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out";
  Ran compiled = Cocoon({"compile", COCOON_POLICIES_DIR "/strict.cocoon", "--target", "linux", "-o", out.string()});
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  const std::string said = "use `cocoon enforce " + out.string() + " -- CMD`";
  Ran ran = Cocoon({"run", "--policy", out.string(), "--", "/bin/echo", "ok"});
  EXPECT_NE(ran.status, 0) << ran.out;
  EXPECT_EQ(ran.out.find("ok"), std::string::npos) << ran.out;
  EXPECT_NE(ran.err.find(said), std::string::npos) << ran.err;
  ran = Cocoon({"pipeline", "--policy", out.string(), "--step", "python:print(1)"});
  EXPECT_NE(ran.status, 0) << ran.out;
  EXPECT_NE((ran.out + ran.err).find(said), std::string::npos) << ran.out << ran.err;
  fs::remove_all(dir);
}

// RLIMIT_FSIZE is the compiled plan's (docs/language.md): without
// file_size, the disk limit caps each file, in a writable mount too; with a
// direct work dir the disk limit caps file_size. The enforcer keeps the
// stricter of its own value and the plan's, and the Outcome row says where
// it came from. A 5 MB file used to land in the host's writable dir under
// `disk 1MiB` (the enforcer applied its 16 GiB default, or file_size).
TEST(CocoonEnforce, TheDiskLimitCapsEachFileInAWritableMount) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-fsize-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "w");
  fs::permissions(dir / "w", fs::perms::all);  // the sandbox's user writes there
  const std::string head = "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    writable " +
                           (dir / "w").string() + " as /mnt/w\n";
  const std::vector<std::pair<std::string, std::string>> policies = {
      {"staged, no file_size", head + "  }\n  limits {\n    file_size unlimited\n    disk 1MiB\n  }\n}\n"},
      {"direct, file_size above disk",
       head + "    work /work direct\n  }\n  limits {\n    file_size 10MiB\n    disk 1MiB\n  }\n}\n"},
  };
  for (const auto& [what, text] : policies) {
    SCOPED_TRACE(what);
    const fs::path policy = dir / "p.cocoon";
    std::ofstream(policy, std::ios::trunc) << text;
    fs::remove(dir / "w" / "big");
    Ran ran = Cocoon({"enforce", policy.string(), "--json", "--", "/bin/sh", "-c",
                      "head -c 5000000 /dev/zero > /mnt/w/big; echo done"});
    json j = Json(ran);
    EXPECT_EQ(j.value("stdout", ""), "done\n") << ran.out << ran.err;
    ASSERT_TRUE(fs::exists(dir / "w" / "big")) << ran.out << ran.err;
    EXPECT_LE(fs::file_size(dir / "w" / "big"), 1u << 20);
    bool row = false;
    for (const auto& limit : j["limits"]) {
      if (limit["limit"] != "file_size") continue;
      row = true;
      const std::string note = limit.value("note", "");
      EXPECT_TRUE(note.find("the disk limit") != std::string::npos ||
                  note.find("the launch plan's stricter RLIMIT_FSIZE 1048576") != std::string::npos)
          << limit.dump();
    }
    EXPECT_TRUE(row) << j.dump(2);
  }
  fs::remove_all(dir);
}

// A compiled dir is trusted as the artifact cache is: a dir or artifact
// another user can write, or owned by another user, is refused (as root, a
// dir uid 1001 compiled from `network on` used to run with no warning, and a
// 0777 dir with 0666 files was accepted), and so is a manifest whose profile
// is not the plan's.
TEST(CocoonEnforce, ACompiledDirAnotherUserCouldWriteIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-enforce-dir-trust-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  const fs::path out = dir / "out";
  Ran compiled = Cocoon({"compile", COCOON_POLICIES_DIR "/strict.cocoon", "--target", "linux", "-o", out.string()});
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  const std::string advice = "refusing to run it: compile into a directory of your own";
  ASSERT_EQ(Cocoon({"enforce", out.string(), "--", "/bin/true"}).status, 0);
  const fs::perms dir_mode = fs::status(out).permissions();
  fs::permissions(out, fs::perms::all);
  Ran ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find(advice), std::string::npos) << ran.err;
  fs::permissions(out, dir_mode);
  const fs::perms file_mode = fs::status(out / "linux.plan.json").permissions();
  fs::permissions(out / "linux.plan.json", fs::perms::others_write, fs::perm_options::add);
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("linux.plan.json is writable by group or others"), std::string::npos) << ran.err;
  fs::permissions(out / "linux.plan.json", file_mode);

  const fs::path manifest_path = out / "manifest.json";
  std::ifstream in(manifest_path);
  const std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  json manifest = json::parse(original);
  manifest["profile"] = "build";
  std::ofstream(manifest_path, std::ios::trunc) << manifest.dump(2);
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("manifest.json says profile 'build' but linux.plan.json is profile 'strict'"),
            std::string::npos)
      << ran.err;
  std::ofstream(manifest_path, std::ios::trunc) << original;
  EXPECT_EQ(Cocoon({"enforce", out.string(), "--", "/bin/true"}).status, 0);

  if (geteuid() != 0) {
    fs::remove_all(dir);
    GTEST_SKIP() << "SKIPPED IN PART, NOT PASSED (security check): not root, so a compiled dir owned by another uid was "
                    "not checked (the rest of this test ran)";
  }
  for (const auto& entry : fs::recursive_directory_iterator(out)) ASSERT_EQ(lchown(entry.path().c_str(), 1001, 1001), 0);
  ASSERT_EQ(lchown(out.c_str(), 1001, 1001), 0);
  ran = Cocoon({"enforce", out.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find(advice), std::string::npos) << ran.err;
  fs::remove_all(dir);
}

// Empty files use no bytes of the disk quota, but each is an inode of host
// kernel memory, a line of verification and an entry of the commit: the
// staged work dir holds at most one entry per KiB of its quota (4096 here).
TEST(CocoonRun, TheWorkDirHoldsABoundedNumberOfEntries) {
  std::string dir = fs::temp_directory_path() / ("cocoon-inodes-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  chmod(dir.c_str(), 0777);
  Ran ran = Cocoon({"run", "--disk", "4", "--work", dir, "--", "/usr/bin/python3", "-c",
                    "import errno\nn=0\ntry:\n while n < 100000:\n  open('/work/f%d' % n, 'w').close(); n += 1\n"
                    "except OSError as e:\n print('made', n, errno.errorcode[e.errno])"});
  size_t committed = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++committed;
  fs::remove_all(dir);
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.out.find("ENOSPC"), std::string::npos) << ran.out << ran.err;
  EXPECT_LE(committed, 4096u);
  EXPECT_GE(committed, 4000u);
}

// A larger --disk is what the run gets, not only what the audit log records:
// it carries the work dir's own quota and file_size (strict's 64 MiB each)
// with it, and each is an override of its own.
TEST(CocoonRun, ALargerDiskRaisesTheWorkQuotaAndFileSizeWithIt) {
  std::string dir = fs::temp_directory_path() / ("cocoon-disk-raise-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  chmod(dir.c_str(), 0777);
  Ran ran = Cocoon({"run", "--json", "--disk", "100", "--work", dir, "--", "/bin/sh", "-c",
                    "head -c 90000000 /dev/zero > /work/big && echo wrote"});
  json j = Json(ran);
  std::error_code ec;
  uintmax_t committed = fs::file_size(fs::path(dir) / "big", ec);
  fs::remove_all(dir);
  EXPECT_EQ(j["exit_code"], 0) << j.dump(2);
  EXPECT_EQ(j["stdout"], "wrote\n") << j.dump(2);
  EXPECT_EQ(committed, 90000000u);
  std::string overrides = j["overrides"].dump();
  EXPECT_NE(overrides.find("filesystem.work.quota: 67108864 -> 104857600 (--disk)"), std::string::npos) << overrides;
  EXPECT_NE(overrides.find("limits.file_size: 67108864 -> 104857600 (--disk)"), std::string::npos) << overrides;
}

// As root, a path through another user's directory is that user's to point
// anywhere: cocoon follows only root's symlinks there, for the work dir, a
// --copy source and a bind source (workdir/host_path.h).
TEST(CocoonEnforce, AsRootAnotherUsersSymlinkIsNotFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root (the threat is root following a user's link)";
  std::string base = fs::temp_directory_path() / ("cocoon-links-test-" + std::to_string(getpid()));
  std::string user_dir = base + "/user", secret_dir = base + "/rootonly";
  fs::create_directories(user_dir);
  fs::create_directories(secret_dir);
  chmod(base.c_str(), 0755);
  chmod(secret_dir.c_str(), 0700);
  std::ofstream(secret_dir + "/secret") << "TOPSECRET\n";
  ASSERT_EQ(chown(user_dir.c_str(), 65534, 65534), 0);
  std::string link = user_dir + "/work";
  ASSERT_EQ(symlink(secret_dir.c_str(), link.c_str()), 0);
  ASSERT_EQ(lchown(link.c_str(), 65534, 65534), 0);  // the user's link
  std::string empty = base + "/empty";
  fs::create_directories(empty);
  Ran work = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", user_dir + "/work", "--", "/bin/sh",
                     "-c", "cat /work/secret; echo planted > /work/planted"});
  Ran copy = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", empty, "--copy",
                     user_dir + "/work/secret", "--", "/bin/cat", "/work/secret"});
  Ran bind = Cocoon({"run", "--ro", user_dir + "/work", "--", "/bin/sh", "-c", "cat " + user_dir + "/work/secret"});
  bool planted = fs::exists(secret_dir + "/planted");
  fs::remove_all(base);
  for (const Ran* ran : {&work, &copy, &bind}) {
    EXPECT_NE(ran->status, 0) << ran->out << ran->err;
    EXPECT_EQ(ran->out.find("TOPSECRET"), std::string::npos) << ran->out;
    EXPECT_NE(ran->err.find("a symlink owned by uid 65534"), std::string::npos) << ran->err;
  }
  EXPECT_FALSE(planted) << "the commit wrote into root's directory";
}

// A caller that stops reading cocoon's stdout must not stop the supervisor:
// the wall-clock limit holds (pass_through.h). The reader here starts 3 s
// after a 1 s limit; the Outcome must say the sandbox was killed at ~1 s.
TEST(CocoonRun, AReaderThatStopsReadingDoesNotSuspendTheTimeLimit) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  std::string err_path = fs::temp_directory_path() / ("cocoon-stalled-reader-" + std::to_string(getpid()));
  pid_t pid = fork();
  if (pid == 0) {
    if (dup2(out[1], 1) != 1 || !freopen(err_path.c_str(), "w", stderr)) _exit(125);
    execl(COCOON_BINARY, COCOON_BINARY, "run", "--timeout", "1", "--", "/bin/sh", "-c",
          "head -c 300000 /dev/zero; sleep 30", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  char buffer[65536];
  while (read(out[0], buffer, sizeof buffer) > 0) {
  }
  close(out[0]);
  auto [status, err] = WaitAndReadStderr(pid, err_path);
  EXPECT_EQ(status, 124) << err;
  size_t at = err.find("timed out after ");
  ASSERT_NE(at, std::string::npos) << err;
  long reported_ms = std::atol(err.c_str() + at + 16);
  EXPECT_LT(reported_ms, 2500) << "the limit waited for the reader: " << err;
}

TEST(CocoonEnforce, CommitCannotWriteMoreThanTheDiskQuotaToTheHost) {
  std::string dir = fs::temp_directory_path() / ("cocoon-quota-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir + "/orig.txt") << "original\n";
  for (const char* script : {"for i in $(seq 20); do truncate -s 8M s$i; done",
                             "head -c 1048576 /dev/zero > f; for i in $(seq 100); do ln f l$i; done"}) {
    Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir, "--", "/bin/sh", "-c", script});
    EXPECT_EQ(ran.status, 125) << script << "\n" << ran.err;
    EXPECT_NE(ran.err.find("work dir NOT verified (failed)"), std::string::npos) << ran.err;
    EXPECT_NE(ran.err.find("disk quota"), std::string::npos) << ran.err;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"orig.txt"}) << script;
  }
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir, "--json", "--", "/bin/sh", "-c",
                    "ln -s /etc/passwd escape; for i in $(seq 20); do truncate -s 8M s$i; done; echo done"});
  EXPECT_EQ(ran.status, 125) << ran.err;
  json j = Json(ran);
  // The scan ran before the commit failed: what it found is still reported.
  ASSERT_EQ(j["breakout"]["findings"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["breakout"]["findings"][0]["path"], "escape");
  EXPECT_EQ(j["exit_code"], 0) << j.dump(2);
  EXPECT_EQ(j["stdout"], "done\n");
  EXPECT_EQ(j["committed"], false);
  EXPECT_EQ(j["breakout"]["clean"], false);
  EXPECT_EQ(j["breakout"]["verified"], "failed");
  EXPECT_NE(j["breakout"]["error"].get<std::string>().find("disk quota"), std::string::npos) << j.dump(2);
  fs::remove_all(dir);
}

// Ctrl-C once the command has finished, while its 20000 files are scanned
// and committed: the commit stops before its swap (the host dir is as it
// was) and cocoon still ends as a cancel (130) with its notes, instead of
// dying by the signal, committing anyway, or printing no Outcome.
TEST(CocoonEnforce, SigintDuringTheCommitCommitsNothingAndExits130) {
  // The work dir sits alone in a parent of its own, so the commit tree the
  // supervisor builds beside it (".cocoon-commit-...") is the only entry
  // there that starts with a dot: its appearance says the commit is under way.
  fs::path parent = fs::temp_directory_path() / ("cocoon-sigint-" + std::to_string(getpid()));
  fs::path dir = parent / "work";
  fs::remove_all(parent);
  fs::create_directories(dir);
  std::ofstream(dir / "orig.txt") << "original\n";
  fs::path err_path = dir.string() + ".err";
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (!freopen(err_path.c_str(), "w", stderr)) _exit(125);
    execl(COCOON_BINARY, COCOON_BINARY, "enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir.c_str(), "--",
          "/bin/sh", "-c", "mkdir d && cd d && i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done; echo done",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string line;
  char c = 0;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ASSERT_EQ(line, "done");
  // Not a fixed sleep: under load the command may still be running 20 ms
  // after "done", and a SIGINT then cancels the run, not the commit.
  auto commit_started = [&] {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      if (entry.path().filename().string().rfind(".cocoon-commit-", 0) == 0) return true;
    }
    return false;
  };
  for (int i = 0; i < 60000 && !commit_started(); ++i) usleep(500);
  ASSERT_TRUE(commit_started()) << "no commit tree appeared beside " << dir;
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  close(out[0]);
  std::ifstream err_in(err_path);
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  ASSERT_TRUE(WIFEXITED(status)) << "cocoon died by signal " << WTERMSIG(status) << "\n" << err;
  EXPECT_EQ(WEXITSTATUS(status), 130) << err;
  EXPECT_NE(err.find("cancelled during the commit; the host work dir is unchanged"), std::string::npos) << err;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"orig.txt"});
  fs::remove_all(parent);
  fs::remove(err_path);
}

// Two staged runs on one work dir would each replace it whole, the later
// commit discarding the earlier's results (or, since the commit checks the
// dir's identity, the later's). The second is refused before it starts;
// the first commits as usual.
// A signal whose default action ends a process (here SIGUSR1) cancels the
// run like SIGTERM does, instead of killing cocoon with its cgroups and
// staging left behind.
TEST(CocoonEnforce, SigusrOneCancelsTheRunAndLeavesNothingBehind) {
  // Only this cocoon's groups: "cocoon-<pid ns>-<supervisor pid>-<hex>"
  // (enforcer/limits/cgroup_names.h); tests running alongside make their own.
  auto groups_of = [](pid_t supervisor) {
    size_t n = 0;
    std::error_code ec;
    const std::string infix = "-" + std::to_string(supervisor) + "-";
    for (const char* hierarchy : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      for (const auto& entry : fs::directory_iterator(hierarchy, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("cocoon-", 0) == 0 && name.find(infix) != std::string::npos) ++n;
      }
    }
    return n;
  };
  const std::string err_path = fs::temp_directory_path() / ("cocoon-sigusr1-" + std::to_string(getpid()) + ".err");
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    if (!freopen(err_path.c_str(), "w", stderr)) _exit(125);
    execl(COCOON_BINARY, COCOON_BINARY, "enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--", "/bin/sleep", "30",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const size_t during = groups_of(pid);
  ASSERT_EQ(kill(pid, SIGUSR1), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "cocoon died by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  if (geteuid() == 0) {
    EXPECT_GT(during, 0u) << "as root the run has cgroups: the check below would prove nothing";
  }
  EXPECT_EQ(groups_of(pid), 0u) << "cgroups left behind";
  // Exit 130 alone would leave the caller guessing: the note says what happened.
  std::ifstream err_in(err_path);
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  EXPECT_NE(err.find("interrupted by a signal; sandbox killed; nothing was committed"), std::string::npos) << err;
  fs::remove(err_path);
}

// The directories the child makes in the work dir for a bind nested in it
// belong to the sandbox's user, not to host root: a sandbox that moved one
// out from under its mount had it committed as root's into a work dir of
// another user, who could then not remove it.
TEST(CocoonEnforce, DirectoriesMadeForANestedBindAreCommittedAsTheWorkDirOwners) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to give the work dir to another user";
  fs::path dir = fs::temp_directory_path() / ("cocoon-nested-bind-owner-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  ASSERT_EQ(chown((dir / "work").c_str(), 4242, 4242), 0);
  std::ofstream(dir / "nested.cocoon") << "import \"" COCOON_POLICIES_DIR "/strict.cocoon\"\n"
                                          "profile nested extends strict {\n  relaxes filesystem\n"
                                          "  filesystem {\n    readonly /usr/share/doc as /work/deep/doc\n  }\n}\n";
  Ran ran = Cocoon({"enforce", (dir / "nested.cocoon").string(), "--work",
                    (dir / "work").string(), "--", "/bin/sh", "-c", "mv /work/deep /work/keep"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  for (const fs::path& p : {dir / "work" / "keep", dir / "work" / "keep" / "doc"}) {
    struct stat st {};
    ASSERT_EQ(lstat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_uid, 4242u) << p;
    EXPECT_EQ(st.st_gid, 4242u) << p;
  }
  fs::remove_all(dir);
}

// A signal the caller set to be ignored (nohup, a shell's background job)
// does not cancel the run: cocoon blocked it for its signalfd, and a blocked
// signal is queued even when ignored.
TEST(CocoonRun, ASignalTheCallerIgnoresDoesNotCancelTheRun) {
  const std::string out_path = fs::temp_directory_path() / ("cocoon-nohup-" + std::to_string(getpid()) + ".out");
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGHUP, SIG_IGN);
    if (!freopen(out_path.c_str(), "w", stdout)) _exit(125);
    execl(COCOON_BINARY, COCOON_BINARY, "run", "--", "/bin/sh", "-c", "sleep 1; echo done",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_EQ(kill(pid, SIGHUP), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out_path);
  std::string out((std::istreambuf_iterator<char>(in)), {});
  ASSERT_TRUE(WIFEXITED(status)) << "cocoon died by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(out, "done\n");
  fs::remove(out_path);
}

// Once a run is recorded (committed, audit exit event written), a signal
// ends cocoon as it would any program: here cocoon is stuck writing its
// Outcome to a reader that does not read, and SIGTERM must not wait for
// SIGKILL. What it recorded is whole: the audit log has the run's exit
// event and verifies.
TEST(CocoonRun, ASignalWhileTheOutcomeIsWrittenEndsCocoonWithTheRunRecorded) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-after-commit-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDERR_FILENO);
    // 500 KB of output: its JSON fills the pipe, which nobody reads.
    execl(COCOON_BINARY, COCOON_BINARY, "run", "--json", "--audit-log", log.c_str(), "--audit-key", key.c_str(),
          "--work", (dir / "work").c_str(), "--", "/bin/sh", "-c",
          "head -c 500000 /dev/zero | tr '\\0' a; echo x > /work/result", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  for (int i = 0; i < 1000 && !fs::exists(dir / "work" / "result"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(dir / "work" / "result")) << "never committed";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // cocoon is blocked writing the Outcome by now
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 500 && (waited = waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(out[0]);
  EXPECT_NE(waited, 0) << "SIGTERM did not end cocoon while it wrote to a reader that does not read";
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("\"process-exited\""), std::string::npos) << "the run's exit event is missing";
  Ran verified = Cocoon({"audit", "verify", log, "--trust", key + ".pub"});
  EXPECT_TRUE(verified.status == 0 || verified.status == 2) << verified.out << verified.err;  // 2: intact, unsealed
  fs::remove_all(dir);
}

TEST(CocoonEnforce, ASecondStagedRunOnABusyWorkDirIsRefusedBeforeItStarts) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-busy-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t first = fork();
  if (first == 0) {
    dup2(out[1], STDOUT_FILENO);
    execl(COCOON_BINARY, COCOON_BINARY, "enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir.c_str(), "--",
          "/bin/sh", "-c", "echo first > /work/first.txt; echo started; sleep 2", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string line;
  char c = 0;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ASSERT_EQ(line, "started");  // the first run is under way, its staging in place
  Ran second = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir.string(), "--", "/bin/sh",
                       "-c", "echo second > /work/second.txt"});
  EXPECT_EQ(second.status, 1) << second.out << second.err;
  EXPECT_NE(second.err.find("in use by another cocoon run"), std::string::npos) << second.err;
  int status = 0;
  waitpid(first, &status, 0);
  close(out[0]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::exists(dir / "first.txt"));
  EXPECT_FALSE(fs::exists(dir / "second.txt"));
  fs::remove_all(dir);
}

// The Outcome says how the work dir was handled and when its breakout
// verification ran: before the commit when staged, after the fact in
// `direct` mode (the sandbox wrote to the host dir itself).
TEST(CocoonEnforce, OutcomeSaysWhenTheWorkDirWasVerified) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-verified-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::permissions(dir / "work", fs::perms::all);  // the sandbox user writes it directly in direct mode
  std::ofstream(dir / "direct.cocoon") << "import \"strict\"\nprofile direct extends strict {\n"
                                          "  filesystem {\n    work /work quota 64MiB direct\n  }\n}\n";
  json staged = Json(Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", (dir / "work").string(),
                             "--json", "--", "/bin/true"}));
  EXPECT_EQ(staged["breakout"]["work_mode"], "staged-copy") << staged.dump(2);
  EXPECT_EQ(staged["breakout"]["verified"], "before-commit");
  Ran ran = Cocoon({"enforce", (dir / "direct.cocoon").string(), "--work", (dir / "work").string(), "--json", "--",
                    "/bin/sh", "-c", "ln -s /etc/passwd /work/escape; echo ok > /work/out"});
  json direct = Json(ran);
  EXPECT_EQ(direct["breakout"]["work_mode"], "direct") << direct.dump(2) << ran.err;
  EXPECT_EQ(direct["breakout"]["verified"], "after-the-fact");
  EXPECT_FALSE(direct["breakout"]["clean"].get<bool>());
  EXPECT_FALSE(fs::is_symlink(dir / "work" / "escape")) << "removed after the fact";
  EXPECT_TRUE(fs::exists(dir / "work" / "out"));

  // Direct writes are on the host at once: a run that times out is
  // verified and cleaned after the fact too (it once was not).
  std::ofstream(dir / "direct-1s.cocoon") << "import \"strict\"\nprofile direct extends strict {\n"
                                             "  filesystem {\n    work /work quota 64MiB direct\n  }\n"
                                             "  limits {\n    wall_time 1s\n  }\n}\n";
  Ran timed_out = Cocoon({"enforce", (dir / "direct-1s.cocoon").string(), "--work", (dir / "work").string(), "--json",
                          "--", "/bin/sh", "-c", "ln -s /etc/shadow /work/late-escape; sleep 30"});
  json late = Json(timed_out);
  EXPECT_EQ(late["timed_out"], true) << late.dump(2) << timed_out.err;
  EXPECT_EQ(late["breakout"]["verified"], "after-the-fact");
  EXPECT_FALSE(fs::is_symlink(dir / "work" / "late-escape")) << "a timed-out direct run left its escape on the host";
  fs::remove_all(dir);
}

// A direct work dir's quota has no tmpfs to cap it: it becomes the disk
// limit, enforced per file by RLIMIT_FSIZE (it was once reported and never
// applied: writes ran up to the 16 GiB default). Staged, it sizes the tmpfs.
TEST(CocoonEnforce, AWorkQuotaIsEnforcedInDirectModeToo) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-quota-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::permissions(dir / "work", fs::perms::all);  // the sandbox user writes it directly in direct mode
  for (std::string mode : {"direct", "staged"}) {
    SCOPED_TRACE(mode);
    fs::path policy = dir / (mode + ".cocoon");
    std::ofstream(policy) << "import \"strict\"\nprofile q extends strict {\n"
                             "  filesystem {\n    work /work quota 1MiB " << mode << "\n  }\n}\n";
    Ran ran = Cocoon({"enforce", policy.string(), "--work", (dir / "work").string(), "--json", "--", "/bin/sh", "-c",
                      "head -c 2097152 /dev/zero > /work/big; echo rc=$?"});
    json outcome = Json(ran);
    json disk;
    for (const auto& row : outcome["limits"]) {
      if (row["limit"] == "disk") disk = row;
    }
    ASSERT_FALSE(disk.is_null()) << outcome.dump(2) << ran.err;
    EXPECT_EQ(disk["requested"], 1048576) << disk.dump();
    EXPECT_EQ(disk["mechanism"], mode == "direct" ? "rlimit" : "tmpfs-size") << disk.dump();
    EXPECT_EQ(outcome["stdout"].get<std::string>().find("rc=0"), std::string::npos) << outcome["stdout"];
    std::error_code ec;
    EXPECT_LE(fs::file_size(dir / "work" / "big", ec), 1048576u) << "the quota let more through";
    fs::remove(dir / "work" / "big", ec);
  }
  fs::remove_all(dir);
}

// Without --work the work dir is a tmpfs of its own, and the disk limit is
// its size, in both modes and from `cocoon run --disk` too. It used to keep
// its 64 MiB default (a 2 MiB write succeeded) while the Outcome's disk row
// claimed tmpfs-size with the requested 1 MiB.
TEST(CocoonEnforce, TheDiskLimitSizesTheWorkTmpfsWithoutAHostWorkDir) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-disk-nowork-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string> command = {"--json", "--", "/bin/sh", "-c",
                                            "head -c 2097152 /dev/zero > /work/big; echo rc=$?; "
                                            "wc -c < /work/big; df -k /work | tail -n 1"};
  std::vector<std::pair<std::string, std::vector<std::string>>> runs;
  for (std::string mode : {"staged", "direct"}) {
    fs::path policy = dir / (mode + ".cocoon");
    std::ofstream(policy) << "import \"strict\"\nprofile d extends strict {\n  relaxes filesystem\n"
                             "  filesystem { work /work quota 64MiB " << mode << " }\n  limits { disk 1MiB }\n}\n";
    std::vector<std::string> args = {"enforce", policy.string()};
    args.insert(args.end(), command.begin(), command.end());
    runs.emplace_back("enforce " + mode, args);
  }
  std::vector<std::string> run = {"run", "--disk", "1"};
  run.insert(run.end(), command.begin(), command.end());
  runs.emplace_back("run --disk 1", run);
  for (const auto& [name, args] : runs) {
    SCOPED_TRACE(name);
    Ran ran = Cocoon(args);
    json outcome = Json(ran);
    json disk;
    for (const auto& row : outcome["limits"]) {
      if (row["limit"] == "disk") disk = row;
    }
    ASSERT_FALSE(disk.is_null()) << outcome.dump(2) << ran.err;
    EXPECT_EQ(disk["requested"], 1048576) << disk.dump();
    EXPECT_EQ(disk["mechanism"], "tmpfs-size") << disk.dump();
    const std::string out = outcome["stdout"].get<std::string>();
    EXPECT_EQ(out.find("rc=0"), std::string::npos) << "a 2 MiB write passed the 1 MiB disk limit: " << out;
    EXPECT_NE(out.find(" 1024 "), std::string::npos) << "the work tmpfs is not 1024 KiB: " << out;
  }
  fs::remove_all(dir);
}

// A tree deeper than the scan goes (256 levels): staged, nothing is
// committed (verification "failed", exit 125), because leaving the
// directory out would remove from the host dir what it holds, files the
// sandbox may not have been able to remove itself (as root, other users'
// files inside a directory of the caller's that it moved down there);
// direct, it cannot be removed unseen, so it stays and the Outcome says the
// verification is incomplete (exit 125). Either way an Outcome comes back
// (once the run ended in an error and none did).
TEST(CocoonEnforce, ATreeTooDeepToScanCommitsNothingOrIsReportedIncomplete) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-deep-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::permissions(dir / "work", fs::perms::all);  // the sandbox user writes it directly in direct mode
  const std::string deep =
      "echo ok > /work/out; cd /work; i=0; while [ $i -lt 300 ]; do mkdir d && cd d || exit 9; i=$((i+1)); done; "
      "ln -s /etc/shadow escape";
  std::string too_deep = "d";  // the first directory past 256 levels: /work/d/.../d (257 names)
  for (int i = 1; i < 257; ++i) too_deep += "/d";

  Ran staged_run = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", (dir / "work").string(),
                           "--json", "--", "/bin/sh", "-c", deep});
  json staged = Json(staged_run);
  EXPECT_EQ(staged_run.status, 125) << staged.dump(2) << staged_run.err;
  EXPECT_EQ(staged["breakout"]["verified"], "failed") << staged.dump(2);
  EXPECT_EQ(staged["committed"], false);
  EXPECT_NE(staged["breakout"]["error"].get<std::string>().find("nothing was committed"), std::string::npos);
  ASSERT_EQ(staged["breakout"]["findings"].size(), 1u) << staged["breakout"].dump(2);
  EXPECT_EQ(staged["breakout"]["findings"][0]["kind"], "too-deep");
  EXPECT_EQ(staged["breakout"]["findings"][0]["path"], too_deep);
  EXPECT_FALSE(fs::exists(dir / "work" / "out"));
  EXPECT_FALSE(fs::exists(dir / "work" / "d")) << "nothing of the run reached the host";
  fs::remove_all(dir / "work");
  fs::create_directories(dir / "work");
  fs::permissions(dir / "work", fs::perms::all);

  std::ofstream(dir / "direct.cocoon") << "import \"strict\"\nprofile direct extends strict {\n"
                                          "  filesystem {\n    work /work quota 64MiB direct\n  }\n}\n";
  Ran direct_run = Cocoon({"enforce", (dir / "direct.cocoon").string(), "--work", (dir / "work").string(), "--json",
                           "--", "/bin/sh", "-c", deep});
  json direct = Json(direct_run);
  EXPECT_EQ(direct_run.status, 125) << direct.dump(2) << direct_run.err;
  EXPECT_EQ(direct["exit_code"], 0);
  EXPECT_EQ(direct["breakout"]["verified"], "incomplete") << direct.dump(2);
  EXPECT_EQ(direct["breakout"]["clean"], false);
  EXPECT_NE(direct["breakout"]["error"].get<std::string>().find("could not be inspected"), std::string::npos);
  ASSERT_EQ(direct["breakout"]["findings"].size(), 1u) << direct["breakout"].dump(2);
  EXPECT_EQ(direct["breakout"]["findings"][0]["kind"], "too-deep");
  Ran plain = Cocoon({"enforce", (dir / "direct.cocoon").string(), "--work", (dir / "work").string(), "--", "/bin/true"});
  EXPECT_EQ(plain.status, 125) << "the unscanned tree is still there: every run says so";
  EXPECT_NE(plain.err.find("not inspected, left in place: " + too_deep + " (too-deep)"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("work dir NOT verified (incomplete)"), std::string::npos) << plain.err;
  fs::remove_all(dir);
}

// Rootless, the scanner has no power over the caller's own files that the
// sandbox (the same host uid) has not: a directory the sandbox made mode
// 000 in a direct work dir cannot be looked into. It is left in place (it
// may be the user's own), never passed as clean: verified "incomplete" and
// exit 125, while the escape the scan could see is removed.
TEST(CocoonEnforce, RootlessDirectModeReportsWhatItCouldNotInspect) {
  const bool root = geteuid() == 0;
  if (root && access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  fs::path dir = fs::temp_directory_path() / ("cocoon-rootless-direct-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "home");
  std::ofstream(dir / "direct.cocoon") << "import \"strict\"\nprofile direct extends strict {\n"
                                          "  filesystem {\n    work /work quota 64MiB direct\n  }\n}\n";
  if (root) {
    for (const fs::path& p : {dir, dir / "work", dir / "home", dir / "direct.cocoon"}) {
      ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0) << p;
    }
  }
  std::vector<std::string> args = {"enforce", (dir / "direct.cocoon").string(), "--work", (dir / "work").string(),
                                   "--json", "--", "/bin/sh", "-c",
                                   "mkdir /work/d; ln -s /etc/shadow /work/d/esc; chmod 000 /work/d; "
                                   "ln -s /etc/passwd /work/top"};
  std::string binary = COCOON_BINARY;
  if (root) {
    args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
    binary = "/usr/bin/setpriv";
  }
  Ran ran = Cocoon(args, "", {{"HOME", (dir / "home").string()}, {"XDG_CACHE_HOME", (dir / "home").string()}}, binary);
  json j = Json(ran);
  EXPECT_EQ(ran.status, 125) << j.dump(2) << ran.err;
  EXPECT_EQ(j["breakout"]["verified"], "incomplete") << j.dump(2);
  EXPECT_FALSE(fs::is_symlink(dir / "work" / "top")) << "the escape the scan saw was removed";
  bool reported = false;
  for (const auto& f : j["breakout"]["findings"]) reported |= f["path"] == "d" && f["kind"] == "unreadable";
  EXPECT_TRUE(reported) << j["breakout"].dump(2);
  fs::permissions(dir / "work" / "d", fs::perms::owner_all);
  fs::remove_all(dir);
}

// Rootless, without a cgroup, the peak is wait4's maxrss, which holds the
// child's pre-exec high-water mark of cocoon's own memory (the child runs in
// it until its execve, and cocoon keeps using it meanwhile). A tiny command
// is never labelled as its own peak: before, with a strict `>` against the
// child's own record taken before its last system calls, per-CPU counter
// batching made 4 runs in 40 of a 2 MiB grep report cocoon's 3.4 MiB as the
// command's. A command that does use memory (dd's 64 MiB buffer) still is.
TEST(CocoonEnforce, RootlessPeakMemoryOfATinyCommandIsNeverLabelledItsOwn) {
  const bool root = geteuid() == 0;
  if (root && access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED: no setpriv to run cocoon as uid 65534; the rootless peak was not checked";
  fs::path dir = fs::temp_directory_path() / ("cocoon-rootless-peak-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "home");
  std::ofstream(dir / "p.cocoon") << "import \"strict\"\nprofile p extends strict {\n}\n";
  if (root) {
    for (const fs::path& p : {dir, dir / "home", dir / "p.cocoon"}) ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0) << p;
  }
  auto run = [&](std::vector<std::string> command) {
    std::vector<std::string> args = {"enforce", (dir / "p.cocoon").string(), "--json", "--"};
    args.insert(args.end(), command.begin(), command.end());
    std::string binary = COCOON_BINARY;
    if (root) {
      args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
      binary = "/usr/bin/setpriv";
    }
    return Cocoon(args, "/", {{"HOME", (dir / "home").string()}, {"XDG_CACHE_HOME", (dir / "home").string()}},
                  binary);
  };
  int rusage_runs = 0;
  std::string labelled_own;
  for (int i = 0; i < 40; ++i) {
    Ran ran = run({"/bin/true"});
    json j = Json(ran);
    ASSERT_EQ(j["exit_code"], 0) << j.dump(2) << ran.err;
    const std::string source = j["peak_memory_source"];
    if (source.rfind("cgroup", 0) == 0) continue;
    ++rusage_runs;
    if (source.find("or of cocoon before exec") == std::string::npos) {
      labelled_own += " " + j["peak_mem_kib"].dump() + " KiB (" + source + ")";
    }
  }
  if (rusage_runs == 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: every run had a cgroup's peak; rusage labels not checked";
  EXPECT_EQ(labelled_own, "") << "/bin/true labelled as its own peak in " << rusage_runs << " rootless runs";
  Ran big = run({"/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"});
  json j = Json(big);
  ASSERT_EQ(j["exit_code"], 0) << j.dump(2) << big.err;
  EXPECT_GE(j["peak_mem_kib"].get<uint64_t>(), 64u << 10) << j.dump(2);
  EXPECT_EQ(j["peak_memory_source"],
            "rusage maxrss of the command and the children it reaped (processes still running at the end are not "
            "counted)")
      << "dd's own 64 MiB buffer is its own peak";
  fs::remove_all(dir);
}

// A team's shared directory (setgid, in a group of its own) in the work dir
// keeps its setgid bit and its group after a staged run, and what the
// sandbox made in it takes that group, as if it had been made on the host.
// Before, every staged run dropped the bit, and as root also the group; a
// work dir over 64 MiB went through an overlay, in which the sandbox could
// not write into the shared directory at all (its group is not mapped in
// the sandbox's user namespace): such a dir is now copied. An overlay
// (a big dir in the owner's own group) keeps the setgid bit too.
TEST(CocoonRun, ASharedGroupDirectoryKeepsItsSetgidBitAndGroup) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to give the shared directory another group";
  struct Case {
    const char* name;
    gid_t group;  // 100 is "users" on Debian: any group other than the owner's (root's)
    bool big;
    const char* work_mode;
  };
  for (const Case& c : {Case{"small, shared group", 100, false, "staged-copy"},
                        Case{"big, shared group", 100, true, "staged-copy"},
                        Case{"big, owner's group", 0, true, "staged-overlay"}}) {
    SCOPED_TRACE(c.name);
    fs::path dir = fs::temp_directory_path() / ("cocoon-setgid-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "work" / "shared");
    std::ofstream(dir / "work" / "shared" / "old") << "old\n";
    ASSERT_EQ(chown((dir / "work" / "shared").c_str(), 0, c.group), 0);
    ASSERT_EQ(chown((dir / "work" / "shared" / "old").c_str(), 0, c.group), 0);
    ASSERT_EQ(chmod((dir / "work" / "shared").c_str(), 02775), 0);
    if (c.big) {
      std::ofstream(dir / "work" / "big") << "";
      fs::resize_file(dir / "work" / "big", 80 << 20);  // sparse: 80 MiB as the work dir's size, no disk
    }
    Ran ran = Cocoon({"run", "--json", "--disk", "256", "--work", (dir / "work").string(), "--", "/bin/sh", "-c",
                      "mkdir /work/shared/sub && echo new > /work/shared/new && echo f > /work/shared/sub/f && "
                      "echo more >> /work/shared/old"},
                     "/");
    json j = Json(ran);
    ASSERT_EQ(j["exit_code"], 0) << j.dump(2) << ran.err;
    EXPECT_EQ(j["breakout"]["work_mode"], c.work_mode) << j["breakout"].dump(2);
    EXPECT_EQ(j["breakout"]["findings"].size(), 0u) << j["breakout"].dump(2);
    struct stat st {};
    ASSERT_EQ(stat((dir / "work" / "shared").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 02775u);
    EXPECT_EQ(st.st_gid, c.group);
    for (const char* made : {"shared/sub", "shared/new", "shared/sub/f", "shared/old"}) {
      ASSERT_EQ(stat((dir / "work" / made).c_str(), &st), 0) << made;
      EXPECT_EQ(st.st_gid, c.group) << made << " left the shared directory's group";
    }
    ASSERT_EQ(stat((dir / "work" / "shared" / "sub").c_str(), &st), 0);
    EXPECT_TRUE(st.st_mode & S_ISGID) << "a directory made in a setgid one is setgid, as on the host";
    std::ifstream old_file(dir / "work" / "shared" / "old");
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(old_file)), {}), "old\nmore\n");
    fs::remove_all(dir);
  }
}

// As root: a directory of another owner that the sandbox moves onto the path
// of one of the work dir owner's keeps its owner (the owner must not gain
// the power to delete root's files in it), and a directory in a group the
// owner is not in, made setgid by the sandbox, does not come back setgid in
// that group (the owner could then make files of that group).
TEST(CocoonRun, TheCommitGivesNoDirectoryAnOwnerOrSetgidGroupItDidNotHave) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to make directories of several owners";
  fs::path dir = fs::temp_directory_path() / ("cocoon-dirowner-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work" / "a");
  fs::create_directories(dir / "work" / "b");
  fs::create_directories(dir / "work" / "g");
  std::ofstream(dir / "work" / "b" / "rootfile") << "root's\n";
  for (const char* owned : {"", "a", "g"}) ASSERT_EQ(chown((dir / "work" / owned).c_str(), 1001, 1001), 0) << owned;
  ASSERT_EQ(chown((dir / "work" / "g").c_str(), 1001, 0), 0);  // the owner's dir, in group root
  ASSERT_EQ(chmod((dir / "work" / "b").c_str(), 0755), 0);
  Ran ran = Cocoon({"run", "--json", "--work", (dir / "work").string(), "--", "/bin/sh", "-c",
                    "cd /work && rmdir a && mv b a && chmod 2777 g"},
                   "/");
  json j = Json(ran);
  ASSERT_EQ(j["exit_code"], 0) << j.dump(2) << ran.err;
  ASSERT_EQ(j["committed"], true) << j.dump(2);
  struct stat st {};
  ASSERT_EQ(stat((dir / "work" / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "root's directory came back as the work dir owner's";
  ASSERT_EQ(stat((dir / "work" / "g").c_str(), &st), 0);
  EXPECT_FALSE((st.st_mode & S_ISGID) && st.st_gid == 0) << "a setgid directory in group root, owned by uid 1001";
  fs::remove_all(dir);
}

// Rootless on this host the memory limit is an rlimit. It must be one a
// runtime that reserves address space can start under: node reserves
// ~700 MiB PROT_NONE, and under RLIMIT_AS at strict's 128 MiB it spun until
// the wall-time kill. RLIMIT_DATA still stops a process that fills memory.
TEST(CocoonRun, RootlessMemoryRlimitLetsNodeStartAndStopsAFill) {
  const bool root = geteuid() == 0;
  if (root && access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "SKIPPED LOUDLY: node is not installed (setup.sh installs it)";
  fs::path home = fs::temp_directory_path() / ("cocoon-rootless-node-" + std::to_string(getpid()));
  fs::remove_all(home);
  fs::create_directories(home);
  if (root) {
    ASSERT_EQ(chown(home.c_str(), 65534, 65534), 0);
  }
  auto run_rootless = [&](std::vector<std::string> args) {
    std::string binary = COCOON_BINARY;
    if (root) {
      args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
      binary = "/usr/bin/setpriv";
    }
    return Cocoon(args, "/", {{"HOME", home.string()}, {"XDG_CACHE_HOME", home.string()}}, binary);
  };
  Ran node = run_rootless({"run", "--json", "-r", "node", "-c", "console.log(6*7)"});
  json j = Json(node);
  EXPECT_EQ(j["exit_code"], 0) << j.dump(2) << node.err;
  EXPECT_EQ(j["stdout"], "42\n") << j.dump(2);
  std::string mechanism;
  for (const auto& row : j["limits"]) {
    if (row["limit"] == "memory") mechanism = row["mechanism"];
  }
  Ran fill = run_rootless({"run", "--json", "-r", "python", "-c", "x = bytearray(300 << 20); print('filled')"});
  json f = Json(fill);
  EXPECT_NE(f["exit_code"], 0) << f.dump(2);
  EXPECT_EQ(f["stdout"], "") << "300 MiB filled under a 128 MiB limit (" << mechanism << ")";
  fs::remove_all(home);
}

// Runs `argv` with stdout and stderr to `log` (appended); its exit status.
int RunLogged(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(125);
    unsetenv("XDG_RUNTIME_DIR");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Another user could make /tmp/.cocoon-<victim uid> first (sticky /tmp: the
// victim cannot remove it), and every run of the victim's was refused for
// good ("... is not a directory owned by us ...; remove it"), root's too.
// In a mount namespace of its own with a fresh /tmp (the host's
// /tmp/.cocoon-* of other runs stay untouched), uid 65534 plants the names
// of root and of uid 4243; both run, the planted dirs are left as they were,
// and 4243's fallback state dir is gone after its run. Seen failing before
// the fix (both runs refused, exit 1).
TEST(CocoonRun, AStateDirNamePlantedByAnotherUserDoesNotBlockRuns) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to plant directories of another user";
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: no setpriv to run cocoon as uid 4243";
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    auto say = [&](const std::string& text) { (void)!write(report[1], text.data(), text.size()); };
    // A checkout under /tmp (a CI clone there) would vanish under the fresh
    // /tmp with the binary and the shipped policies: it is bound aside on
    // /mnt first and moved back to its own path inside the new /tmp.
    const std::string repo = fs::path(COCOON_POLICIES_DIR).parent_path().string();
    const bool repo_in_tmp = repo.rfind("/tmp/", 0) == 0;
    const std::string binary = COCOON_BINARY;
    if (binary.rfind("/tmp/", 0) == 0 && binary.rfind(repo + "/", 0) != 0) {
      say("the build dir is under /tmp but outside the checkout " + repo + ": this test cannot keep it visible");
      _exit(1);
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        (repo_in_tmp && mount(repo.c_str(), "/mnt", nullptr, MS_BIND, nullptr) != 0) ||
        mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777,size=64m") != 0) {
      say(std::string("namespace setup: ") + strerror(errno));
      _exit(1);
    }
    if (repo_in_tmp) {
      std::error_code ec;
      fs::create_directories(repo, ec);
      if (ec || mount("/mnt", repo.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
        say("moving the checkout back into the new /tmp: " + (ec ? ec.message() : std::string(strerror(errno))));
        _exit(1);
      }
    }
    for (const char* planted : {"/tmp/.cocoon-0", "/tmp/.cocoon-4243"}) {
      if (mkdir(planted, 0711) != 0 || chown(planted, 65534, 65534) != 0) _exit(1);
    }
    if (mkdir("/tmp/home", 0755) != 0 || chown("/tmp/home", 4243, 4243) != 0) _exit(1);
    const std::string log = "/tmp/log";
    const int root_run = RunLogged({COCOON_BINARY, "run", "--", "/bin/true"}, log);
    setenv("HOME", "/tmp/home", 1);
    setenv("XDG_CACHE_HOME", "/tmp/home", 1);
    const int user_run = RunLogged({"/usr/bin/setpriv", "--reuid=4243", "--regid=4243", "--clear-groups",
                                    COCOON_BINARY, "run", "--", "/bin/sh", "-c", "echo ran-as-user"},
                                   log);
    std::string text = "root=" + std::to_string(root_run) + " user=" + std::to_string(user_run) + "\n";
    for (const char* planted : {"/tmp/.cocoon-0", "/tmp/.cocoon-4243"}) {
      struct stat st {};
      const bool same = lstat(planted, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 65534 &&
                        (st.st_mode & 07777) == 0711 && st.st_nlink == 2;
      text += std::string(planted) + (same ? " untouched\n" : " changed\n");
    }
    for (const auto& entry : fs::directory_iterator("/tmp")) {
      if (entry.path().filename().string().rfind(".cocoon-4243-", 0) == 0) text += "left: " + entry.path().string() + "\n";
    }
    std::ifstream in(log);
    text += "log:\n" + std::string((std::istreambuf_iterator<char>(in)), {});
    say(text);
    _exit(0);
  }
  close(report[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(report[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("root=0 user=0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("/tmp/.cocoon-0 untouched"), std::string::npos) << text;
  EXPECT_NE(text.find("/tmp/.cocoon-4243 untouched"), std::string::npos) << text;
  EXPECT_NE(text.find("ran-as-user"), std::string::npos) << text;
  EXPECT_EQ(text.find("left: "), std::string::npos) << "the fallback state dir outlived its run: " << text;
}

// A staged work dir's results are committed through a directory made beside
// it: a work dir whose parent the caller cannot write (`--work ~` under a
// root-owned /home) is refused before the command runs, not after (when
// its results could only be thrown away, exit 125).
TEST(CocoonRun, AWorkDirWhoseParentCannotTakeTheCommitIsRefusedBeforeTheRun) {
  const bool root = geteuid() == 0;
  if (!root) GTEST_SKIP() << "SKIPPED: needs root to make a parent the test's user cannot write";
  if (access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  fs::path base = fs::temp_directory_path() / ("cocoon-commit-parent-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "parent" / "work");
  fs::create_directories(base / "home");
  chmod(base.c_str(), 0755);
  chmod((base / "parent").c_str(), 0755);  // root's: uid 65534 cannot add the commit directory here
  ASSERT_EQ(chown((base / "parent" / "work").c_str(), 65534, 65534), 0);
  ASSERT_EQ(chown((base / "home").c_str(), 65534, 65534), 0);
  Ran ran = Cocoon({"--reuid=65534", "--regid=65534", "--clear-groups", COCOON_BINARY, "run", "--work",
                    (base / "parent" / "work").string(), "--", "/bin/sh", "-c", "echo ran; echo result > /work/out"},
                   "/", {{"HOME", (base / "home").string()}, {"XDG_CACHE_HOME", (base / "home").string()}},
                   "/usr/bin/setpriv");
  EXPECT_EQ(ran.status, 1) << ran.out << ran.err;
  EXPECT_EQ(ran.out.find("ran"), std::string::npos) << "the command ran: " << ran.out;
  EXPECT_NE(ran.err.find("use a work dir whose parent you can write"), std::string::npos) << ran.err;
  fs::remove_all(base);
}

// Rootless, a big work dir is staged through an overlay, and overlayfs
// copies a changed file up with its owner, which the sandbox's user
// namespace (the caller's uid and gid only) cannot express: a file of
// another owner could be read but every write failed with EOVERFLOW. Such a
// dir is copied instead when it fits the quota; when it does not, the
// overlay stays and the Outcome says which entries cannot be changed.
TEST(CocoonRun, RootlessBigWorkDirWithAnotherOwnersFileIsCopiedWhenItFits) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to make a file of another owner";
  if (access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  fs::path base = fs::temp_directory_path() / ("cocoon-foreign-owner-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "work");
  fs::create_directories(base / "home");
  // The caller's file, but of group root (a setgid directory, a checkout made
  // with sudo): the caller may write it on the host.
  std::ofstream(base / "work" / "roots.txt") << "original\n";
  ASSERT_EQ(chown((base / "work" / "roots.txt").c_str(), 65534, 0), 0);
  // Over the 64 MiB overlay threshold (st_size counts; sparse on the host).
  std::ofstream(base / "work" / "big.bin").close();
  ASSERT_EQ(truncate((base / "work" / "big.bin").c_str(), 65ll << 20), 0) << strerror(errno);
  for (const fs::path& p : {base, base / "work", base / "work" / "big.bin", base / "home"}) {
    ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0) << p;
  }
  auto run_rootless = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--reuid=65534", "--regid=65534", "--clear-groups", COCOON_BINARY, "run",
                                     "--json", "--work", (base / "work").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const char* a : {"--", "/bin/sh", "-c", "echo changed > roots.txt && echo wrote"}) args.push_back(a);
    return Cocoon(args, "/", {{"HOME", (base / "home").string()}, {"XDG_CACHE_HOME", (base / "home").string()}},
                  "/usr/bin/setpriv");
  };
  auto contents = [&] {
    std::ifstream in(base / "work" / "roots.txt");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };

  // strict's 64 MiB quota cannot hold a copy of 65 MiB: overlay, and a note.
  Ran kept = run_rootless({});
  json k = Json(kept);
  EXPECT_EQ(k["breakout"]["work_mode"], "staged-overlay") << k.dump(2);
  EXPECT_NE(k["exit_code"], 0) << k.dump(2);
  EXPECT_NE(k["stderr"].get<std::string>().find("Value too large"), std::string::npos) << k.dump(2);
  const std::string note = k["breakout"].value("note", "");
  EXPECT_NE(note.find("1 entry of the work dir (such as 'roots.txt') belong"), std::string::npos) << k.dump(2);
  EXPECT_NE(note.find("its copy would not fit the quota"), std::string::npos) << note;
  EXPECT_EQ(contents(), "original\n");

  // With room for a copy, the file is the sandbox's to change.
  Ran copied = run_rootless({"--disk", "256M"});
  json c = Json(copied);
  EXPECT_EQ(c["breakout"]["work_mode"], "staged-copy") << c.dump(2);
  EXPECT_EQ(c["exit_code"], 0) << c.dump(2);
  EXPECT_EQ(c["stdout"], "wrote\n");
  EXPECT_EQ(c["breakout"].count("note"), 0u) << c.dump(2);
  EXPECT_TRUE(c["committed"].get<bool>()) << c.dump(2);
  EXPECT_EQ(contents(), "changed\n");
  fs::remove_all(base);
}

// As root the sandbox's user namespace is root's, so its inotify instances
// count against host root's 128: one sandbox took them all, and root's own
// daemons could open none for its whole run. The sandbox's namespace caps
// them (nested_userns.cc).
TEST(CocoonRun, InotifyInstancesAreCappedPerSandbox) {
  Ran ran = Cocoon({"run", "--json", "-r", "python", "-c",
                    "import ctypes\nlibc = ctypes.CDLL(None)\nn = 0\n"
                    "while n < 1000 and libc.inotify_init() >= 0: n += 1\nprint(n)"},
                   "/");
  json j = Json(ran);
  ASSERT_EQ(j["exit_code"], 0) << j.dump(2);
  EXPECT_EQ(j["stdout"], "16\n") << j.dump(2);
}

// Queued signals are charged to the host user above the sandbox's user
// namespace too: as root, one sandbox filled host root's ~96k and every root
// process got EAGAIN from timer_create and sigqueue for its run. The sandbox
// stops at its own RLIMIT_SIGPENDING.
TEST(CocoonRun, QueuedSignalsStopAtTheSandboxsOwnLimit) {
  Ran ran = Cocoon({"run", "--json", "-r", "python", "-c",
                    "import ctypes, os, signal\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})\nn = 0\n"
                    "while n < 200000 and libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), ctypes.c_void_p(0)) == 0:\n"
                    "  n += 1\nprint(n)"},
                   "/");
  json j = Json(ran);
  ASSERT_EQ(j["exit_code"], 0) << j.dump(2);
  EXPECT_EQ(j["stdout"], "1024\n") << j.dump(2);  // enforcer::kSandboxPendingSignals
  bool reported = false;
  for (const auto& row : j["limits"]) reported |= row["limit"] == "pending_signals" && row["mechanism"] == "rlimit";
  EXPECT_TRUE(reported) << j["limits"].dump(2);
}

// The pid of a host process whose command line contains `marker`, or 0.
pid_t HostProcessWithMarker(const std::string& marker) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos && cmdline.find("enforce") == std::string::npos) {
      return static_cast<pid_t>(std::stoi(name));
    }
  }
  return 0;
}

// The "Uid:" line of /proc/<pid>/status as the host sees it.
std::string HostUidLine(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) == 0) return line;
  }
  return "";
}

// `user 0:0` runs the command as uid 0 inside its namespace, and as a
// nobody on the host: no capability, and as root uid 0 inside is host 65534
// (it once failed at the first step of the mount tree: host root, which
// builds it, had no inside id). The host uid is read from the host's /proc
// while the command waits: inside, the nested user namespace maps only the
// command's own ids (0 -> 0), which says nothing about the host.
TEST(CocoonEnforce, UserZeroInsideIsNobodyOnTheHost) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-user0-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  std::ofstream(dir / "u0.cocoon") << "import \"strict\"\nprofile u0 extends strict {\n  relaxes user\n  user 0:0\n}\n";
  const std::string marker = "cocoon-user0-marker-" + std::to_string(getpid());
  Ran ran;
  std::thread run([&] {
    ran = Cocoon({"enforce", (dir / "u0.cocoon").string(), "--work", (dir / "work").string(), "--json", "--",
                  "/bin/sh", "-c",
                  "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; cat /proc/self/uid_map; "
                  "echo made > /work/made; chown 1:1 /work/made 2>/dev/null && echo CHOWNED; sleep 60; :",
                  marker});
  });
  pid_t sandboxed = 0;
  for (int i = 0; i < 1000 && sandboxed == 0; ++i) {
    sandboxed = HostProcessWithMarker(marker);
    if (sandboxed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string uid_line = sandboxed != 0 ? HostUidLine(sandboxed) : "";
  // The shell has printed everything once its `sleep` child exists; killing
  // the shell, the sandbox's pid 1, then ends the run.
  for (int i = 0; i < 1000 && sandboxed != 0; ++i) {
    std::ifstream children("/proc/" + std::to_string(sandboxed) + "/task/" + std::to_string(sandboxed) + "/children");
    bool sleeping = false;
    for (pid_t child = 0; !sleeping && children >> child;) {
      std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
      std::string name;
      sleeping = std::getline(comm, name) && name == "sleep";
    }
    if (sleeping) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (sandboxed != 0) kill(sandboxed, SIGKILL);
  run.join();
  ASSERT_NE(sandboxed, 0) << "the sandboxed command never appeared in the host's /proc\n" << ran.out << ran.err;
  const std::string host = std::to_string(geteuid() == 0 ? 65534u : geteuid());
  EXPECT_EQ(uid_line, "Uid:\t" + host + "\t" + host + "\t" + host + "\t" + host) << ran.out << ran.err;

  json j = Json(ran);
  std::string out = j["stdout"];
  EXPECT_EQ(out, "0\n0\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
                 "         0          0          1\n")
      << j.dump(2) << ran.err;
  EXPECT_EQ(j["signal"], SIGKILL) << j.dump(2);
  fs::remove_all(dir);
}

// As root the sandbox is host uid 65534, and a work dir too big to copy into
// its quota is staged through an overlay. A root-owned one (a CI checkout)
// is idmapped so that its owner's files are the sandbox's: it can create,
// change and delete there (it once could not even create: the overlay's
// root kept the owner it had at mount time), the results come back owned
// by the dir's owner, and what it left alone is the same inode as before.
TEST(CocoonEnforce, ABigRootOwnedWorkDirIsStagedThroughAnIdmappedOverlay) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: only a root caller runs the sandbox as another host uid";
  fs::path dir = fs::temp_directory_path() / ("cocoon-idmap-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  {
    std::ofstream(dir / "keep.txt") << "keep\n";
    std::ofstream(dir / "edit.txt") << "old\n";
    std::ofstream(dir / "gone.txt") << "gone\n";
    std::ofstream(dir / "sub" / "inner.txt") << "inner\n";
    std::ofstream(dir / "other.txt") << "someone else's\n";
  }
  // Only the dir's owner is mapped: a third owner's file stays read-only.
  ASSERT_EQ(chown((dir / "other.txt").c_str(), 4242, 4242), 0);
  fs::permissions(dir / "other.txt", fs::perms(0644));
  // A hard link outside the work dir sees the original inode: the overlay
  // never writes through to it.
  fs::path outside_link = dir.string() + "-link";
  fs::remove(outside_link);
  fs::create_hard_link(dir / "edit.txt", outside_link);
  // 80 MiB by size (sparse): past the 64 MiB above which the overlay is used,
  // and past strict's 64 MiB quota, so a copy would not fit.
  std::ofstream(dir / "big.bin").close();
  fs::resize_file(dir / "big.bin", 80ull << 20);
  auto inode = [](const fs::path& p) {
    struct stat st {};
    return lstat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  const ino_t keep_inode = inode(dir / "keep.txt"), big_inode = inode(dir / "big.bin");
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", dir.string(), "--json", "--", "/bin/sh",
                    "-c",
                    "set -e; echo new > /work/new.txt; echo more >> /work/edit.txt; rm /work/gone.txt; "
                    "echo added > /work/sub/added.txt; mkdir /work/made; cat /work/keep.txt; "
                    "(echo x >> /work/other.txt) 2>/dev/null && echo other-writable || echo other-read-only; "
                    "cat /work/other.txt"});
  json j = Json(ran);
  ASSERT_EQ(j["exit_code"], 0) << j.dump(2) << ran.err;
  EXPECT_EQ(j["stdout"], "keep\nother-read-only\nsomeone else's\n");
  EXPECT_EQ(j["breakout"]["work_mode"], "staged-overlay");
  EXPECT_EQ(j["committed"], true);
  auto text = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(text(dir / "new.txt"), "new\n");
  EXPECT_EQ(text(dir / "edit.txt"), "old\nmore\n");
  EXPECT_FALSE(fs::exists(dir / "gone.txt"));
  EXPECT_EQ(text(dir / "sub" / "added.txt"), "added\n");
  EXPECT_TRUE(fs::is_directory(dir / "made"));
  EXPECT_EQ(inode(dir / "keep.txt"), keep_inode) << "an untouched original came back as a copy";
  EXPECT_EQ(inode(dir / "big.bin"), big_inode);
  EXPECT_EQ(text(outside_link), "old\n") << "the original inode was written through the overlay";
  EXPECT_EQ(text(dir / "other.txt"), "someone else's\n");
  fs::remove(outside_link);
  for (const char* name : {"new.txt", "edit.txt", "made", "sub/added.txt"}) {
    struct stat st {};
    ASSERT_EQ(lstat((dir / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_uid, 0u) << name << ": results belong to the work dir's owner";
  }
  fs::remove_all(dir);
}

// A longer --timeout raises the CPU-time limit with the wall time; both are
// overrides of the base policy, recorded as such.
TEST(CocoonRun, ALongerTimeoutRecordsBothTimeLimitsAsOverrides) {
  json j = Json(Cocoon({"run", "--json", "--timeout", "20", "--", "/bin/true"}));
  std::vector<std::string> overrides = j["overrides"];
  EXPECT_NE(std::find(overrides.begin(), overrides.end(), "limits.wall_time: 5000 -> 20000 (--timeout)"),
            overrides.end()) << j["overrides"].dump();
  EXPECT_NE(std::find(overrides.begin(), overrides.end(), "limits.cpu_time: 5000 -> 20000 (--timeout)"),
            overrides.end()) << j["overrides"].dump();
}

// A runtime chosen on top of an explicit --policy brings read-only paths
// the policy does not have (python-skill: the host's fonts): each is
// recorded as an override, as --ro is (an MCP client's `language` chooses
// the runtime).
// With --policy FILE -r NAME, what the preset sets itself (its throwaway
// HOME, its caches) wins over the base's, so dotfiles stay out of the work
// dir; what it only inherits from strict (PATH) yields to the base's, and
// --env wins over both. Before, strict's HOME=/work was kept and a dotfile
// written to ~ was committed to the host work dir.
TEST(CocoonRun, APresetsOwnHomeWinsOverTheBasesAndDotfilesStayOutOfTheWorkDir) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-preset-home-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "w");
  const std::string policy = (dir / "base.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\nprofile base extends strict {\n  environment {\n"
                        << "    set PATH \"/usr/bin:/bin:/base-only\"\n    set SHELL \"/base/shell\"\n  }\n}\n";
  const std::string code = "echo \"$HOME $PATH $SHELL\"; echo x > ~/.sh_history; echo y > /work/kept";
  Ran ran = Cocoon({"run", "--policy", policy, "-r", "sh", "--work", (dir / "w").string(), "-c", code});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "/tmp /usr/bin:/bin:/base-only /bin/sh\n") << ran.err;
  EXPECT_FALSE(fs::exists(dir / "w" / ".sh_history")) << "a dotfile was committed to the host work dir";
  EXPECT_TRUE(fs::exists(dir / "w" / "kept")) << ran.err;
  // strict itself, as in the review (HOME /work).
  Ran strict = Cocoon({"run", "--policy", std::string(COCOON_POLICIES_DIR) + "/strict.cocoon", "-r", "sh", "--work",
                       (dir / "w").string(), "-c", "echo $HOME; echo x > ~/.profile_test"});
  EXPECT_EQ(strict.out, "/tmp\n") << strict.err;
  EXPECT_FALSE(fs::exists(dir / "w" / ".profile_test"));
  Ran given = Cocoon({"run", "--policy", policy, "-r", "sh", "--env", "HOME=/work", "-c", "echo $HOME"});
  EXPECT_EQ(given.out, "/work\n") << given.err;
  fs::remove_all(dir);
}

TEST(CocoonRun, ARuntimesExtraReadOnlyPathsAreRecordedAsOverrides) {
  if (!fs::exists("/usr/share/fonts")) GTEST_SKIP() << "SKIPPED: no /usr/share/fonts here to be added by python-skill";
  fs::path policy = fs::temp_directory_path() / ("cocoon-runtime-overrides-" + std::to_string(getpid()) + ".cocoon");
  std::ofstream(policy) << "import \"strict\"\nprofile mine extends strict {\n}\n";
  Ran ran = Cocoon({"run", "--json", "--policy", policy.string(), "-r", "python-skill", "-c", "print(1)"});
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], "1\n") << ran.err;
  std::vector<std::string> overrides = j["overrides"];
  EXPECT_NE(std::find(overrides.begin(), overrides.end(), "filesystem.readonly: /usr/share/fonts (runtime python-skill)"),
            overrides.end()) << j["overrides"].dump();
  fs::remove(policy);
}

// As root the sandbox runs as uid 65534: a script it could not read (a
// mkstemp file, mode 0600) is refused up front with what to do, instead of
// the interpreter's "Permission denied" from inside.
TEST(CocoonRun, ScriptTheSandboxUserCannotReadIsRefusedClearly) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: only root runs map the sandbox user to uid 65534";
  fs::path dir = fs::temp_directory_path() / ("cocoon-script-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all);
  std::ofstream(dir / "s.py") << "print('ran')\n";
  fs::permissions(dir / "s.py", fs::perms::owner_read | fs::perms::owner_write);
  Ran refused = Cocoon({"run", "-r", "python", (dir / "s.py").string()}, "/tmp");
  EXPECT_EQ(refused.status, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("uid 65534"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("-c"), std::string::npos) << refused.err;
  // Only the script itself must be readable: the directories above it are
  // the sandbox's own (its root tmpfs makes them for the bind).
  fs::permissions(dir / "s.py", fs::perms::owner_read | fs::perms::others_read);
  Ran ran = Cocoon({"run", "-r", "python", (dir / "s.py").string()}, "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
  // Run from the directory above, whose read-only bind then holds the
  // script: now the host's directory on the way must let the sandbox user
  // in, and a 0750 one owned by someone else does not.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::create_directories(dir / "sub");
  fs::copy_file(dir / "s.py", dir / "sub" / "s.py");
  fs::permissions(dir / "sub" / "s.py", fs::perms::owner_read | fs::perms::others_read);
  fs::permissions(dir / "sub", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  ASSERT_EQ(chown((dir / "sub").c_str(), 1234, 0), 0);
  Ran enclosed = Cocoon({"run", "-r", "python", (dir / "sub" / "s.py").string()}, dir.string());
  EXPECT_EQ(enclosed.status, 1) << enclosed.out << enclosed.err;
  EXPECT_NE(enclosed.err.find("cannot enter " + (dir / "sub").string()), std::string::npos) << enclosed.err;
  // A directory owned by uid 65534 but by an unmapped group: the user
  // namespace's capabilities do not cover it (they need both ids mapped),
  // so its 0700 stops the bind on the host side.
  fs::create_directories(dir / "nobody");
  fs::copy_file(dir / "s.py", dir / "nobody" / "s.py");
  fs::permissions(dir / "nobody" / "s.py", fs::perms::owner_read | fs::perms::others_read);
  fs::permissions(dir / "nobody", fs::perms::owner_all);
  ASSERT_EQ(chown((dir / "nobody").c_str(), 65534, 1234), 0);
  Ran unmapped_group = Cocoon({"run", "-r", "python", (dir / "nobody" / "s.py").string()}, "/tmp");
  EXPECT_EQ(unmapped_group.status, 1) << unmapped_group.out << unmapped_group.err;
  EXPECT_NE(unmapped_group.err.find((dir / "nobody").string() + " (mode 0700, owner uid 65534) is not searchable"),
            std::string::npos)
      << unmapped_group.err;
  fs::remove_all(dir);
}

// A mount inside the work dir (here a read-only bind at /work/inner/deep; a
// `cocoon run` from a host dir under /work does the same with its cwd) needs
// a mount point in the work tree. It is the sandbox's scaffolding, not a
// result: it is never committed, unless the host dir had it already.
TEST(CocoonEnforce, MountPointsInsideTheWorkDirAreNotCommitted) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-inner-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "shared");
  std::ofstream(dir / "shared" / "data.txt") << "shared\n";
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  fs::permissions(dir / "shared", fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  std::ofstream(dir / "inner.cocoon") << "import \"strict\"\nprofile inner extends strict {\n  filesystem {\n"
                                         "    readonly \"" << (dir / "shared").string() << "\" as \"/work/inner/deep\"\n"
                                         "  }\n}\n";
  Ran ran = Cocoon({"enforce", (dir / "inner.cocoon").string(), "--work", (dir / "work").string(), "--", "/bin/sh",
                    "-c", "cat /work/inner/deep/data.txt && echo result > /work/out.txt"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "shared\n");
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "work")) names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"out.txt"});
  fs::remove_all(dir);
}

// A mount point inside the work dir is created on the host's own files (a
// staged copy of them, or the host dir itself in direct mode). A symlink the
// host dir holds on the way (`inner -> elsewhere`, absolute) must not lead the
// child's mkdir out of the work tree: before pivot_root it would resolve
// against the host root, as host root when cocoon runs as root. The run is
// refused, and nothing appears where the link points.
TEST(CocoonEnforce, ASymlinkInTheWorkDirNeverRedirectsAMountPoint) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-inner-link-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "shared");
  fs::create_directories(dir / "elsewhere");
  std::ofstream(dir / "shared" / "data.txt") << "shared\n";
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  fs::permissions(dir / "shared", fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  fs::create_directory_symlink(dir / "elsewhere", dir / "work" / "inner");
  for (const char* mode : {"", " direct"}) {
    std::ofstream(dir / "inner.cocoon") << "import \"strict\"\nprofile inner extends strict {\n  filesystem {\n"
                                           "    work /work quota 64MiB" << mode << "\n"
                                           "    readonly \"" << (dir / "shared").string() << "\" as \"/work/inner/deep\"\n"
                                           "  }\n}\n";
    Ran ran = Cocoon({"enforce", (dir / "inner.cocoon").string(), "--work", (dir / "work").string(), "--", "/bin/cat",
                      "/work/inner/deep/data.txt"});
    EXPECT_NE(ran.status, 0) << mode << ": ran, printing " << ran.out;
    EXPECT_NE(ran.err.find("/work/inner/deep"), std::string::npos) << mode << ": " << ran.err;
    EXPECT_NE(ran.err.find("a symlink is on the way to the mount point"), std::string::npos) << mode << ": " << ran.err;
    EXPECT_TRUE(fs::is_empty(dir / "elsewhere")) << mode << ": the mount point was made through the symlink";
    EXPECT_TRUE(fs::is_symlink(dir / "work" / "inner")) << mode;
  }
  fs::remove_all(dir);
}

// `hide` inside the work dir is an error (the work dir is the caller's own
// files, staged), but inside a bind nested in the work dir it hides that
// bind's host file, as anywhere else.
TEST(CocoonEnforce, HideInsideTheWorkDirIsRefusedButHidesInABindNestedThere) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-hide-work-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "secrets");
  std::ofstream(dir / "secrets" / "key") << "PRIVATE\n";
  std::ofstream(dir / "secrets" / "public") << "PUBLIC\n";
  std::ofstream(dir / "work" / ".env") << "TOKEN\n";
  for (const fs::path& p : {dir, dir / "secrets"}) {
    fs::permissions(p, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  }
  for (const char* f : {"key", "public"}) {
    fs::permissions(dir / "secrets" / f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  }
  auto policy = [&](const std::string& hidden) {
    std::string path = (dir / "p.cocoon").string();
    std::ofstream(path) << "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    readonly \""
                        << (dir / "secrets").string() << "\" as \"/work/secrets\"\n    hide " << hidden
                        << "\n  }\n}\n";
    return path;
  };
  Ran in_work = Cocoon({"enforce", policy("/work/.env"), "--work", (dir / "work").string(), "--", "/bin/cat",
                        "/work/.env"});
  EXPECT_NE(in_work.status, 0);
  EXPECT_EQ(in_work.out, "");
  EXPECT_NE(in_work.err.find("cannot hide '/work/.env'"), std::string::npos) << in_work.err;
  Ran in_bind = Cocoon({"enforce", policy("/work/secrets/key"), "--work", (dir / "work").string(), "--", "/bin/sh",
                        "-c", "cat /work/secrets/key /work/secrets/public"});
  EXPECT_EQ(in_bind.status, 0) << in_bind.err;
  EXPECT_EQ(in_bind.out, "PUBLIC\n") << "the hidden file was readable, or the other one was not";
  fs::remove_all(dir);
}

// `hide` wins over a bind of the same path: a child of strict hiding the
// /etc/passwd strict binds, a profile hiding what it also binds, and a
// `cocoon run --ro` of a path the base hides (refused: a flag does not undo
// a hide; a --ro of the directory around it runs with the file masked).
// Before, a mask found nothing "inside" a bind at its own target and was
// skipped: each printed the hidden data.
TEST(CocoonRun, HideWinsOverABindOfThatPathAndAFlagCannotUndoIt) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-hide-bind-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data" / "sub");
  std::ofstream(dir / "data" / "secret.txt") << "TOPSECRET\n";
  std::ofstream(dir / "data" / "sub" / "s2") << "SUBSECRET\n";
  std::ofstream(dir / "data" / "show.py") << "print(open('" << (dir / "data" / "secret.txt").string() << "').read())\n";
  for (const fs::path& p : {dir, dir / "data", dir / "data" / "sub"}) {
    fs::permissions(p, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  }
  for (const fs::path& p : {dir / "data" / "secret.txt", dir / "data" / "sub" / "s2", dir / "data" / "show.py"}) {
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  }
  const std::string secret = (dir / "data" / "secret.txt").string(), sub = (dir / "data" / "sub").string();
  const std::string policy = (dir / "hide.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\nprofile hide extends strict {\n  relaxes filesystem\n  filesystem {\n"
                        << "    readonly \"" << secret << "\" \"" << sub << "\"\n"
                        << "    hide \"" << secret << "\" \"" << sub << "\" /etc/passwd\n  }\n}\n";
  Ran enforced = Cocoon({"enforce", policy, "--", "/bin/sh", "-c",
                         "cat " + secret + " " + sub + "/s2; wc -c < /etc/passwd; ls -A " + sub + "; echo end"});
  EXPECT_EQ(enforced.status, 0) << enforced.err;
  EXPECT_EQ(enforced.out.find("SECRET"), std::string::npos) << enforced.out;
  EXPECT_NE(enforced.out.find("0\nend\n"), std::string::npos) << "/etc/passwd not empty, or sub not: " << enforced.out;
  // The base hides the file; --ro of it is refused, naming the hide, and
  // so is a script there. --ro of its directory runs, the file masked.
  Ran ro = Cocoon({"run", "--policy", policy, "--ro", secret, "--", "/bin/cat", secret});
  EXPECT_EQ(ro.status, 1) << ro.err;
  EXPECT_EQ(ro.out, "");
  EXPECT_NE(ro.err.find("--ro " + secret + ": the base policy hides " + secret), std::string::npos) << ro.err;
  Ran inside = Cocoon({"run", "--policy", policy, "--ro", sub + "/s2", "--", "/bin/cat", sub + "/s2"});
  EXPECT_EQ(inside.status, 1) << inside.err;
  EXPECT_NE(inside.err.find("the base policy hides " + sub), std::string::npos) << inside.err;
  Ran around = Cocoon({"run", "--policy", policy, "--ro", (dir / "data").string(), "--", "/bin/sh", "-c",
                       "cat " + secret + "; cat " + (dir / "data" / "show.py").string() + " >/dev/null && echo shared"});
  EXPECT_EQ(around.status, 0) << around.err;
  EXPECT_EQ(around.out, "shared\n") << around.err;
  const std::string hidden_script = (dir / "data" / "sub" / "s2").string();
  Ran script = Cocoon({"run", "--policy", policy, "-r", "sh", hidden_script});
  EXPECT_EQ(script.status, 1) << script.err;
  EXPECT_EQ(script.out, "");
  EXPECT_NE(script.err.find(hidden_script + ": the base policy hides " + sub), std::string::npos) << script.err;
  fs::remove_all(dir);
}

// The command's own execve goes through the seccomp listener when a rule
// logs (or kills) execve, and the child waits for the answer before the
// launch is complete: the launcher answers it. Before, it waited 30 s for an
// EOF that could not come and refused every run of such a policy.
TEST(CocoonEnforce, ARuleOnExecveAppliesToTheCommandsOwnExec) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-execve-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto policy = [&](const std::string& action) {
    std::string path = (dir / (action + ".cocoon")).string();
    std::ofstream(path) << "import \"strict\"\nprofile p extends strict {\n  syscalls {\n    " << action
                        << " execve\n  }\n}\n";
    return path;
  };
  const auto begin = std::chrono::steady_clock::now();
  Ran logged = Cocoon({"enforce", policy("log"), "--json", "--", "/bin/sh", "-c", "echo hi; /bin/true"});
  ASSERT_EQ(logged.status, 0) << logged.err;
  json outcome = json::parse(logged.out);
  EXPECT_EQ(outcome["stdout"], "hi\n");
  ASSERT_EQ(outcome["denied_syscalls"].size(), 1u) << outcome.dump(2);
  EXPECT_EQ(outcome["denied_syscalls"][0]["name"], "execve");
  EXPECT_EQ(outcome["denied_syscalls"][0]["action"], "log");
  EXPECT_EQ(outcome["denied_syscalls"][0]["count"], 2) << "the command's exec and the shell's";
  Ran missing = Cocoon({"enforce", policy("log"), "--", "/nonexistent-command"});
  EXPECT_EQ(missing.status, 127) << missing.err;
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  Ran killed = Cocoon({"enforce", policy("kill"), "--", "/bin/echo", "never"});
  EXPECT_NE(killed.status, 0);
  EXPECT_EQ(killed.out, "");
  EXPECT_NE(killed.err.find("kill rule matched"), std::string::npos) << killed.err;
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(20)) << "a launch waited for a timeout";
  fs::remove_all(dir);
}

// `default log` allows and records each call no rule names, `default
// notify` answers it EPERM and records it; a named kill rule still kills.
// Before, the supervisor had no rule for such a call and killed the whole
// sandbox (exit 137, seccomp_kill, a "kill" row for #27). As root and as
// uid 65534 (through setpriv).
TEST(CocoonEnforce, ASupervisedDefaultAnswersTheCallsNoRuleNames) {
  const bool root = geteuid() == 0;
  fs::path dir = fs::temp_directory_path() / ("cocoon-default-log-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "home");
  for (const char* action : {"log", "notify"}) {
    std::ofstream(dir / (std::string(action) + ".cocoon"))
        << "import \"strict\"\nprofile p extends strict {\n  relaxes syscalls\n  syscalls {\n    default " << action
        << "\n    kill getppid\n  }\n}\n";
  }
  if (root) {
    for (const char* name : {"", "home", "log.cocoon", "notify.cocoon"}) {
      ASSERT_EQ(chown((dir / name).c_str(), 65534, 65534), 0) << name;
    }
  }
  // mincore, cachestat, statmount and a number no kernel has, each with
  // zero arguments: "result/errno" per call.
  const std::string calls =
      "import ctypes, os\nl = ctypes.CDLL(None, use_errno=True)\n"
      "for n in (27, 451, 457, 999):\n"
      "    ctypes.set_errno(0)\n"
      "    print(l.syscall(n, 0, 0, 0, 0), ctypes.get_errno(), end=' ')\n"
      "print(flush=True)\n";
  auto run = [&](const char* action, const std::string& script, bool as_root) {
    std::vector<std::string> args = {"enforce", (dir / (std::string(action) + ".cocoon")).string(), "--json", "--",
                                     "/usr/bin/python3", "-c", script};
    std::string binary = COCOON_BINARY;
    if (!as_root) {
      args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
      binary = "/usr/bin/setpriv";
    }
    return Cocoon(args, "/", {{"HOME", (dir / "home").string()}, {"XDG_CACHE_HOME", (dir / "home").string()}},
                  binary);
  };
  std::vector<bool> modes = {root};
  if (root && access("/usr/bin/setpriv", X_OK) == 0) modes.push_back(false);
  if (root && modes.size() == 1) {
    std::cerr << "SKIPPED, NOT PASSED (in part): no setpriv, the rootless run was not checked\n";
  }
  for (bool as_root : modes) {
    const std::string who = as_root ? "root" : "rootless";
    for (const char* action : {"log", "notify"}) {
      Ran ran = run(action, calls, as_root);
      json j = Json(ran);
      ASSERT_EQ(j["termination_reason"], "exited") << who << " " << action << ": " << j.dump(2) << ran.err;
      EXPECT_EQ(j["exit_code"], 0) << who << " " << action << ": " << j.dump(2);
      // log: mincore(0, 0, 0) runs and succeeds (the others run and fail
      // on their arguments or as unknown); notify: each is EPERM.
      if (std::string(action) == "log") {
        EXPECT_EQ(j["stdout"].get<std::string>().substr(0, 4), "0 0 ") << who << ": " << j.dump(2);
      } else {
        EXPECT_EQ(j["stdout"], "-1 1 -1 1 -1 1 -1 1 \n") << who << ": " << j.dump(2);
      }
      for (int nr : {27, 451, 457, 999}) {
        bool recorded = false;
        for (const auto& row : j["denied_syscalls"]) {
          if (row["number"] == nr && row["arch"] == "x86_64") {
            recorded = true;
            EXPECT_EQ(row["action"], action) << who << ": " << row.dump();
          }
        }
        EXPECT_TRUE(recorded) << who << " " << action << ": no row for " << nr << " in " << j.dump(2);
      }
      Ran killed = run(action, "import os\nos.getppid()\nprint('survived')\n", as_root);
      json k = Json(killed);
      EXPECT_EQ(k["termination_reason"], "seccomp_kill") << who << " " << action << ": " << k.dump(2);
      EXPECT_EQ(k["stdout"], "") << who << " " << action;
    }
  }
  fs::remove_all(dir);
}

// A script's arguments are the script's, with or without `--`, even when
// they look like cocoon's options; `enforce` takes its command only after
// `--`, so none of its words is read as an option either.
TEST(CocoonRun, AScriptsArgumentsAreNeverCocoonsOptions) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-args-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_exec | fs::perms::others_read);
  std::ofstream(dir / "a.py") << "import sys; print(sys.argv[1:])\n";
  fs::permissions(dir / "a.py", fs::perms::owner_all | fs::perms::others_read);
  const std::string script = (dir / "a.py").string();
  json j = Json(Cocoon({"run", "--json", "-r", "python", script, "--allow-network", "--mem", "4096"}, dir.string()));
  EXPECT_EQ(j["stdout"], "['--allow-network', '--mem', '4096']\n") << j.dump(2);
  for (const auto& o : j["overrides"]) EXPECT_EQ(o.get<std::string>().find("network"), std::string::npos) << o;
  Ran help = Cocoon({"run", "-r", "python", script, "--", "--help"}, dir.string());
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_EQ(help.out, "['--help']\n");
  Ran enforce = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "/bin/echo", "--json"});
  EXPECT_EQ(enforce.status, 2);  // --json is the command's here: a usage error, nothing on stdout
  EXPECT_EQ(enforce.out, "");
  EXPECT_NE(enforce.err.find("after `--`"), std::string::npos) << enforce.err;
  Ran echoed = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--", "/bin/echo", "--json", "--work", "/"});
  EXPECT_EQ(echoed.status, 0) << echoed.err;
  EXPECT_EQ(echoed.out, "--json --work /\n");
  fs::remove_all(dir);
}

TEST(CocoonRun, TimeoutExits124) {
  Ran ran = Cocoon({"run", "--timeout", "1", "-r", "python", "-c", "while True: pass"});
  EXPECT_EQ(ran.status, 124) << ran.err;
}

TEST(CocoonRun, CwdIsReadOnlyAndNetworkIsOff) {
  std::string dir = fs::temp_directory_path() / ("cocoon-ro-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir + "/input.txt") << "from the host\n";
  Ran ran = Cocoon({"run", "--json", "-r", "python", "-c",
                    "import socket\nprint(open('input.txt').read(), end='')\n"
                    "try:\n  open('new.txt','w'); print('wrote')\nexcept OSError: print('read-only')\n"
                    "try:\n  socket.create_connection(('127.0.0.1', 22), 1); print('net')\nexcept OSError: print('no net')\n"},
                   dir);
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], "from the host\nread-only\nno net\n") << ran.err;
  EXPECT_FALSE(fs::exists(dir + "/new.txt"));
  fs::remove_all(dir);
}

TEST(CocoonRun, OpeningFlagsAreOverridesAndExplainDoesNotRun) {
  Ran ran = Cocoon({"run", "--explain", "--allow-network", "--mem", "512", "-r", "python", "-c", "print(1)"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.out.find("network: off -> on (--allow-network)"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("limits.memory"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("profile cocoon-run extends python"), std::string::npos) << ran.out;
  Ran tighter = Cocoon({"run", "--json", "--mem", "64", "--timeout", "2", "-r", "python", "-c", "print(1)"});
  json j = Json(tighter);
  for (const auto& o : j["overrides"]) EXPECT_EQ(o.get<std::string>().find("limits."), std::string::npos) << o;
}

// A runtime's heap cap follows --mem: node's --max-old-space-size stayed at
// 96 MiB (written for strict's 128 MiB) under --mem 1G, and a program that
// needed 500 MiB died of V8's heap limit far below the one asked for.
TEST(CocoonRun, TheRuntimesHeapFlagFollowsTheMemoryLimit) {
  auto command_of = [](std::vector<std::string> args) {
    json j = Json(Cocoon(std::move(args)));
    std::string joined;
    for (const auto& word : j["command"]) joined += word.get<std::string>() + " ";
    return joined;
  };
  Ran probe = Cocoon({"run", "--explain", "--json", "-r", "node", "-c", "1"});
  if (probe.status != 0 && probe.err.find("not installed") != std::string::npos) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED: node is not installed, so its heap flag was not checked: " << probe.err;
  }
  EXPECT_NE(command_of({"run", "--explain", "--json", "-r", "node", "-c", "1"}).find("--max-old-space-size=96 "),
            std::string::npos)
      << "three quarters of strict's 128 MiB";
  const std::string big = command_of({"run", "--explain", "--json", "--mem", "1G", "-r", "node", "-c", "1"});
  EXPECT_NE(big.find("--max-old-space-size=768 "), std::string::npos) << big;
  EXPECT_EQ(big.find("memory_mib"), std::string::npos) << big;
}

// `cocoon run` binds the current directory read-only at its own path; under
// /tmp that is inside the sandbox's writable tmpfs, whose Landlock write
// rights reach into the bind, so a host FIFO there can be opened for
// writing (a review fed a host reader that way). The Outcome says so; a
// directory outside every writable mount gets no such note.
TEST(CocoonRun, ACurrentDirectoryUnderTheSandboxesTmpfsIsNotedForItsFifos) {
  char templ[] = "/tmp/cocoon-fifo-note-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string under_tmp = templ;
  json j = Json(Cocoon({"run", "--json", "--", "/bin/true"}, under_tmp));
  EXPECT_EQ(j["exit_code"], 0) << j.dump();
  EXPECT_NE(j["notes"].dump().find(under_tmp + " is bound read-only inside the sandbox's writable /tmp"),
            std::string::npos)
      << j["notes"].dump();
  EXPECT_NE(j["notes"].dump().find("FIFOs can be opened for writing"), std::string::npos) << j["notes"].dump();
  fs::remove_all(under_tmp);
  char elsewhere_templ[] = "/var/tmp/cocoon-fifo-note-XXXXXX";
  ASSERT_NE(mkdtemp(elsewhere_templ), nullptr);
  const std::string elsewhere = elsewhere_templ;
  ASSERT_EQ(chmod(elsewhere.c_str(), 0755), 0);
  json outside = Json(Cocoon({"run", "--json", "--", "/bin/true"}, elsewhere));
  EXPECT_EQ(outside["notes"].dump().find("FIFOs"), std::string::npos) << outside["notes"].dump();
  fs::remove_all(elsewhere);
}

// An agent asking what a run would do gets JSON when it asks for JSON, and
// nothing runs.
TEST(CocoonRun, ExplainWithJsonPrintsOneObject) {
  Ran ran = Cocoon({"run", "--explain", "--json", "--allow-network", "-r", "python", "-c", "open('/tmp/ran','w')"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  json j = Json(ran);
  EXPECT_EQ(j["profile"], "cocoon-run");
  EXPECT_EQ(j["base_profile"], "python");
  EXPECT_EQ(j["policy_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["command"].back(), "open('/tmp/ran','w')");
  EXPECT_NE(j["overrides"].dump().find("network: off -> on (--allow-network)"), std::string::npos) << j.dump();
  EXPECT_NE(j["explanation"].get<std::string>().find("Network"), std::string::npos);
  EXPECT_NE(j["generated_policy"].get<std::string>().find("profile cocoon-run extends python"), std::string::npos);
  EXPECT_EQ(j.count("exit_code"), 0u) << "--explain must not run the command";
}

// `cocoon run --work .` twice from one shell, as the help's own example
// (`cocoon run --work . -- make -j2`) is used: the commit swapped the whole
// work dir for a new one, so the shell was left in a deleted directory and
// the second run failed ("work dir .: the current directory: No such file
// or directory"). The commit now keeps the work dir itself.
TEST(CocoonRun, TwoWorkDotRunsFromOneShellBothCommitIntoTheSameDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-work-dot-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "proj");
  struct stat before {};
  ASSERT_EQ(stat((dir / "proj").c_str(), &before), 0);
  const std::string script = "\"$COCOON\" run --work . -- /bin/sh -c 'echo 1 >> /work/log' && "
                             "\"$COCOON\" run --work . -- /bin/sh -c 'echo 2 >> /work/log' && cat log";
  Ran ran = Cocoon({"-c", script}, (dir / "proj").string(), {{"COCOON", COCOON_BINARY}}, "/bin/sh");
  EXPECT_EQ(ran.status, 0) << ran.out << ran.err;
  EXPECT_EQ(ran.out, "1\n2\n") << ran.err;
  struct stat after {};
  ASSERT_EQ(stat((dir / "proj").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the work dir was replaced";
  fs::remove_all(dir);
}

// Rootless, a staged run's commit in a work dir holding a directory of
// another user's (a root-owned build/ left by `sudo make`): rename(2) of a
// directory into another parent needs write permission on that directory,
// which an unprivileged committer lacks, so such a work dir is swapped
// whole. But the new tree's build/ (the copy-in's copy) is the caller's, so
// the swap gave root's build/ and its files to uid 65534, silently (this
// test used to expect that commit). Now the swap is refused: nothing is
// committed (exit 125), build/ stays root's, and the run's result is kept
// in a .cocoon-commit-...-kept dir beside the work dir, which breakout.error
// names with whose entry it would have changed.
TEST(CocoonRun, RootlessRunWithARootOwnedDirectoryInTheWorkDirKeepsItsOwnerAndTheResult) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to make a root-owned build/ in a user's work dir";
  if (access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  const fs::path base = fs::temp_directory_path() / ("cocoon-foreign-dir-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "work" / "src");
  fs::create_directories(base / "home");
  std::ofstream(base / "work" / "a") << "a\n";
  std::ofstream(base / "work" / "src" / "s") << "s\n";
  for (const fs::path& p : {base, base / "work", base / "work" / "a", base / "work" / "src",
                            base / "work" / "src" / "s", base / "home"}) {
    ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0) << p;
  }
  fs::create_directories(base / "work" / "build");  // root's, 0755
  std::ofstream(base / "work" / "build" / "out") << "root\n";
  Ran ran = Cocoon({"--reuid=65534", "--regid=65534", "--clear-groups", COCOON_BINARY, "run", "--json", "--work",
                    (base / "work").string(), "--", "/bin/sh", "-c", "echo more >> src/s"},
                   "/", {{"HOME", (base / "home").string()}, {"XDG_CACHE_HOME", (base / "home").string()}},
                   "/usr/bin/setpriv");
  EXPECT_EQ(ran.status, 125) << ran.out << ran.err;
  json j = Json(ran);
  EXPECT_EQ(j["committed"], false) << j.dump(2);
  EXPECT_EQ(j["breakout"].value("verified", ""), "failed") << j.dump(2);
  const std::string error = j["breakout"].value("error", "");
  EXPECT_NE(error.find("would have made 'build' (uid 0's) this user's (uid 65534)"), std::string::npos) << error;
  // The host dir as it was, owners included.
  std::ifstream unchanged(base / "work" / "src" / "s"), root_out(base / "work" / "build" / "out");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(unchanged)), {}), "s\n");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(root_out)), {}), "root\n");
  struct stat st {};
  ASSERT_EQ(lstat((base / "work" / "build").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "build/ changed owner";
  ASSERT_EQ(lstat((base / "work" / "build" / "out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "build/out changed owner";
  // The run's result: whole, in the one -kept dir the error names.
  std::vector<fs::path> kept;
  for (const auto& entry : fs::directory_iterator(base)) {
    if (entry.path().filename().string().rfind(".cocoon-commit-", 0) == 0) kept.push_back(entry.path());
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].string().substr(kept[0].string().size() - 5), "-kept");
  EXPECT_NE(error.find(kept[0].string()), std::string::npos) << error;
  std::ifstream result(kept[0] / "src" / "s");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(result)), {}), "s\nmore\n");
  fs::remove_all(base);
}

// Rootless, a work dir of the caller's own that is itself read-only (0555,
// its subdirectories writable): every rename in it needs write permission
// on it, so the entry-by-entry commit failed ("swapping in 'src':
// Permission denied", exit 125). It now has owner write for the install
// and its exact mode back after it; it stays the same directory.
TEST(CocoonRun, RootlessCommitIntoAReadOnlyWorkDirOfTheCallersOwnCommitsAndKeepsItsMode) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to run cocoon as another (unprivileged) user";
  if (access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  const fs::path base = fs::temp_directory_path() / ("cocoon-ro-workdir-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "work" / "src");
  fs::create_directories(base / "home");
  std::ofstream(base / "work" / "src" / "s") << "s\n";
  for (const fs::path& p : {base, base / "work", base / "work" / "src", base / "work" / "src" / "s", base / "home"}) {
    ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0) << p;
  }
  ASSERT_EQ(chmod((base / "work").c_str(), 0555), 0);
  struct stat before {};
  ASSERT_EQ(stat((base / "work").c_str(), &before), 0);
  Ran ran = Cocoon({"--reuid=65534", "--regid=65534", "--clear-groups", COCOON_BINARY, "run", "--json", "--work",
                    (base / "work").string(), "--", "/bin/sh", "-c", "echo more >> src/s"},
                   "/", {{"HOME", (base / "home").string()}, {"XDG_CACHE_HOME", (base / "home").string()}},
                   "/usr/bin/setpriv");
  EXPECT_EQ(ran.status, 0) << ran.out << ran.err;
  std::ifstream committed(base / "work" / "src" / "s");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(committed)), {}), "s\nmore\n");
  struct stat after {};
  ASSERT_EQ(stat((base / "work").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0555u) << std::oct << (after.st_mode & 07777);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the work dir was replaced";
  fs::remove_all(base);
}

// A current directory that no longer exists (removed after the shell
// entered it) is said to be that, not "a system or shared path" with an
// empty name.
TEST(CocoonRun, ARemovedCurrentDirectoryIsNamedAsSuch) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-removed-cwd-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Ran ran = Cocoon({"-c", "mkdir gone && cd gone && rmdir ../gone && \"$COCOON\" run -- /bin/true"}, dir.string(),
                   {{"COCOON", COCOON_BINARY}}, "/bin/sh");
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.err.find("the current directory is not mounted: its path cannot be found"), std::string::npos)
      << ran.err;
  EXPECT_EQ(ran.err.find("(a system or shared path)"), std::string::npos) << ran.err;
  fs::remove_all(dir);
}

// Code on stdin is read under --explain too: over 64 KiB it is staged as a
// file at /cocoon/main.py, and the explanation showed `-c ''` and a policy
// without that mount, whose hash was not the run's.
TEST(CocoonRun, ExplainReadsCodeOnStdinAsTheRunDoes) {
  const std::string code = "# " + std::string(70 * 1024, 'x') + "\nprint(6*7)\n";
  json explained = Json(Cocoon({"run", "--explain", "--json", "-r", "python"}, "/tmp", {}, COCOON_BINARY, code));
  json ran = Json(Cocoon({"run", "--json", "-r", "python"}, "/tmp", {}, COCOON_BINARY, code));
  EXPECT_EQ(ran["stdout"], "42\n") << ran.dump();
  EXPECT_EQ(explained["policy_sha256"], ran["policy"]["sha256"]) << explained["generated_policy"];
  EXPECT_EQ(explained["command"].back(), "/cocoon/main.py") << explained["command"];
  EXPECT_NE(explained["generated_policy"].get<std::string>().find("as \"/cocoon/main.py\""), std::string::npos)
      << explained["generated_policy"];
}

// A name --env gives a value is explained as set by the flag, not passed
// from the caller (the sandbox gets the flag's value); the value stays out.
TEST(CocoonRun, ExplainSaysAnEnvFlagSetsItsName) {
  Ran text = Cocoon({"run", "--explain", "--env", "TOKEN=sk-flag-value", "--", "/bin/true"}, "/tmp");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("set  TOKEN by --env"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("pass TOKEN from the caller"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("sk-flag-value"), std::string::npos) << text.out;
  json j = Json(Cocoon({"run", "--explain", "--json", "--env", "TOKEN=sk-flag-value", "--", "/bin/true"}, "/tmp"));
  EXPECT_NE(j["explanation"].get<std::string>().find("set  TOKEN by --env"), std::string::npos) << j["explanation"];
}

// --allow-network over an allow-list base says what it widens: "off -> on"
// was wrong there, in the output and in the audit log's launch event.
TEST(CocoonRun, AllowNetworkOverAnAllowListNamesTheAllowList) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-allow-list-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path policy = dir / "allow.cocoon";
  std::ofstream(policy) << "import \"strict\"\nprofile allow extends strict {\n  network allow { 1.1.1.1:443 }\n}\n";
  Ran explained = Cocoon({"run", "--explain", "--policy", policy.string(), "--allow-network", "--", "/bin/true"}, "/tmp");
  ASSERT_EQ(explained.status, 0) << explained.err;
  EXPECT_NE(explained.out.find("network: allow-list -> on (--allow-network)"), std::string::npos) << explained.out;
  EXPECT_EQ(explained.out.find("off -> on"), std::string::npos) << explained.out;
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  Ran ran = Cocoon({"run", "--policy", policy.string(), "--allow-network", "--audit-log", log, "--audit-key", key,
                    "--", "/bin/true"},
                   "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  std::ifstream in(log);
  bool launch_seen = false;
  for (std::string line; std::getline(in, line);) {
    json event = json::parse(line, nullptr, false);
    if (event.is_discarded() || event["event"]["action"] != "sandbox-launched") continue;
    launch_seen = true;
    EXPECT_NE(event["cocoon"]["sandbox"]["overrides"].dump().find("network: allow-list -> on (--allow-network)"),
              std::string::npos)
        << event.dump();
  }
  EXPECT_TRUE(launch_seen) << "no sandbox-launched event in " << log;
  fs::remove_all(dir);
}

// What the node preset's --disallow-code-generation-from-strings does, as
// its description now says: eval and new Function are refused in the main
// context, and the vm module is not covered (the sandbox is the boundary).
// The preset once claimed untrusted code "cannot build code from strings".
TEST(CocoonRun, TheNodePresetRefusesEvalButNotTheVmModule) {
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "SKIPPED LOUDLY: node is not installed (setup.sh installs it)";
  Ran ran = Cocoon({"run", "--json", "-r", "node", "-c",
                    "try { eval('1'); console.log('eval ran') } catch (e) { console.log('eval refused') }\n"
                    "console.log(require('vm').runInThisContext('6*7'))"},
                   "/tmp");
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], "eval refused\n42\n") << ran.err;
  Ran explained = Cocoon({"explain", COCOON_POLICIES_DIR "/runtimes/node.cocoon"});
  EXPECT_NE(explained.out.find("vm and child processes not covered"), std::string::npos) << explained.out;
}

// `enforce` takes the audit trail from the environment as run, pipeline and
// mcp do: a deployment that sets COCOON_AUDIT_LOG got unaudited enforce runs.
TEST(CocoonEnforce, TheAuditTrailComesFromTheEnvironmentToo) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-enforce-env-audit-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--", "/bin/true"}, "",
                   {{"COCOON_AUDIT_LOG", log}, {"COCOON_AUDIT_KEY", key}});
  EXPECT_EQ(ran.status, 0) << ran.err;
  ASSERT_TRUE(fs::exists(log)) << "no audit log written";
  Ran verified = Cocoon({"audit", "verify", log, "--trust", key + ".pub"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  Ran half = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--", "/bin/true"}, "",
                    {{"COCOON_AUDIT_LOG", log}});
  EXPECT_EQ(half.status, 2) << "a log without a key is a usage error: " << half.err;
  fs::remove_all(dir);
}

// A run that fails after its launch event (here: the command is missing)
// still gets an exit event that says why, and the log is sealed: a SIEM never
// sees a launch with no end.
TEST(CocoonEnforce, AnAuditedRunThatFailsAfterItsLaunchIsClosedInTheLog) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-failed-run-audit-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--audit-log", log, "--audit-key", key, "--",
                    "/nonexistent"});
  EXPECT_EQ(ran.status, 127) << ran.err;
  std::ifstream in(log);
  std::vector<json> events;
  for (std::string line; std::getline(in, line);) events.push_back(json::parse(line));
  ASSERT_GE(events.size(), 2u);
  const json& exited = events[events.size() - 2];
  EXPECT_EQ(exited["event"]["action"], "process-exited") << exited.dump();
  EXPECT_EQ(exited["cocoon"]["exit"]["termination_reason"], "failed");
  EXPECT_NE(exited["cocoon"]["exit"]["error"].get<std::string>().find("execve"), std::string::npos);
  EXPECT_EQ(events.back()["event"]["action"], "log-seal") << events.back().dump();
  EXPECT_EQ(Cocoon({"audit", "verify", log, "--trust", key + ".pub"}).status, 0);
  // A usage error is 3, never 2 ("intact, not sealed"): a script must not
  // read a missing --trust value as a healthy live log.
  EXPECT_EQ(Cocoon({"audit", "verify", log, "--trust"}).status, 3);
  EXPECT_EQ(Cocoon({"audit", "verify", log, "--threads", "x", "--trust", key + ".pub"}).status, 3);
  fs::remove_all(dir);
}

// The reviewer's repro: a log cut right after a seal (`head -n N`, each
// `audit demo` is one sealed session) verifies 0, as no hash chain can tell;
// verify prints the head, and --expect-seq/--expect-head with it catch the
// cut (exit 2, naming what is missing).
TEST(CocoonAudit, VerifyPrintsTheHeadAndAnAnchorCatchesACutAtASeal) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-audit-anchor-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.log").string(), cut = (dir / "cut.log").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  ASSERT_EQ(Cocoon({"audit", "demo", "--key", key, "--log", log}).status, 0);
  std::ifstream first(log);
  std::string first_session((std::istreambuf_iterator<char>(first)), {});
  ASSERT_EQ(Cocoon({"audit", "demo", "--key", key, "--log", log}).status, 0);
  Ran whole = Cocoon({"audit", "verify", log, "--trust", key + ".pub"});
  ASSERT_EQ(whole.status, 0) << whole.out << whole.err;
  std::smatch head;
  ASSERT_TRUE(std::regex_search(whole.out, head, std::regex("\nhead: seq ([0-9]+) hash ([0-9a-f]{64}) [(]")))
      << whole.out;
  const std::string seq = head[1], hash = head[2];
  std::ofstream(cut) << first_session;  // the first session only: it ends with its seal
  Ran unanchored = Cocoon({"audit", "verify", cut, "--trust", key + ".pub"});
  EXPECT_EQ(unanchored.status, 0) << "the chain alone cannot see a cut at a seal: " << unanchored.out;
  Ran anchored = Cocoon({"audit", "verify", cut, "--trust", key + ".pub", "--expect-seq", seq, "--expect-head", hash});
  EXPECT_EQ(anchored.status, 2) << anchored.out << anchored.err;
  EXPECT_NE(anchored.out.find("but the recorded head (seq " + seq + ", hash " + hash + ") is "), std::string::npos)
      << anchored.out;
  EXPECT_NE(anchored.out.find("line(s) further on: those lines are missing"), std::string::npos) << anchored.out;
  Ran still = Cocoon({"audit", "verify", log, "--trust", key + ".pub", "--expect-seq", seq, "--expect-head", hash});
  EXPECT_EQ(still.status, 0) << still.out << still.err;
  Ran bad = Cocoon({"audit", "verify", log, "--trust", key + ".pub", "--expect-head", "abc"});
  EXPECT_EQ(bad.status, 3) << bad.out;
  EXPECT_NE(bad.err.find("--expect-head 'abc' is not a line hash (64 hex digits)"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

// verify maps each log; a log that another program truncates while it is
// mapped (a writer's crash recovery, logrotate's copytruncate) raised
// SIGBUS where its lost pages were read, and verify died (exit 135). It now
// says so and exits 3 (unreadable input).
// Deterministic, with no polling and no clock: verify opens and maps its
// files in order before it reads any of them, and opening a FIFO for
// reading blocks until a writer opens it (fifo(7)). So when the test's own
// open of `mapped` (for writing) returns, verify has mapped big.log; it
// then blocks on `release` until the test, having truncated big.log, opens
// that one too. (It used to hold a lock on a second log and watch /proc for
// verify to open it: verify reads without the lock after 10 s, so a test
// descheduled that long on a loaded CI machine saw an intact log, exit 0.)
TEST(CocoonAudit, VerifyOfALogThatShrinksWhileMappedFailsClearly) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-verify-shrink-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "big.log").string();
  const std::string mapped = (dir / "mapped.fifo").string(), release = (dir / "release.fifo").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  ASSERT_EQ(Cocoon({"audit", "demo", "--key", key, "--log", log, "--count", "2000", "--batch", "500"}).status, 0);
  ASSERT_EQ(mkfifo(mapped.c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(release.c_str(), 0600), 0);
  const std::string err_path = (dir / "err").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = open("/dev/null", O_WRONLY);
    dup2(err, STDERR_FILENO);
    dup2(null, STDOUT_FILENO);
    execl(COCOON_BINARY, COCOON_BINARY, "audit", "verify", log.c_str(), mapped.c_str(), release.c_str(), "--trust",
          (key + ".pub").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Should verify end early (a failure), the test's blocking opens below
  // must not wait forever: once it has exited, a reader of our own
  // (O_RDWR never blocks on a FIFO) lets them return.
  int wait_status = 0;
  std::vector<int> unblockers;
  std::thread reaper([&] {
    waitpid(pid, &wait_status, 0);
    for (const std::string& fifo : {mapped, release}) unblockers.push_back(open(fifo.c_str(), O_RDWR | O_CLOEXEC));
  });
  const int mapped_fd = open(mapped.c_str(), O_WRONLY | O_CLOEXEC);  // returns once verify opened it: big.log is mapped
  EXPECT_GE(mapped_fd, 0) << strerror(errno);
  EXPECT_EQ(truncate(log.c_str(), 0), 0) << strerror(errno);
  const int release_fd = open(release.c_str(), O_WRONLY | O_CLOEXEC);  // verify goes on, and reads big.log
  EXPECT_GE(release_fd, 0) << strerror(errno);
  reaper.join();
  for (int fd : unblockers) close(fd);
  close(mapped_fd);
  close(release_fd);
  std::ifstream in(err_path);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const int status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  EXPECT_EQ(status, 3) << err;
  EXPECT_NE(err.find("cocoon audit verify: " + log + ": the log shrank while being read (truncated or rotated by "
                     "another program); nothing was verified: verify again"),
            std::string::npos)
      << err;
  fs::remove_all(dir);
}

// Audit signing loads libcrypto.so.3 on first use (audit/libcrypto.h). When
// it cannot be loaded, an audited run is refused before anything runs: a
// clear error, no audit log, nothing committed to the work dir.
TEST(CocoonRun, AuditedRunWithoutLibcryptoIsRefusedAndWritesNothing) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-nolibcrypto-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "lib");
  fs::create_directories(dir / "work");
  std::ofstream(dir / "lib" / "libcrypto.so.3").close();  // found first, and not a library
  const std::string key = (dir / "key").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  const std::string log = (dir / "audit.ndjson").string();
  Ran ran = Cocoon({"run", "--work", (dir / "work").string(), "--audit-log", log, "--audit-key", key, "--",
                    "/bin/sh", "-c", "echo ran > /work/out.txt"},
                   "", {{"LD_LIBRARY_PATH", (dir / "lib").string()}});
  EXPECT_NE(ran.status, 0);
  EXPECT_NE(ran.err.find("libcrypto.so.3 (Debian package libssl3)"), std::string::npos) << ran.err;
  EXPECT_FALSE(fs::exists(log));
  EXPECT_FALSE(fs::exists(dir / "work" / "out.txt"));
  Ran keygen = Cocoon({"audit", "keygen", "--out", (dir / "key2").string()}, "",
                      {{"LD_LIBRARY_PATH", (dir / "lib").string()}});
  EXPECT_NE(keygen.status, 0);
  EXPECT_FALSE(fs::exists(dir / "key2"));
  fs::remove_all(dir);
}

// A writable bind lets the sandbox change, rename or remove what is below it
// (rootless, as the files' owner): one over Cocoon's artifact cache would let
// it rewrite the compiled policy of every later launch, one over the audit
// trail erase or forge the record, one of /sys or /dev reach the kernel's
// interfaces. Any bind of the host's /proc shows every host process. Each
// is refused before anything runs, and nothing is written.
TEST(CocoonEnforce, WritableBindsOverTrustAnchorsAndHostProcAreRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-wguard-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  fs::create_directories(dir / "trail");
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()}};
  const std::string key = (dir / "trail" / "key").string(), log = (dir / "trail" / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  auto run_with = [&](const std::string& bind, const std::string& source) {
    std::ofstream(dir / "p.cocoon") << "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n"
                                       "  filesystem {\n    " << bind << " \"" << source << "\" as \"/mnt/x\"\n  }\n}\n";
    return Cocoon({"enforce", (dir / "p.cocoon").string(), "--audit-log", log, "--audit-key", key, "--", "/bin/sh",
                   "-c", "echo x > /mnt/x/planted"}, "", env);
  };
  struct Case {
    std::string bind, source, message;
  };
  const std::vector<Case> cases = {
      {"writable", (dir / "cache").string(), "overlaps Cocoon's artifact cache"},
      {"writable", dir.string(), "overlaps Cocoon's artifact cache"},
      {"writable", (dir / "trail").string(), "holds the audit"},
      {"writable", "/sys/fs/cgroup", "the kernel's interfaces"},
      {"readonly", "/proc", "the host's /proc"},
      {"readonly", "/", "the host's /proc"},  // binds are recursive: / brings /proc along
  };
  for (const Case& c : cases) {
    Ran ran = run_with(c.bind, c.source);
    EXPECT_NE(ran.status, 0) << c.bind << " " << c.source;
    EXPECT_NE(ran.err.find(c.message), std::string::npos) << c.bind << " " << c.source << ": " << ran.err;
  }
  EXPECT_FALSE(fs::exists(dir / "cache" / "planted"));
  EXPECT_FALSE(fs::exists(dir / "planted"));
  EXPECT_FALSE(fs::exists(dir / "trail" / "planted"));
  EXPECT_FALSE(fs::exists(log)) << "refused before the audit log was opened";
  // Without an audit trail the enforcer refuses the host's /proc itself, on
  // the path it resolves for the mount (a symlink to /proc included).
  fs::create_symlink("/proc", dir / "proc-link");
  for (const std::string& source : {std::string("/proc"), std::string("/"), (dir / "proc-link").string()}) {
    std::ofstream(dir / "p.cocoon") << "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n"
                                       "  filesystem {\n    readonly \"" << source << "\" as \"/mnt/x\"\n  }\n}\n";
    Ran ran = Cocoon({"enforce", (dir / "p.cocoon").string(), "--", "/bin/sh", "-c", "echo ran"}, "", env);
    EXPECT_NE(ran.status, 0) << source;
    EXPECT_EQ(ran.out.find("ran"), std::string::npos) << source;
    EXPECT_NE(ran.err.find("the host's /proc"), std::string::npos) << source << ": " << ran.err;
  }
  // Shared memory is not one of the kernel's interfaces: /dev/shm may be bound.
  std::ofstream(dir / "shm.cocoon") << "import \"strict\"\nprofile p extends strict {\n  relaxes filesystem\n"
                                       "  filesystem {\n    writable /dev/shm as /mnt/shm\n  }\n}\n";
  Ran shm = Cocoon({"enforce", (dir / "shm.cocoon").string(), "--", "/bin/sh", "-c", "test -d /mnt/shm"}, "", env);
  EXPECT_EQ(shm.status, 0) << shm.err;
  fs::remove_all(dir);
}

// A work dir's contents are committed back after the run, so one that holds
// Cocoon's artifact cache (compiled policies later launches trust) or the
// audit key or log is refused before anything runs, as is a system tree;
// a --copy of the audit key too. Nothing is written in any of them.
TEST(CocoonRun, AWorkDirOverTheCacheOrTheAuditTrailIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-guard-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "trail");
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()}};
  const std::string key = (dir / "trail" / "key").string(), log = (dir / "trail" / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  const std::string write = "echo x > /work/planted";
  for (const fs::path& work : {dir / "cache", dir}) {
    Ran ran = Cocoon({"run", "--work", work.string(), "--", "/bin/sh", "-c", write}, "", env);
    EXPECT_NE(ran.status, 0);
    EXPECT_NE(ran.err.find("overlaps Cocoon's artifact cache"), std::string::npos) << ran.err;
    EXPECT_FALSE(fs::exists(work / "planted"));
  }
  Ran trail = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--work", (dir / "trail").string(),
                      "--audit-log", log, "--audit-key", key, "--", "/bin/sh", "-c", write}, "", env);
  EXPECT_NE(trail.status, 0);
  EXPECT_NE(trail.err.find("holds the audit"), std::string::npos) << trail.err;
  EXPECT_FALSE(fs::exists(dir / "trail" / "planted"));
  EXPECT_FALSE(fs::exists(log));
  Ran copy = Cocoon({"run", "--work", (dir / "work").string(), "--copy", key, "--audit-log", log, "--audit-key", key,
                     "--", "/bin/true"}, "", env);
  EXPECT_NE(copy.status, 0);
  EXPECT_NE(copy.err.find("is or holds the audit key"), std::string::npos) << copy.err;
  EXPECT_FALSE(fs::exists(dir / "work" / "key"));
  for (const char* system_dir : {"/etc", "/usr/bin", "/etc/cron.d", "/var/tmp", "/var/lib"}) {
    if (!fs::is_directory(system_dir)) continue;
    Ran system = Cocoon({"run", "--work", system_dir, "--", "/bin/true"}, "", env);
    EXPECT_NE(system.status, 0) << system_dir;
    EXPECT_NE(system.err.find("a system directory"), std::string::npos) << system.err;
  }
  // A log named relative to the current dir, not created yet, is still seen
  // inside the work dir "." (it would be created there, then overwritten by
  // the commit).
  Ran relative = Cocoon({"run", "--work", ".", "--audit-log", "audit.ndjson", "--audit-key", key, "--", "/bin/sh",
                         "-c", write}, (dir / "work").string(), env);
  EXPECT_NE(relative.status, 0);
  EXPECT_NE(relative.err.find("holds the audit log"), std::string::npos) << relative.err;
  EXPECT_FALSE(fs::exists(dir / "work" / "audit.ndjson"));
  // A read-only bind that shows a key the sandbox user could read.
  fs::permissions(key, fs::perms::others_read, fs::perm_options::add);
  Ran shown = Cocoon({"run", "--ro", (dir / "trail").string(), "--audit-log", (dir / "audit.ndjson").string(),
                      "--audit-key", key, "--", "/bin/true"}, "", env);
  EXPECT_NE(shown.status, 0);
  EXPECT_NE(shown.err.find("would show the audit key"), std::string::npos) << shown.err;
  // A work dir of its own still runs and commits.
  Ran fine = Cocoon({"run", "--work", (dir / "work").string(), "--", "/bin/sh", "-c", write}, "", env);
  EXPECT_EQ(fine.status, 0) << fine.err;
  EXPECT_TRUE(fs::exists(dir / "work" / "planted"));
  // ...and its Outcome (like its launch event) names the paths it used.
  std::ofstream(dir / "input.txt") << "in";
  Ran named = Cocoon({"run", "--json", "--work", (dir / "work").string(), "--copy", (dir / "input.txt").string(), "--",
                      "/bin/true"}, "", env);
  ASSERT_EQ(named.status, 0) << named.err;
  const json overrides = json::parse(named.out)["overrides"];
  auto named_one = [&](const std::string& prefix) {
    return std::any_of(overrides.begin(), overrides.end(),
                       [&](const json& o) { return o.get<std::string>().rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(named_one("workdir: " + (dir / "work").string())) << overrides.dump();
  EXPECT_TRUE(named_one("copy: " + (dir / "input.txt").string())) << overrides.dump();
  fs::remove_all(dir);
}

// A `--copy` lands in the work dir before the policy's mounts are made: one
// the policy mounts over (`readonly X as /work/tools`) or into was hidden
// from the sandbox and lost, and the host's work dir got an empty tools/
// back. Now it is refused before anything runs or is written, in the
// words `cocoon check` uses for a policy `copy`.
TEST(CocoonEnforce, AnExtraCopyAPolicyMountHidesIsRefusedBeforeAnythingRuns) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-copy-hidden-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "tools");
  fs::create_directories(dir / "host" / "tools");
  fs::create_directories(dir / "host" / "data");
  std::ofstream(dir / "host" / "tools" / "t") << "copied";
  std::ofstream(dir / "host" / "data" / "d") << "copied";
  std::ofstream(dir / "p.cocoon") << "import \"strict\"\nprofile p extends strict {\n  filesystem {\n    readonly "
                                  << (dir / "tools").string() << " as /work/tools\n    tmpfs /work/data/cache\n  }\n}\n";
  Ran at = Cocoon({"enforce", (dir / "p.cocoon").string(), "--work", (dir / "work").string(), "--copy",
                   (dir / "host" / "tools").string(), "--", "/bin/sh", "-c", "echo ran > /work/ran"});
  EXPECT_EQ(at.status, 1) << at.out << at.err;  // a refused run
  EXPECT_NE(at.err.find("copy to 'tools' lands at '/work/tools', under the read-only mount of '/work/tools': the "
                        "mount hides the copy from the sandbox, and what it hides is lost"),
            std::string::npos)
      << at.err;
  Ran holds = Cocoon({"enforce", (dir / "p.cocoon").string(), "--work", (dir / "work").string(), "--copy",
                      (dir / "host" / "data").string(), "--", "/bin/sh", "-c", "echo ran > /work/ran"});
  EXPECT_EQ(holds.status, 1) << holds.out << holds.err;
  EXPECT_NE(holds.err.find("copy to 'data' lands at '/work/data', which holds the tmpfs mount of '/work/data/cache': "
                           "the mount hides that part of the copy from the sandbox, and what it hides is lost"),
            std::string::npos)
      << holds.err;
  EXPECT_TRUE(fs::is_empty(dir / "work")) << "nothing ran and nothing was written to the host's work dir";
  // A copy no mount touches still runs.
  std::ofstream(dir / "host" / "other") << "copied";
  Ran fine = Cocoon({"enforce", (dir / "p.cocoon").string(), "--work", (dir / "work").string(), "--copy",
                     (dir / "host" / "other").string(), "--", "/bin/cat", "/work/other"});
  EXPECT_EQ(fine.status, 0) << fine.err;
  EXPECT_EQ(fine.out, "copied");
  // An optional bind whose source this host lacks is not mounted, so it
  // hides nothing: the copy at its target runs (it was refused).
  std::ofstream(dir / "q.cocoon") << "import \"strict\"\nprofile q extends strict {\n  filesystem {\n    readonly optional "
                                  << (dir / "absent").string() << " as /work/tools\n  }\n}\n";
  fs::remove_all(dir / "work");
  fs::create_directories(dir / "work");
  Ran optional = Cocoon({"enforce", (dir / "q.cocoon").string(), "--work", (dir / "work").string(), "--copy",
                         (dir / "host" / "tools").string(), "--", "/bin/cat", "/work/tools/t"});
  EXPECT_EQ(optional.status, 0) << optional.err;
  EXPECT_EQ(optional.out, "copied");
  fs::remove_all(dir);
}

// `runuser -u USER -- cocoon ARGS...` (root only), or cocoon itself for "".
Ran CocoonAs(const std::string& user, std::vector<std::string> args, const std::string& cwd = "") {
  if (user.empty()) return Cocoon(args, cwd);
  const std::string runuser = fs::exists("/usr/sbin/runuser") ? "/usr/sbin/runuser" : "/sbin/runuser";
  args.insert(args.begin(), {"-u", user, "--", COCOON_BINARY});
  return Cocoon(args, cwd, {}, runuser);
}

// The users to run a sandbox as: root (when we are) and, as root, the
// unprivileged cocoonrev (`useradd -m cocoonrev`): rootless, the sandbox
// user is the caller and reads its 0600 files.
std::vector<std::string> RootAndRootless() {
  std::vector<std::string> users;
  if (geteuid() != 0) return {""};
  users.push_back("");
  if (getpwnam("cocoonrev") != nullptr) users.push_back("cocoonrev");
  return users;
}

// The guard compared paths, so a second name for the audit key (a hard
// link in the current dir, which is bound into the sandbox) handed the
// private key to the sandbox, rootless: `cat k` printed it. A key or a log
// with more than one link is refused before anything runs, as root and
// rootless; nothing is written.
TEST(CocoonRun, AHardLinkedAuditKeyOrLogIsRefused) {
  const std::vector<std::string> users = RootAndRootless();
  if (users.size() < 2 && geteuid() == 0) std::cerr << "NOTE: no user cocoonrev: the rootless half is not run\n";
  for (const std::string& user : users) {
    SCOPED_TRACE(user.empty() ? "root" : user);
    fs::path dir = fs::temp_directory_path() / ("cocoon-hardlink-" + std::to_string(getpid()) + user);
    fs::remove_all(dir);
    for (const char* sub : {"keys", "logs", "proj"}) fs::create_directories(dir / sub);
    if (!user.empty()) {
      const passwd* pw = getpwnam(user.c_str());
      ASSERT_NE(pw, nullptr);
      for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        ASSERT_EQ(chown(entry.path().c_str(), pw->pw_uid, pw->pw_gid), 0);
      }
      ASSERT_EQ(chown(dir.c_str(), pw->pw_uid, pw->pw_gid), 0);
    }
    const std::string key = (dir / "keys" / "k").string(), log = (dir / "logs" / "audit.log").string();
    const std::string proj = (dir / "proj").string();
    ASSERT_EQ(CocoonAs(user, {"audit", "keygen", "--out", key}).status, 0);
    ASSERT_EQ(link(key.c_str(), (dir / "proj" / "k").c_str()), 0);
    for (const std::vector<std::string>& where : {std::vector<std::string>{}, {"--work", proj}}) {
      std::vector<std::string> args = {"run"};
      args.insert(args.end(), where.begin(), where.end());
      args.insert(args.end(), {"--audit-log", log, "--audit-key", key, "--", "/bin/sh", "-c",
                               "cat k /work/k 2>/dev/null; echo ran"});
      Ran leaked = CocoonAs(user, args, proj);
      EXPECT_NE(leaked.status, 0) << leaked.out;
      EXPECT_EQ(leaked.out.find("PRIVATE KEY"), std::string::npos) << "the sandbox read the audit key";
      EXPECT_EQ(leaked.out.find("ran"), std::string::npos) << leaked.out;
      EXPECT_NE(leaked.err.find("audit signing key " + key + " has 2 hard links"), std::string::npos) << leaked.err;
      EXPECT_FALSE(fs::exists(log));
    }
    ASSERT_EQ(unlink((dir / "proj" / "k").c_str()), 0);
    Ran first = CocoonAs(user, {"run", "--audit-log", log, "--audit-key", key, "--", "/bin/true"}, proj);
    ASSERT_EQ(first.status, 0) << first.err;
    ASSERT_EQ(link(log.c_str(), (dir / "proj" / "audit.log").c_str()), 0);
    std::ifstream before_in(log);
    const std::string before((std::istreambuf_iterator<char>(before_in)), {});
    Ran shown = CocoonAs(user, {"run", "--audit-log", log, "--audit-key", key, "--", "/bin/sh", "-c",
                                "cat audit.log; echo ran"}, proj);
    EXPECT_NE(shown.status, 0);
    EXPECT_EQ(shown.out.find("ran"), std::string::npos) << shown.out;
    EXPECT_NE(shown.err.find("audit log " + log + " has 2 hard links"), std::string::npos) << shown.err;
    std::ifstream after_in(log);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), {}), before) << "the refused run wrote to the log";
    fs::remove_all(dir);
  }
}

// A directory bound somewhere else is the same directory: a work dir that is
// a bind mount of the audit trail's directory holds the log and key though
// no path says so. The guard compares inodes too (root: a private mount
// namespace for the bind).
TEST(CocoonRun, AWorkDirThatIsABindMountOfTheAuditTrailIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): needs root to bind-mount a directory";
  fs::path dir = fs::temp_directory_path() / ("cocoon-bind-alias-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "trail");
  fs::create_directories(dir / "view");
  const std::string key = (dir / "trail" / "key").string(), log = (dir / "trail" / "audit.log").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  const std::string view = (dir / "view").string();
  for (const std::string flag : {"--work", "--copy"}) {
    std::vector<std::string> args = {"-m", "sh", "-c", "mount --bind \"$1\" \"$2\" || exit 77; shift 2; exec \"$@\"",
                                     "sh", (dir / "trail").string(), view, COCOON_BINARY, "run"};
    if (flag == "--copy") args.insert(args.end(), {"--work", (dir / "work").string()});
    args.insert(args.end(), {flag, view, "--audit-log", log, "--audit-key", key, "--", "/bin/sh", "-c",
                             "echo x > /work/planted"});
    fs::create_directories(dir / "work");
    Ran ran = Cocoon(args, "", {}, fs::exists("/usr/bin/unshare") ? "/usr/bin/unshare" : "/bin/unshare");
    if (ran.status == 77) GTEST_SKIP() << "SKIPPED, NOT PASSED: cannot bind-mount here: " << ran.err;
    EXPECT_NE(ran.status, 0) << flag;
    EXPECT_NE(ran.err.find(flag == "--work" ? "holds the audit log " + log : "is or holds the audit key " + key),
              std::string::npos)
        << flag << ": " << ran.err;
    EXPECT_FALSE(fs::exists(dir / "trail" / "planted"));
    EXPECT_FALSE(fs::exists(log)) << "refused before the audit log was opened";
  }
  fs::remove_all(dir);
}

std::map<int, json> McpResponsesById(const std::string& out);  // below, with the MCP tests

// The policy a run enforces must not be in reach of the run: a work dir
// (committed back) or a writable bind (written in place) that holds the
// policy file, a file it imports, or a place an import looks first (the
// policy's own directory, before the shipped policies/) would let the
// sandbox rewrite or shadow the policy of the next run. Each command that
// launches (enforce, run --policy, pipeline, mcp --policy) refuses before
// anything runs, and says which file and what to do.
TEST(CocoonEnforce, AWorkDirOrWritableMountHoldingThePolicyIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-policy-guard-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "p");
  fs::create_directories(dir / "out");
  fs::create_directories(dir / "cache");
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()}};
  const std::string policy = (dir / "p" / "policy.cocoon").string();
  const std::string text = "import \"strict\"\nprofile p extends strict {\n  network off\n}\n";
  std::ofstream(policy) << text;
  auto policy_text = [&] {
    std::ifstream in(policy);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string rewrite = "sed -i s/network.off/network.on/ /work/policy.cocoon; echo x > /work/ran";
  const std::string advice = "Keep the policy and what it imports outside the work dir and writable mounts";
  // The reviewer's repro: `cd p && cocoon enforce policy.cocoon --work .`.
  Ran enforce = Cocoon({"enforce", "policy.cocoon", "--work", ".", "--", "/bin/sh", "-c", rewrite},
                       (dir / "p").string(), env);
  EXPECT_EQ(enforce.status, 1) << enforce.err;
  EXPECT_NE(enforce.err.find("holds the policy file " + policy), std::string::npos) << enforce.err;
  EXPECT_NE(enforce.err.find(advice), std::string::npos) << enforce.err;
  Ran run = Cocoon({"run", "--policy", policy, "--work", (dir / "p").string(), "--", "/bin/sh", "-c", rewrite}, "", env);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("holds the policy file " + policy), std::string::npos) << run.err;
  Ran pipeline = Cocoon({"pipeline", "--policy", policy, "--work", (dir / "p").string(), "-s", "bash:" + rewrite}, "", env);
  EXPECT_NE(pipeline.status, 0) << pipeline.err;
  EXPECT_NE(pipeline.err.find("holds the policy file " + policy), std::string::npos) << pipeline.out << pipeline.err;
  EXPECT_EQ(policy_text(), text);
  EXPECT_FALSE(fs::exists(dir / "p" / "ran"));
  // The quieter way: no policy file in the work dir, but the place an
  // import looks before the shipped policies/ (`import "runtimes/python"`
  // tries <policy dir>/runtimes/python.cocoon first).
  fs::create_directories(dir / "q" / "runtimes");
  std::ofstream(dir / "q" / "policy.cocoon") << "import \"runtimes/python\"\nprofile q extends python {\n}\n";
  Ran shadow = Cocoon({"enforce", (dir / "q" / "policy.cocoon").string(), "--work", (dir / "q" / "runtimes").string(),
                       "--", "/bin/sh", "-c", "echo x > /work/ran"}, "", env);
  EXPECT_EQ(shadow.status, 1) << shadow.err;
  EXPECT_NE(shadow.err.find("holds " + (dir / "q" / "runtimes" / "python.cocoon").string() +
                            ", where the policy's include or import looks before the file it reads"),
            std::string::npos) << shadow.err;
  EXPECT_FALSE(fs::exists(dir / "q" / "runtimes" / "ran"));
  // ...and where such a place leads: a dangling link there into the work dir
  // (creating the link's target makes it a file `import "strict"` reads).
  fs::create_directories(dir / "s");
  std::ofstream(dir / "s" / "policy.cocoon") << text;
  fs::create_symlink(dir / "out" / "strict.cocoon", dir / "s" / "strict.cocoon");
  Ran through_link = Cocoon({"enforce", (dir / "s" / "policy.cocoon").string(), "--work", (dir / "out").string(), "--",
                             "/bin/sh", "-c", "echo x > /work/ran"}, "", env);
  EXPECT_EQ(through_link.status, 1) << through_link.err;
  EXPECT_NE(through_link.err.find("holds " + (dir / "s" / "strict.cocoon").string()), std::string::npos)
      << through_link.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "ran"));
  // A writable mount of the policy's own directory, from enforce and from
  // mcp --policy (whose calls extend it).
  fs::create_directories(dir / "w");
  const std::string bound = (dir / "w" / "policy.cocoon").string();
  std::ofstream(bound) << "import \"strict\"\nprofile w extends strict {\n  filesystem {\n    writable \"" +
                              (dir / "w").string() + "\" as /w\n  }\n}\n";
  Ran writable = Cocoon({"enforce", bound, "--", "/bin/sh", "-c", "echo x > /w/ran"}, "", env);
  EXPECT_EQ(writable.status, 1) << writable.err;
  EXPECT_NE(writable.err.find("the writable mount of " + (dir / "w").string() + " holds the policy file " + bound),
            std::string::npos) << writable.err;
  std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","method":"notifications/initialized"})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"echo x > /w/ran"}}})j"
      "\n";
  Ran mcp = Cocoon({"mcp", "--policy", bound}, "", env, COCOON_BINARY, requests);
  std::map<int, json> results = McpResponsesById(mcp.out);
  ASSERT_TRUE(results.count(1)) << mcp.out << mcp.err;
  EXPECT_TRUE(results[1]["result"]["isError"].get<bool>()) << results[1].dump(2);
  EXPECT_NE(results[1].dump().find("holds the policy file"), std::string::npos) << results[1].dump(2);
  EXPECT_FALSE(fs::exists(dir / "w" / "ran"));
  // A work dir of its own, beside the policy, runs.
  Ran fine = Cocoon({"enforce", policy, "--work", (dir / "out").string(), "--", "/bin/sh", "-c", "echo x > /work/ran"},
                    "", env);
  EXPECT_EQ(fine.status, 0) << fine.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "ran"));
  fs::remove_all(dir);
}

// The policy search path ($COCOON_POLICY_PATH, else the shipped policies/)
// holds the presets every later `cocoon run -r NAME` and every `import
// "strict"` trusts: a work dir (staged or direct) or writable mount that is,
// holds or lies in one of its directories is refused, as the artifact cache
// is, and nothing is written. Before, `--work <search dir>/runtimes` ran and
// the sandbox could turn the network on in python.cocoon for every later
// run, which recorded no override.
TEST(CocoonRun, AWorkDirOrWritableMountOverThePolicySearchPathIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-search-guard-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  fs::create_directories(dir / "other");
  fs::create_directories(dir / "tree");
  fs::copy(COCOON_POLICIES_DIR, dir / "tree" / "pol", fs::copy_options::recursive);
  const std::vector<std::pair<std::string, std::string>> env = {
      {"COCOON_CACHE_DIR", (dir / "cache").string()},
      {"COCOON_POLICY_PATH", (dir / "other").string() + ":" + (dir / "tree" / "pol").string()}};
  const std::string runtimes = (dir / "tree" / "pol" / "runtimes").string();
  const std::string python = runtimes + "/python.cocoon";
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string before = text_of(python);
  const std::string rewrite = "echo 'profile python extends strict { network on }' > /work/python.cocoon; echo x > /work/ran";
  Ran run = Cocoon({"run", "--work", runtimes, "--", "/bin/sh", "-c", rewrite}, "", env);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("work dir " + runtimes + ": is inside the policy search directory " + (dir / "tree" / "pol").string()),
            std::string::npos) << run.err;
  Ran holds = Cocoon({"run", "--work", (dir / "tree").string(), "--", "/bin/sh", "-c", "echo x > /work/ran"}, "", env);
  EXPECT_EQ(holds.status, 1) << holds.err;
  EXPECT_NE(holds.err.find("holds the policy search directory"), std::string::npos) << holds.err;
  // A policy's own direct work dir and writable mount, from enforce.
  const std::string direct = (dir / "direct.cocoon").string();
  std::ofstream(direct) << "import \"strict\"\nprofile d extends strict {\n  relaxes filesystem\n  filesystem {\n"
                        << "    work /work direct\n  }\n}\n";
  Ran enforce_direct = Cocoon({"enforce", direct, "--work", runtimes, "--", "/bin/sh", "-c", rewrite}, "", env);
  EXPECT_EQ(enforce_direct.status, 1) << enforce_direct.err;
  EXPECT_NE(enforce_direct.err.find("is inside the policy search directory"), std::string::npos) << enforce_direct.err;
  const std::string writable = (dir / "writable.cocoon").string();
  std::ofstream(writable) << "import \"strict\"\nprofile w extends strict {\n  relaxes filesystem\n  filesystem {\n"
                          << "    writable \"" << runtimes << "\" as /w\n  }\n}\n";
  Ran bound = Cocoon({"enforce", writable, "--", "/bin/sh", "-c", "echo x > /w/ran"}, "", env);
  EXPECT_EQ(bound.status, 1) << bound.err;
  EXPECT_NE(bound.err.find("the writable mount of " + runtimes + " is inside the policy search directory"),
            std::string::npos) << bound.err;
  EXPECT_EQ(text_of(python), before);
  EXPECT_FALSE(fs::exists(runtimes + "/ran"));
  EXPECT_FALSE(fs::exists(dir / "tree" / "ran"));
  // A work dir beside the search path runs.
  fs::create_directories(dir / "w");
  Ran fine = Cocoon({"run", "--work", (dir / "w").string(), "--", "/bin/sh", "-c", "echo x > /work/ran"}, "", env);
  EXPECT_EQ(fine.status, 0) << fine.err;
  EXPECT_TRUE(fs::exists(dir / "w" / "ran"));
  fs::remove_all(dir);
}

// The guard compares where the policy files really are: a search dir whose
// runtimes/ is a symlink to another directory keeps its presets there, and
// a work dir or writable mount of that directory is refused as the search
// dir itself is. Before, the resolved path of the search dir was compared
// as a string, the work dir was not below it, and the sandbox could turn
// the network on in python.cocoon for every later `cocoon run -r python`.
TEST(CocoonRun, AWorkDirOverASearchDirsSymlinkedRuntimesIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-search-link-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  fs::create_directories(dir / "sp");
  fs::copy(std::string(COCOON_POLICIES_DIR) + "/strict.cocoon", dir / "sp" / "strict.cocoon");
  fs::copy(std::string(COCOON_POLICIES_DIR) + "/runtimes", dir / "rt_real", fs::copy_options::recursive);
  fs::create_directory_symlink("../rt_real", dir / "sp" / "runtimes");
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()},
                                                                {"COCOON_POLICY_PATH", (dir / "sp").string()}};
  const std::string real_runtimes = (dir / "rt_real").string();
  auto text_of = [](const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string before = text_of(dir / "rt_real" / "python.cocoon");
  const std::string rewrite = "echo 'profile python extends strict { network on }' > /work/python.cocoon";
  Ran run = Cocoon({"run", "--work", real_runtimes, "--", "/bin/sh", "-c", rewrite}, "", env);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("work dir " + real_runtimes + ": is the runtimes directory " + real_runtimes +
                         " of the policy search directory " + (dir / "sp").string()),
            std::string::npos) << run.err;
  // A preset file of its own linked from elsewhere is guarded where it is.
  fs::create_directories(dir / "elsewhere");
  fs::rename(dir / "sp" / "strict.cocoon", dir / "elsewhere" / "strict.cocoon");
  fs::create_symlink(dir / "elsewhere" / "strict.cocoon", dir / "sp" / "strict.cocoon");
  Ran file = Cocoon({"run", "--work", (dir / "elsewhere").string(), "--", "/bin/sh", "-c", "echo x > /work/ran"}, "", env);
  EXPECT_EQ(file.status, 1) << file.err;
  EXPECT_NE(file.err.find("holds the policy file " + (dir / "elsewhere" / "strict.cocoon").string()), std::string::npos)
      << file.err;
  EXPECT_EQ(text_of(dir / "rt_real" / "python.cocoon"), before);
  EXPECT_FALSE(fs::exists(dir / "elsewhere" / "ran"));
  fs::remove_all(dir);
}

// The artifact cache keys a policy by its own bytes and checks the hashes
// of what it imported; a file put since where an import looks first (the
// policy's directory, before the shipped strict) would be imported now, so
// it is a miss, and the run enforces what the policy now means. Before, the
// cached strict was used until the policy itself changed.
TEST(CocoonEnforce, AFilePutWhereAnImportLooksFirstIsACacheMiss) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-shadow-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "p");
  fs::create_directories(dir / "cache");
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()}};
  const std::string policy = (dir / "p" / "policy.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\nprofile p extends strict {\n}\n";
  auto sha = [&] {
    Ran ran = Cocoon({"enforce", policy, "--json", "--", "/bin/true"}, "", env);
    EXPECT_EQ(ran.status, 0) << ran.err;
    return Json(ran)["policy"]["sha256"].get<std::string>();
  };
  const std::string shipped = sha();
  EXPECT_EQ(sha(), shipped) << "the same files, the same policy";
  std::ifstream strict(COCOON_POLICIES_DIR "/strict.cocoon");
  std::stringstream planted;
  planted << strict.rdbuf() << "\n# put here after the policy was cached\n";
  std::ofstream(dir / "p" / "strict.cocoon") << planted.str();
  EXPECT_NE(sha(), shipped) << "the cached entry was used although `import \"strict\"` now reads another file";
  fs::remove_all(dir);
}

// Waits until a run started now would take `paths` (made before it) for the
// host's own: their ctimes behind the coarse clock by two of its ticks
// (enforcer/workdir/change_floor.h). Waits for the clock, measures nothing.
void WaitUntilTheClockHasPassed(const std::vector<fs::path>& paths) {
  struct timespec newest {};
  for (const fs::path& path : paths) {
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0) << path;
    if (st.st_ctim.tv_sec > newest.tv_sec || (st.st_ctim.tv_sec == newest.tv_sec && st.st_ctim.tv_nsec > newest.tv_nsec)) {
      newest = st.st_ctim;
    }
  }
  struct timespec tick {};
  clock_getres(CLOCK_REALTIME_COARSE, &tick);
  const int64_t margin = 2 * (tick.tv_sec * 1'000'000'000 + tick.tv_nsec);
  const int64_t newest_ns = newest.tv_sec * 1'000'000'000 + newest.tv_nsec;
  for (;;) {
    struct timespec now {};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec * 1'000'000'000 + now.tv_nsec - margin > newest_ns) return;
    usleep(1000);
  }
}

// Runs cocoon as the caller (root or not), or rootless as uid 65534 when
// the test is root (setpriv), with a HOME and cache of its own in `home`.
Ran CocoonMaybeRootless(bool rootless, std::vector<std::string> args, const fs::path& home) {
  std::string binary = COCOON_BINARY;
  if (rootless && geteuid() == 0) {
    args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
    binary = "/usr/bin/setpriv";
  }
  return Cocoon(args, "", {{"HOME", home.string()}, {"XDG_CACHE_HOME", home.string()},
                           {"COCOON_CACHE_DIR", (home / "cache").string()}}, binary);
}

// A `writable` bind is written in place, like a direct work dir, and now
// verified after the run like one: a setuid copy of a binary the sandbox
// made there (rootless: owned by the caller, and any host user running it
// would get the caller's uid) loses its bits, its FIFO and escaping link are
// removed, each is a finding of the Outcome naming the mount, and
// breakout.clean is false. Before, all of it stayed and the Outcome said
// clean. The host's own entries there are left alone.
void CheckAWritableBindKeepsNothingDangerous(bool rootless) {
  if (rootless && geteuid() == 0 && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  }
  fs::path dir = fs::temp_directory_path() / ("cocoon-wb-" + std::to_string(getpid()) + (rootless ? "-rl" : ""));
  fs::remove_all(dir);
  fs::create_directories(dir / "wb");
  fs::create_directories(dir / "home");
  std::ofstream(dir / "wb.cocoon") << "import \"strict\"\nprofile wb extends strict {\n  filesystem {\n    writable \"" +
                                          (dir / "wb").string() + "\" as /wb\n  }\n}\n";
  std::ofstream(dir / "wb" / "own-helper") << "#!/bin/sh\n";
  ASSERT_EQ(mkfifo((dir / "wb" / "own-fifo").c_str(), 0644), 0);
  fs::create_symlink("/usr/bin/python3", dir / "wb" / "own-link");
  if (geteuid() == 0) {
    // The sandbox (and rootless cocoon) is uid 65534 on the host.
    for (const fs::path& p : {dir, dir / "wb", dir / "home", dir / "wb.cocoon", dir / "wb" / "own-helper",
                              dir / "wb" / "own-fifo"}) {
      ASSERT_EQ(lchown(p.c_str(), 65534, 65534), 0) << p;
    }
  }
  ASSERT_EQ(chmod((dir / "wb" / "own-helper").c_str(), 04755), 0);  // after chown, which clears it
  WaitUntilTheClockHasPassed({dir / "wb" / "own-helper", dir / "wb" / "own-fifo", dir / "wb" / "own-link"});
  Ran ran = CocoonMaybeRootless(rootless, {"enforce", (dir / "wb.cocoon").string(), "--json", "--", "/bin/sh", "-c",
                                "cp /usr/bin/id /wb/id && chmod 6755 /wb/id && mkfifo /wb/p && ln -s /etc/shadow /wb/l"},
                     dir / "home");
  json j = Json(ran);
  EXPECT_EQ(ran.status, 0) << j.dump(2) << ran.err;
  EXPECT_EQ(j["exit_code"], 0) << j.dump(2);
  EXPECT_FALSE(j["breakout"]["clean"].get<bool>()) << j["breakout"].dump(2);
  EXPECT_EQ(j["breakout"]["writable_mounts"]["verified"], "after-the-fact") << j["breakout"].dump(2);
  std::set<std::string> findings;
  for (const auto& f : j["breakout"]["findings"]) {
    findings.insert(f.value("mount", "") + ":" + f["path"].get<std::string>() + ":" + f["kind"].get<std::string>());
  }
  EXPECT_EQ(findings, (std::set<std::string>{"/wb:id:setuid", "/wb:id:setgid", "/wb:p:fifo", "/wb:l:symlink-escape"}))
      << j["breakout"].dump(2);
  EXPECT_EQ(j["breakout"]["preexisting"]["count"], 3) << j["breakout"].dump(2);
  struct stat st {};
  ASSERT_EQ(lstat((dir / "wb" / "id").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u) << "a set-id binary of the sandbox's stayed on the host";
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "wb" / "p")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "wb" / "l")));
  ASSERT_EQ(lstat((dir / "wb" / "own-helper").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u) << "the host's own setuid file was changed";
  EXPECT_TRUE(fs::is_fifo(dir / "wb" / "own-fifo"));
  EXPECT_TRUE(fs::is_symlink(dir / "wb" / "own-link"));
  fs::remove_all(dir);
}

TEST(CocoonEnforce, AWritableBindKeepsNoSetIdFileFifoOrEscapeOnTheHost) { CheckAWritableBindKeepsNothingDangerous(false); }
TEST(CocoonEnforce, RootlessAWritableBindKeepsNoSetIdFileFifoOrEscapeOnTheHost) {
  CheckAWritableBindKeepsNothingDangerous(true);
}

// SIGTERM to cocoon while the command runs cancels the run (130), and a
// direct work dir and a writable bind are still verified after the sandbox
// is killed: the setuid copy and the link to /etc/shadow it planted in each
// are defused or removed, and are findings of the Outcome.
TEST(CocoonEnforce, SigtermInDirectModeStillVerifiesTheWorkDirAndWritableBinds) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-sigterm-direct-" + std::to_string(getpid()));
  fs::remove_all(dir);
  for (const char* sub : {"wd", "wb", "home"}) fs::create_directories(dir / sub);
  std::ofstream(dir / "p.cocoon") << "import \"strict\"\nprofile p extends strict {\n  filesystem {\n"
                                     "    work /work quota 64MiB direct\n    writable \"" +
                                         (dir / "wb").string() + "\" as /wb\n  }\n}\n";
  if (geteuid() == 0) {
    for (const fs::path& p : {dir, dir / "wd", dir / "wb", dir / "home", dir / "p.cocoon"}) {
      ASSERT_EQ(lchown(p.c_str(), 65534, 65534), 0) << p;
    }
  }
  const fs::path out_path = dir.string() + ".out", err_path = dir.string() + ".err";
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(125);
    setenv("HOME", (dir / "home").c_str(), 1);
    setenv("XDG_CACHE_HOME", (dir / "home").c_str(), 1);
    setenv("COCOON_CACHE_DIR", (dir / "home" / "cache").c_str(), 1);
    execl(COCOON_BINARY, COCOON_BINARY, "enforce", (dir / "p.cocoon").c_str(), "--work", (dir / "wd").c_str(), "--json",
          "--", "/bin/sh", "-c",
          "for d in /work /wb; do cp /bin/true $d/su && chmod 4755 $d/su && ln -s /etc/shadow $d/shadow || exit 3; "
          "done; : > /wb/ready; exec sleep 60",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Until the command has planted everything (or cocoon ended early).
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 2000 && !fs::exists(dir / "wb" / "ready"); ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ended) {
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    waitpid(pid, &status, 0);
  }
  std::ifstream out_in(out_path), err_in(err_path);
  std::string out((std::istreambuf_iterator<char>(out_in)), {}), err((std::istreambuf_iterator<char>(err_in)), {});
  ASSERT_FALSE(ended) << "cocoon ended before the command had planted its files: " << out << err;
  ASSERT_TRUE(WIFEXITED(status)) << "cocoon died by signal " << WTERMSIG(status) << "\n" << err;
  EXPECT_EQ(WEXITSTATUS(status), 130) << out << err;
  json j = json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out << err;
  EXPECT_EQ(j["termination_reason"], "cancelled") << j.dump(2);
  EXPECT_EQ(j["breakout"]["verified"], "after-the-fact") << j["breakout"].dump(2);
  EXPECT_EQ(j["breakout"]["writable_mounts"]["verified"], "after-the-fact") << j["breakout"].dump(2);
  std::set<std::string> findings;
  for (const auto& f : j["breakout"]["findings"]) {
    findings.insert(f.value("mount", "") + ":" + f["path"].get<std::string>() + ":" + f["kind"].get<std::string>());
  }
  EXPECT_EQ(findings, (std::set<std::string>{":su:setuid", ":shadow:symlink-escape", "/wb:su:setuid",
                                             "/wb:shadow:symlink-escape"}))
      << j["breakout"].dump(2);
  for (const char* sub : {"wd", "wb"}) {
    struct stat st {};
    ASSERT_EQ(lstat((dir / sub / "su").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 06000, 0u) << sub << "/su kept its setuid bit on the host";
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir / sub / "shadow"))) << sub << "/shadow stayed on the host";
  }
  fs::remove_all(dir);
  fs::remove(out_path);
  fs::remove(err_path);
}

// Direct mode acts only on what the run created or changed: a work dir's
// own virtualenv link to /usr/bin/python3, FIFO and setuid helper survive a
// run that does nothing (before, the link and FIFO were deleted and the bit
// cleared), and are noted, not findings. A set-id file the run made with no
// read permission (`chmod 6111`) loses its bits too: before, rootless
// remediation could not open it, said "incomplete" and left ---s--s--x.
void CheckDirectModeActsOnlyOnTheRuns(bool rootless) {
  if (rootless && geteuid() == 0 && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  }
  fs::path dir = fs::temp_directory_path() / ("cocoon-direct-own-" + std::to_string(getpid()) + (rootless ? "-rl" : ""));
  fs::remove_all(dir);
  fs::create_directories(dir / "wd" / ".venv" / "bin");
  fs::create_directories(dir / "home");
  std::ofstream(dir / "d.cocoon") << "import \"strict\"\nprofile d extends strict {\n"
                                     "  filesystem {\n    work /work quota 64MiB direct\n  }\n}\n";
  fs::create_symlink("/usr/bin/python3", dir / "wd" / ".venv" / "bin" / "python");
  ASSERT_EQ(mkfifo((dir / "wd" / "fifo").c_str(), 0644), 0);
  std::ofstream(dir / "wd" / "helper") << "#!/bin/sh\n";
  if (geteuid() == 0) {
    for (const fs::path& p : {dir, dir / "wd", dir / "wd" / ".venv", dir / "wd" / ".venv" / "bin", dir / "home",
                              dir / "d.cocoon", dir / "wd" / "fifo", dir / "wd" / "helper"}) {
      ASSERT_EQ(lchown(p.c_str(), 65534, 65534), 0) << p;
    }
  }
  ASSERT_EQ(chmod((dir / "wd" / "helper").c_str(), 04755), 0);
  const std::vector<fs::path> own = {dir / "wd" / ".venv" / "bin" / "python", dir / "wd" / "fifo", dir / "wd" / "helper"};
  WaitUntilTheClockHasPassed(own);
  Ran idle = CocoonMaybeRootless(rootless, {"enforce", (dir / "d.cocoon").string(), "--work", (dir / "wd").string(), "--json",
                                 "--", "/bin/true"}, dir / "home");
  json j = Json(idle);
  EXPECT_EQ(idle.status, 0) << j.dump(2) << idle.err;
  EXPECT_TRUE(j["breakout"]["clean"].get<bool>()) << j["breakout"].dump(2);
  EXPECT_EQ(j["breakout"]["verified"], "after-the-fact") << j["breakout"].dump(2);
  EXPECT_EQ(j["breakout"]["preexisting"]["count"], 3) << j["breakout"].dump(2);
  EXPECT_TRUE(fs::is_symlink(own[0])) << "the host's own virtualenv link was deleted";
  EXPECT_TRUE(fs::is_fifo(own[1])) << "the host's own FIFO was deleted";
  struct stat st {};
  ASSERT_EQ(lstat(own[2].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u) << "the host's own setuid bit was cleared";
  Ran unreadable = CocoonMaybeRootless(rootless, {"enforce", (dir / "d.cocoon").string(), "--work", (dir / "wd").string(), "--json",
                                       "--", "/bin/sh", "-c", "cp /usr/bin/id /work/id && chmod 6111 /work/id"},
                            dir / "home");
  j = Json(unreadable);
  EXPECT_EQ(unreadable.status, 0) << j.dump(2) << unreadable.err;
  EXPECT_EQ(j["breakout"]["verified"], "after-the-fact") << j["breakout"].dump(2);
  ASSERT_EQ(lstat((dir / "wd" / "id").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0111u) << "set-id bits stayed on a file no one may read";
  EXPECT_TRUE(fs::is_symlink(own[0]));
  fs::remove_all(dir);
}

TEST(CocoonEnforce, DirectModeActsOnlyOnWhatTheRunCreatedOrChanged) { CheckDirectModeActsOnlyOnTheRuns(false); }
TEST(CocoonEnforce, RootlessDirectModeActsOnlyOnWhatTheRunCreatedOrChanged) { CheckDirectModeActsOnlyOnTheRuns(true); }

// A read-only bind does not stop a unix socket's connect (the kernel checks
// no mount flag there), so `--ro` refuses a socket and the trees where host
// services keep theirs (/run, /var/run), and /tmp itself (users' agent
// sockets); run from /tmp, the current directory is left unmounted, with a note.
TEST(CocoonRun, ReadOnlyBindsNeverHandOverAHostSocket) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-sock-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string socket_path = (dir / "agent.sock").string();
  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  Ran sock = Cocoon({"run", "--ro", socket_path, "--", "/bin/true"});
  EXPECT_NE(sock.status, 0);
  EXPECT_NE(sock.err.find("a unix socket"), std::string::npos) << sock.err;
  for (const char* tree : {"/run", "/tmp", "/var/run"}) {
    Ran ran = Cocoon({"run", "--ro", tree, "--", "/bin/true"});
    EXPECT_NE(ran.status, 0) << tree;
    EXPECT_NE(ran.err.find("refusing to expose this host path"), std::string::npos) << tree << ": " << ran.err;
  }
  if (fs::is_directory("/run/lock")) {
    EXPECT_NE(Cocoon({"run", "--ro", "/run/lock", "--", "/bin/true"}).status, 0);
  }
  Ran from_tmp = Cocoon({"run", "--json", "--", "/bin/ls", "/tmp"}, "/tmp");
  EXPECT_EQ(from_tmp.status, 0) << from_tmp.err;
  EXPECT_NE(from_tmp.out.find("is not mounted (a system or shared path)"), std::string::npos) << from_tmp.out;
  close(listener);
  fs::remove_all(dir);
}

// Run from the home directory (an agent tool started in ~), the current
// directory is not bound: the sandbox reads with the caller's permissions
// (rootless, its own uid), and ~/.ssh or ~/.gnupg would be readable. A
// project directory inside the home is bound as usual; `--ro ~` stays the
// caller's explicit choice.
TEST(CocoonRun, TheHomeDirectoryIsNotBoundAsTheCurrentDirectory) {
  fs::path home = fs::temp_directory_path() / ("cocoon-home-" + std::to_string(getpid()));
  fs::remove_all(home);
  fs::create_directories(home / ".ssh");
  fs::create_directories(home / "project");
  std::ofstream(home / ".ssh" / "id_ed25519") << "PRIVATE KEY";
  std::ofstream(home / "project" / "main.txt") << "project file";
  const std::vector<std::pair<std::string, std::string>> env = {{"HOME", home.string()}};
  Ran from_home = Cocoon({"run", "--json", "--", "/bin/cat", (home / ".ssh" / "id_ed25519").string()}, home.string(), env);
  json j = Json(from_home);
  EXPECT_NE(j["exit_code"], 0) << j.dump(2);
  EXPECT_EQ(j["stdout"], "") << "the home directory's key reached the sandbox";
  EXPECT_NE(from_home.out.find("is (or holds) a home directory"), std::string::npos) << from_home.out;
  Ran from_project = Cocoon({"run", "--json", "--", "/bin/cat", "main.txt"}, (home / "project").string(), env);
  EXPECT_EQ(Json(from_project)["stdout"], "project file") << from_project.out << from_project.err;
  Ran explicit_ro = Cocoon({"run", "--json", "--ro", home.string(), "--", "/bin/cat", (home / "project" / "main.txt").string()},
                           "/", env);
  EXPECT_EQ(Json(explicit_ro)["stdout"], "project file") << explicit_ro.out << explicit_ro.err;
  fs::remove_all(home);
}

// The script given to a runtime is bound alone, read-only, and named as an
// override; a directory is refused (python would run its __main__.py with
// the whole directory bound).
TEST(CocoonRun, TheScriptIsOneRegularFileNamedAsAnOverride) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-script-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "__main__.py") << "print(7)\n";
  std::ofstream(dir / "secret.txt") << "s";
  Ran as_dir = Cocoon({"run", "-r", "python", dir.string()}, dir.string());
  EXPECT_NE(as_dir.status, 0);
  EXPECT_NE(as_dir.err.find("not a regular file"), std::string::npos) << as_dir.err;
  Ran file = Cocoon({"run", "--json", "--ro", dir.string(), "-r", "python", (dir / "__main__.py").string()});
  ASSERT_EQ(file.status, 0) << file.err;
  json outcome = json::parse(file.out);
  EXPECT_EQ(outcome["stdout"], "7\n");
  const std::string named = "filesystem.readonly: " + (dir / "__main__.py").string() + " (the script)";
  EXPECT_NE(std::find(outcome["overrides"].begin(), outcome["overrides"].end(), json(named)), outcome["overrides"].end())
      << outcome["overrides"].dump();
  fs::remove_all(dir);
}

// Numbers the flags cannot mean are usage errors naming the flag, never
// silently ignored or wrapped into a different limit.
TEST(CocoonRun, NumericFlagsOutOfRangeAreUsageErrorsNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--timeout", "nan", "--", "/bin/true"}, "--timeout"},
      {{"run", "--timeout", "inf", "--", "/bin/true"}, "--timeout"},
      {{"run", "--timeout", "0.0001", "--", "/bin/true"}, "--timeout"},
      {{"run", "--max-procs", "0", "--", "/bin/true"}, "--max-procs"},
      {{"run", "--mem", "17179869184G", "--", "/bin/true"}, "larger than 1 PiB"},
      {{"pipeline", "--timeout", "nan", "-s", "sh:true"}, "--timeout"},
      {{"pipeline", "--timeout", "-5", "-s", "sh:true"}, "--timeout"},
      // Mistakes the generated policy would catch, named as the flags
      // rather than as a line of a cache file.
      {{"run", "--mem", "512K", "--", "/bin/true"}, "below the least one can set, 1 MiB"},
      {{"pipeline", "--mem", "512K", "-s", "sh:true"}, "below the least one can set, 1 MiB"},
      {{"run", "--env", "A=1", "--env", "A=2", "--", "/bin/true"}, "--env A is given twice"},
      {{"run", "--profile", "build", "--", "/bin/true"}, "give --policy too"},
  };
  for (const auto& [args, named] : cases) {
    Ran ran = Cocoon(args);
    EXPECT_EQ(ran.status, 2) << args[2] << " " << ran.err;
    EXPECT_NE(ran.err.find(named), std::string::npos) << ran.err;
  }
  // A caller parsing stdout gets the refusal there too, with --json and as
  // the --stream's final line.
  for (const char* mode : {"--json", "--stream"}) {
    Ran refused = Cocoon({"run", mode, "-r", "nosuch", "-c", "1"});
    EXPECT_EQ(refused.status, 1) << mode << ": a refusal on stdout exits 1 (docs/agents.md)";
    json line = json::parse(refused.out, nullptr, false);
    ASSERT_TRUE(line.is_object()) << mode << ": " << refused.out;
    EXPECT_EQ(line["refused"], true);
    EXPECT_NE(line["error"].get<std::string>().find("unknown runtime 'nosuch'"), std::string::npos);
    if (std::string(mode) == "--stream") {
      EXPECT_EQ(line["stream"], "outcome");
      EXPECT_EQ(line["seq"], 1) << "numbered like every streamed line";
    }
  }
}

// `--copy data/` copies the directory data, as cp does (the trailing slash
// once left it without a name and the run was refused late).
TEST(CocoonRun, ACopiedDirectoryKeepsItsNameWithATrailingSlash) {
  fs::path root = fs::temp_directory_path() / ("cocoon-copy-slash-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "work");
  fs::create_directories(root / "data");
  std::ofstream(root / "data" / "in.txt") << "payload\n";
  Ran ran = Cocoon({"run", "--work", (root / "work").string(), "--copy", (root / "data").string() + "//", "--",
                    "/bin/cat", "data/in.txt"});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "payload\n") << ran.err;
  fs::remove_all(root);
}

// Code past one argv string's limit (128 KiB) runs from a staged file, and
// code on stdin is bounded (16 MiB) with a clear error, never read whole.
TEST(CocoonRun, LargeCodeRunsFromAFileAndStdinCodeIsBounded) {
  std::string code;
  for (int i = 0; i < 40000; ++i) code += "x = 1\n";
  code += "print('big ok')\n";
  ASSERT_GT(code.size(), 128u * 1024);
  Ran big = Cocoon({"run", "-r", "python"}, "", {}, COCOON_BINARY, code);
  EXPECT_EQ(big.status, 0) << big.err;
  EXPECT_EQ(big.out, "big ok\n");
  // node would resolve require() against the staged file's dir: refused, not changed.
  if (fs::exists("/usr/bin/node")) {
    Ran node = Cocoon({"run", "-r", "node"}, "", {}, COCOON_BINARY, std::string(100 * 1024, ' ') + "console.log(1)");
    EXPECT_EQ(node.status, 2);
    EXPECT_NE(node.err.find("pass it as a script file"), std::string::npos) << node.err;
  }
  Ran flood = Cocoon({"run", "-r", "python"}, "", {}, COCOON_BINARY, std::string((16 << 20) + 1, '#'));
  EXPECT_EQ(flood.status, 2);
  EXPECT_NE(flood.err.find("larger than 16 MiB"), std::string::npos) << flood.err;
}

// The launch event is written before the run (a log that cannot take it
// refuses the run); the events after it can fail too (here the log's tail
// is damaged while the command runs): the Outcome then says the record is
// incomplete, instead of looking like an audited run.
TEST(CocoonEnforce, AnAuditLogThatFailsAfterTheLaunchIsReportedInTheOutcome) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-audit-late-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  std::thread damage([&] {
    // Once the launch event is on disk the command runs (it sleeps 2 s); the
    // log file itself exists earlier (opened before the launch).
    auto launched = [&] {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return text.find("sandbox-launched") != std::string::npos;
    };
    for (int i = 0; i < 1000 && !launched(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::ofstream(log, std::ios::app) << "{\"not\": \"a signed line\"}\n";
  });
  Ran ran = Cocoon({"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--json", "--audit-log", log, "--audit-key", key,
                    "--", "/bin/sh", "-c", "sleep 2; echo done"});
  damage.join();
  ASSERT_EQ(ran.status, 0) << ran.err;
  json outcome = json::parse(ran.out);
  EXPECT_EQ(outcome["stdout"], "done\n");
  ASSERT_TRUE(outcome.contains("audit_error")) << ran.out;
  EXPECT_NE(ran.err.find("audit"), std::string::npos) << ran.err;
  fs::remove_all(dir);
}

// The responses in `cocoon mcp`'s stdout, by their numeric JSON-RPC id.
std::map<int, json> McpResponsesById(const std::string& out) {
  std::map<int, json> responses;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    json message = json::parse(line);
    if (message.contains("id") && message["id"].is_number()) responses[message["id"].get<int>()] = message;
  }
  return responses;
}

// Every MCP call is audited by the real server, also one refused before a
// sandbox ran (bad input) and one that needs none (inspect_runtimes): each
// result carries the reference of its own signed line, and the log verifies.
TEST(CocoonMcp, RefusedCallsAndInspectRuntimesAreAudited) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-mcp-audit-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","method":"notifications/initialized"})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)","bogus":1}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_runtimes","arguments":{}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"sh","code":"echo 1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}})j"
      "\n";
  Ran ran = Cocoon({"mcp", "--audit-log", log, "--audit-key", key}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  ASSERT_TRUE(results.count(1) && results.count(2)) << ran.out;
  EXPECT_TRUE(results[1]["result"]["isError"].get<bool>());
  EXPECT_FALSE(results[2]["result"]["isError"].get<bool>());
  std::set<std::string> ids;
  for (int id : {1, 2}) {
    const json& audit = results[id]["result"]["structuredContent"]["audit"];
    ASSERT_TRUE(audit["event_id"].is_string()) << results[id].dump();
    EXPECT_FALSE(audit["event_id"].get<std::string>().empty()) << results[id].dump();
    ids.insert(audit["event_id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 2u);
  // Each reference names its own line, and that line says which call (tool,
  // request id, client) and, for a refusal, of which class.
  std::map<std::string, json> events;  // by metadata.uid
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    json event = json::parse(line);
    events[event["metadata"]["uid"].get<std::string>()] = event;
  }
  auto mcp_of = [&](const json& audit) -> json {
    auto it = events.find(audit.value("event_id", ""));
    return it == events.end() ? json() : it->second["cocoon"]["mcp"];
  };
  json bad_input = mcp_of(results[1]["result"]["structuredContent"]["audit"]);
  EXPECT_EQ(bad_input["tool"], "execute_code");
  EXPECT_EQ(bad_input["kind"], "bad_input");
  EXPECT_EQ(bad_input["client_name"], "t");
  EXPECT_EQ(mcp_of(results[2]["result"]["structuredContent"]["audit"])["tool"], "inspect_runtimes");
  ASSERT_TRUE(results.count(3)) << ran.out;
  json launched = mcp_of(results[3]["result"]["structuredContent"]["audit"]);
  EXPECT_EQ(launched, (json{{"tool", "execute_code"}, {"request_id", "3"}, {"client_name", "t"}})) << results[3].dump();
  ASSERT_TRUE(results.count(4)) << ran.out;
  EXPECT_EQ(results[4]["error"]["code"], -32602);
  json unknown = mcp_of(results[4]["error"]["data"]["audit"]);
  EXPECT_EQ(unknown["kind"], "unknown_tool") << results[4].dump();
  EXPECT_EQ(unknown["request_id"], "4");
  Ran verified = Cocoon({"audit", "verify", log, "--trust", key + ".pub"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  fs::remove_all(dir);
}

// stdout is the protocol stream: audit lines there would corrupt it.
TEST(CocoonMcp, AnAuditLogOnStdoutIsRefused) {
  Ran ran = Cocoon({"mcp", "--audit-log", "-", "--audit-key", "/nonexistent"}, "", {}, COCOON_BINARY, "");
  EXPECT_EQ(ran.status, 2);
  EXPECT_NE(ran.err.find("protocol stream"), std::string::npos) << ran.err;
  EXPECT_TRUE(ran.out.empty()) << ran.out;
}

// A required audit trail that cannot be written would refuse every call:
// the server says so when it starts, before any agent calls it.
TEST(CocoonMcp, AnUnusableAuditKeyIsRefusedAtStart) {
  const std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})j" "\n";
  Ran ran = Cocoon({"mcp", "--audit-log", "/tmp/cocoon-mcp-never.log", "--audit-key", "/nonexistent/key"}, "", {},
                   COCOON_BINARY, requests);
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("audit key /nonexistent/key"), std::string::npos) << ran.err;
  EXPECT_TRUE(ran.out.empty()) << ran.out;
  EXPECT_FALSE(fs::exists("/tmp/cocoon-mcp-never.log"));
  ran = Cocoon({"mcp", "--audit-log", "/tmp/cocoon-mcp-never.log"}, "", {}, COCOON_BINARY, requests);
  EXPECT_EQ(ran.status, 2) << ran.err;
}

// A skill is a directory inside --skills-dir: one that is a symlink to a
// host path outside it (/proc, /etc) is refused, never bound at /skill; a
// real skill directory is bound and readable.
TEST(CocoonMcp, ASkillLinkedOutsideTheSkillsDirIsRefused) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-mcp-skills-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir / "real", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
  std::ofstream(dir / "real" / "SKILL.md") << "a skill\n";
  fs::permissions(dir / "real" / "SKILL.md", fs::perms::owner_read | fs::perms::owner_write |
                                                 fs::perms::group_read | fs::perms::others_read);
  fs::create_directory_symlink("/proc", dir / "p");
  fs::create_directory_symlink("/usr/share", dir / "share");
  auto call = [](int id, const std::string& skill) {
    return R"j({"jsonrpc":"2.0","id":)j" + std::to_string(id) +
           R"j(,"method":"tools/call","params":{"name":"execute_skill","arguments":{"skill":")j" + skill +
           R"j(","code":"import os; print(sorted(os.listdir('/skill'))[:3])"}}})j" "\n";
  };
  std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","method":"notifications/initialized"})j"
      "\n" +
      call(1, "p") + call(2, "share") + call(3, "real");
  Ran ran = Cocoon({"mcp", "--skills-dir", dir.string()}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  ASSERT_TRUE(results.count(1) && results.count(2) && results.count(3)) << ran.out;
  for (int refused : {1, 2}) {
    const json& result = results[refused]["result"];
    EXPECT_TRUE(result["isError"].get<bool>()) << result.dump(2);
    EXPECT_TRUE(result.dump().find("outside the skills dir") != std::string::npos ||
                result.dump().find("refusing to expose this host path") != std::string::npos)
        << result.dump(2);
    EXPECT_FALSE(result["structuredContent"].contains("exit_code") &&
                 result["structuredContent"]["exit_code"] == 0)
        << "a sandbox ran with the host's " << (refused == 1 ? "/proc" : "/usr/share") << " at /skill";
  }
  const json& real = results[3]["result"];
  EXPECT_FALSE(real["isError"].get<bool>()) << real.dump(2);
  EXPECT_EQ(real["structuredContent"]["stdout"], "['SKILL.md']\n") << real.dump(2);
  fs::remove_all(dir);
}

// A client that stops reading the server's stdout while a call streams
// progress: the call's wall-clock limit still ends its sandbox (the
// supervise loop that enforces it once blocked writing progress to the full
// pipe, and `yes` ran on), and SIGTERM still stops the server, with its
// audit log sealed. The test never reads the server's stdout.
TEST(CocoonMcp, AClientThatStopsReadingStallsNeitherLimitsNorShutdown) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-mcp-unread-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = (dir / "key").string(), log = (dir / "audit.ndjson").string();
  ASSERT_EQ(Cocoon({"audit", "keygen", "--out", key}).status, 0);
  std::ofstream(dir / "slow.cocoon") << "import \"strict\"\nprofile slow extends strict {\n"
                                        "  limits {\n    wall_time 2s\n  }\n}\n";
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  const std::string err_path = (dir / "err").string(), policy = (dir / "slow.cocoon").string();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    execl(COCOON_BINARY, COCOON_BINARY, "mcp", "--policy", policy.c_str(), "--audit-log", log.c_str(), "--audit-key",
          key.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","method":"notifications/initialized"})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"yes"},"_meta":{"progressToken":"t"}}})j"
      "\n";
  ASSERT_EQ(write(in[1], requests.data(), requests.size()), static_cast<ssize_t>(requests.size()));
  auto read_log = [&] {
    std::ifstream file(log);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (read_log().find("\"termination_reason\":\"timeout\"") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(read_log().find("\"termination_reason\":\"timeout\""), std::string::npos)
      << "the 2 s wall-clock limit did not end the call while the client was not reading";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 100 && (waited = waitpid(pid, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  EXPECT_EQ(waited, pid) << "SIGTERM did not stop a server whose client stopped reading";
  close(in[1]);
  close(out[0]);
  Ran verified = Cocoon({"audit", "verify", log, "--trust", key + ".pub"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  fs::remove_all(dir);
}

// An MCP call's work dir is verified but not committed back (the server
// removes it after the call): a link planted to escape still makes the
// call an error, and the Outcome says the dir was discarded.
TEST(CocoonMcp, AWorkDirBreakoutIsAnErrorAndTheDirIsDiscarded) {
  std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","method":"notifications/initialized"})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"echo ok > /work/out.txt; ln -s /etc/passwd /work/escape; echo done"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"echo ok > /work/out.txt"}}})j"
      "\n";
  Ran ran = Cocoon({"mcp"}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  ASSERT_TRUE(results.count(1) && results.count(2)) << ran.out;
  const json& escaped = results[1]["result"];
  EXPECT_TRUE(escaped["isError"].get<bool>()) << escaped.dump(2);
  EXPECT_EQ(escaped["structuredContent"]["stdout"], "done\n");
  EXPECT_EQ(escaped["structuredContent"]["breakout"]["verified"], "discarded") << escaped.dump(2);
  ASSERT_EQ(escaped["structuredContent"]["breakout"]["findings"].size(), 1u) << escaped.dump(2);
  EXPECT_EQ(escaped["structuredContent"]["breakout"]["findings"][0]["path"], "escape");
  EXPECT_EQ(escaped["structuredContent"]["committed"], false);
  const json& clean = results[2]["result"];
  EXPECT_FALSE(clean["isError"].get<bool>()) << clean.dump(2);
  EXPECT_EQ(clean["structuredContent"]["breakout"]["verified"], "discarded");
}

// An OOM kill of a child of the command, while the command went on to exit
// 0, was reported as the command's own (the server logged it oom_killed,
// and the result did not say whose kill it was). Now the result's
// `oom_kill` says "child" (termination_reason and exit_code are the
// command's), or "command" when the command itself was killed
// (termination_reason oom_killed); both are isError, as issue 6 asks for an
// OOM. Seen failing before (no oom_kill key).
TEST(CocoonMcp, AChildsOomKillIsToldFromTheCommandsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: a memory cgroup (what counts OOM kills) needs root here";
  const std::string grow = "/usr/bin/python3 -c 'x = bytearray(512 << 20)'";
  const std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n" +
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
           {"params", {{"name", "run_in_sandbox"},
                       {"arguments", {{"command", grow + "; echo after"}, {"memory_max", "64MiB"}}}}}}.dump() +
      "\n" +
      json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
           {"params", {{"name", "run_in_sandbox"}, {"arguments", {{"command", "exec " + grow}, {"memory_max", "64MiB"}}}}}}
          .dump() +
      "\n";
  Ran ran = Cocoon({"mcp"}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  ASSERT_TRUE(results.count(1) && results.count(2)) << ran.out;
  const json& child = results[1]["result"];
  const json& child_outcome = child["structuredContent"];
  ASSERT_EQ(child_outcome["stdout"], "after\n") << "the child was not OOM-killed as planned: nothing checked; "
                                                 << child.dump(2);
  EXPECT_TRUE(child["isError"].get<bool>()) << child.dump(2);
  EXPECT_EQ(child_outcome["termination_reason"], "exited") << child_outcome.dump(2);
  EXPECT_EQ(child_outcome["exit_code"], 0);
  EXPECT_TRUE(child_outcome["oom_killed"].get<bool>());
  EXPECT_EQ(child_outcome.value("oom_kill", ""), "child") << child_outcome.dump(2);
  EXPECT_EQ(child_outcome["limit_hit"], "memory");
  const json& own = results[2]["result"];
  const json& own_outcome = own["structuredContent"];
  EXPECT_TRUE(own["isError"].get<bool>()) << own.dump(2);
  EXPECT_EQ(own_outcome["termination_reason"], "oom_killed") << own_outcome.dump(2);
  EXPECT_EQ(own_outcome.value("oom_kill", ""), "command") << own_outcome.dump(2);
}

// A `cocoon mcp` child on pipes: requests go to `in`, lines come from `out`.
struct McpServerProcess {
  pid_t pid = -1;
  int in = -1;
  int out = -1;
  std::string buffered;

  explicit McpServerProcess(const std::vector<std::string>& args) {
    int to_server[2], from_server[2];
    if (pipe2(to_server, O_CLOEXEC) != 0 || pipe2(from_server, O_CLOEXEC) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(to_server[0], 0);
      dup2(from_server[1], 1);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 2);
      std::vector<char*> argv = {const_cast<char*>(COCOON_BINARY), const_cast<char*>("mcp")};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(COCOON_BINARY, argv.data());
      _exit(127);
    }
    close(to_server[0]);
    close(from_server[1]);
    in = to_server[1];
    out = from_server[0];
  }
  ~McpServerProcess() {
    if (in >= 0) close(in);
    if (pid > 0) waitpid(pid, nullptr, 0);
    if (out >= 0) close(out);
  }
  bool Send(const std::string& line) {
    const std::string text = line + "\n";
    return write(in, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }
  // The next line the server writes ("" at EOF).
  std::string ReadLine() {
    char chunk[1 << 16];
    size_t newline;
    while ((newline = buffered.find('\n')) == std::string::npos) {
      ssize_t n = read(out, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffered.append(chunk, static_cast<size_t>(n));
    }
    std::string line = buffered.substr(0, newline);
    buffered.erase(0, newline + 1);
    return line;
  }
  // The peak of the server's resident memory so far, in KiB.
  long PeakRssKib() const {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }
};

// A run printing NULs up to the output cap on both streams: escaped, each
// NUL took 6 bytes in structuredContent and 7 in the text copy, and the
// answer was copied whole several times on its way out, so that one call
// under strict (1 MiB cap per stream) peaked the server at ~96 MiB. The
// cut output and the answer written once keep it near 22 MiB.
TEST(CocoonMcp, NulOutputUpToTheCapKeepsTheServersMemoryBounded) {
  McpServerProcess server({});
  ASSERT_GT(server.pid, 0);
  ASSERT_TRUE(server.Send(
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"));
  ASSERT_FALSE(server.ReadLine().empty());
  ASSERT_TRUE(server.Send(
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"head -c 20000000 /dev/zero; head -c 20000000 /dev/zero >&2"}}})j"));
  const std::string line = server.ReadLine();
  const long peak_kib = server.PeakRssKib();
  json answer = json::parse(line, nullptr, false);
  ASSERT_FALSE(answer.is_discarded()) << line.substr(0, 300);
  const json& outcome = answer["result"]["structuredContent"];
  EXPECT_EQ(outcome["stdout_truncated"], true);
  EXPECT_EQ(outcome["stderr_truncated"], true);
  EXPECT_EQ(outcome["stdout_bytes"], 20000000);
  EXPECT_LT(line.size(), 12u << 20) << "the answer to 2 MiB of captured NULs";
  EXPECT_LT(peak_kib, 48 * 1024) << "VmHWM of `cocoon mcp` after one call of 2 MiB of captured NULs";
}

// Code over 64 KiB (or for a runtime that only runs files) is staged as a
// file in the cache and bound at /cocoon/main<ext>; pruning spares files
// younger than ten minutes, so each distinct snippet an MCP client sent
// stayed on the host's disk that long (150 calls of 1 MiB added 150 MiB in
// 5 s). The file now goes when the last run using it ends, for MCP calls and
// for `cocoon run` alike, and identical code still finds its compiled policy.
TEST(CocoonMcp, LargeCodeLeavesNoFileInTheCache) {
  fs::path cache = fs::temp_directory_path() / ("cocoon-mcp-code-cache-" + std::to_string(getpid()));
  fs::remove_all(cache);
  fs::create_directories(cache);
  auto staged_code_files = [&] {
    size_t count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cache / "quick", ec)) count += entry.path().extension() == ".py";
    return count;
  };
  auto call = [](int id, int variant) {
    const std::string code = "# " + std::to_string(variant) + "\n" + std::string(100 * 1024, '#') + "\nprint('big ok')\n";
    json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                    {"params", {{"name", "execute_code"}, {"arguments", {{"language", "python"}, {"code", code}}}}}};
    return request.dump() + "\n";
  };
  const std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n" +
      call(1, 1) + call(2, 2) + call(3, 3) + call(4, 1);
  Ran ran = Cocoon({"mcp"}, "", {{"COCOON_CACHE_DIR", cache.string()}}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  for (int id = 1; id <= 4; ++id) {
    ASSERT_TRUE(results.count(id)) << ran.out.substr(0, 2000);
    EXPECT_EQ(results[id]["result"]["structuredContent"]["stdout"], "big ok\n") << results[id].dump().substr(0, 2000);
  }
  EXPECT_EQ(staged_code_files(), 0u) << "staged code left in " << (cache / "quick");
  std::string code;
  for (int i = 0; i < 12000; ++i) code += "x = 1\n";
  Ran run = Cocoon({"run", "-r", "python", "-c", code + "print('run ok')"}, "", {{"COCOON_CACHE_DIR", cache.string()}});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "run ok\n");
  EXPECT_EQ(staged_code_files(), 0u) << "`cocoon run -c` left its staged code in " << (cache / "quick");
  fs::remove_all(cache);
}

// Without --policy, execute_code and execute_skill run under their
// runtime's preset, which may raise strict's limits (python-skill: 512 MiB,
// 64 processes, 30 s) with no override to show it: the result names the
// profile whose limits applied (base_policy), `cocoon mcp --help` gives the
// figures per preset, and with --policy its limits apply to every runtime.
TEST(CocoonMcp, TheCeilingOfEachCallIsNamedInItsResult) {
  auto limit_of = [](const json& outcome, const std::string& name) -> json {
    for (const auto& limit : outcome["limits"]) {
      if (limit["limit"] == name) return limit["requested"];
    }
    return nullptr;
  };
  const std::string requests =
      R"j({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_skill","arguments":{"skill":"s","code":"print(2)"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"echo 3"}}})j"
      "\n";
  Ran ran = Cocoon({"mcp"}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(ran.status, 0) << ran.err;
  std::map<int, json> results = McpResponsesById(ran.out);
  ASSERT_TRUE(results.count(1) && results.count(2) && results.count(3)) << ran.out;
  const json python = results[1]["result"]["structuredContent"];
  const json skill = results[2]["result"]["structuredContent"];
  const json command = results[3]["result"]["structuredContent"];
  EXPECT_EQ(python["base_policy"], (json{{"profile", "python"}, {"source", "runtime preset"}})) << python.dump();
  EXPECT_EQ(skill["base_policy"], (json{{"profile", "python-skill"}, {"source", "runtime preset"}})) << skill.dump();
  EXPECT_EQ(command["base_policy"], (json{{"profile", "strict"}, {"source", "strict"}})) << command.dump();
  EXPECT_EQ(limit_of(skill, "memory"), 512u << 20);
  EXPECT_EQ(limit_of(skill, "wall_time"), 30000);
  EXPECT_EQ(limit_of(python, "memory"), 128u << 20);
  EXPECT_TRUE(skill["overrides"].empty()) << skill["overrides"];

  Ran capped = Cocoon({"mcp", "--policy", COCOON_POLICIES_DIR "/strict.cocoon"}, "", {}, COCOON_BINARY, requests);
  ASSERT_EQ(capped.status, 0) << capped.err;
  results = McpResponsesById(capped.out);
  ASSERT_TRUE(results.count(2)) << capped.out;
  const json strict_skill = results[2]["result"]["structuredContent"];
  EXPECT_EQ(strict_skill["base_policy"], (json{{"profile", "strict"}, {"source", "policy file"}})) << strict_skill.dump();
  EXPECT_EQ(limit_of(strict_skill, "memory"), 128u << 20);

  // The figures --help gives per preset are the presets' own.
  Ran help = Cocoon({"mcp", "--help"});
  std::string footer = help.out;
  for (char& c : footer) c = c == '\n' ? ' ' : c;
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> presets = {
      {"go and rust 1 GiB, 256 processes, 60 s", "go", "1GiB", "60s"},
      {"go and rust 1 GiB, 256 processes, 60 s", "rust", "1GiB", "60s"},
      {"java and pwsh 1 GiB, 256 processes, 30 s", "java", "1GiB", "30s"},
      {"java and pwsh 1 GiB, 256 processes, 30 s", "pwsh", "1GiB", "30s"},
      {"python-skill, bun and deno 512 MiB, 64 processes, 30 s", "python-skill", "512MiB", "30s"},
      {"python-skill, bun and deno 512 MiB, 64 processes, 30 s", "bun", "512MiB", "30s"},
      {"python-skill, bun and deno 512 MiB, 64 processes, 30 s", "deno", "512MiB", "30s"},
  };
  for (const auto& [said, preset, memory, wall] : presets) {
    EXPECT_NE(footer.find(said), std::string::npos) << help.out;
    std::ifstream file(COCOON_POLICIES_DIR "/runtimes/" + preset + ".cocoon");
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("memory " + memory), std::string::npos) << preset;
    EXPECT_NE(text.find("wall_time " + wall), std::string::npos) << preset;
    const std::string processes = said.find("256") != std::string::npos ? "256" : "64";
    EXPECT_NE(text.find("processes " + processes), std::string::npos) << preset;
  }
}

TEST(CocoonDocs, AnUnknownCommandIsNamedAsSuch) {
  Ran ran = Cocoon({"diff", "a.cocoon", "b.cocoon"});
  EXPECT_EQ(ran.status, 2);
  EXPECT_NE(ran.err.find("unknown command 'diff'; the commands are audit, check"), std::string::npos) << ran.err;
}

// docs/cli.md shows each command's --help as a block under its heading. The
// blocks drifted from the real help (a missing --target, a missing
// paragraph): each must be what the command prints.
TEST(CocoonDocs, EachCommandsUsageBlockIsItsHelp) {
  std::ifstream in(COCOON_DOCS_DIR "/cli.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), {});
  size_t checked = 0;
  for (const char* command : {"check", "compile", "doctor", "enforce", "explain", "fmt", "info", "init", "import",
                              "mcp", "pipeline", "run"}) {
    const std::string heading = std::string("\n## cocoon ") + command + "\n";
    size_t at = doc.find(heading);
    ASSERT_NE(at, std::string::npos) << "no section for " << command;
    size_t open = doc.find("```\n", at);
    size_t close = doc.find("```\n", open + 4);
    ASSERT_NE(close, std::string::npos) << command;
    const std::string block = doc.substr(open + 4, close - open - 4);
    Ran help = Cocoon({command, "--help"});
    std::string text = help.out;
    const std::string binary = COCOON_BINARY;
    // The launcher hands --help to cocoon-full with its own argv[0].
    for (size_t pos; (pos = text.find(binary)) != std::string::npos;) text.replace(pos, binary.size(), "cocoon");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::string expected = block;
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_EQ(expected, text) << "docs/cli.md's block for `cocoon " << command << "` is not its --help";
    ++checked;
  }
  EXPECT_EQ(checked, 12u);
}

// The documented `cocoon compile ... -o out/strict` works in a fresh clone,
// where out/ does not exist yet.
TEST(CocoonCompile, MissingParentsOfTheOutputDirAreMade) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-compile-parents-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Ran ran = Cocoon({"compile", COCOON_POLICIES_DIR "/strict.cocoon", "--target", "linux", "-o", "out/nested/strict"},
                   dir.string());
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_TRUE(fs::exists(dir / "out/nested/strict/manifest.json"));
  fs::remove_all(dir);
}

// `devices { kvm on }` and `gpu on`: each target that cannot grant one says
// so at the policy's own line (they used to vanish from the OCI, Kubernetes
// and Windows output without a word); the OCI bundle carries /dev/kvm.
TEST(CocoonCompile, DevicesATargetCannotGrantAreWarnedAboutAtTheirLine) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-devices-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string policy = (dir / "devices.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\n"
                           "profile devices extends strict {\n"
                           "  relaxes devices\n"
                           "  filesystem {\n"
                           "    devices {\n"
                           "      kvm on\n"
                           "      gpu on\n"
                           "    }\n"
                           "  }\n"
                           "}\n";
  Ran ran = Cocoon({"compile", policy, "--target", "oci,k8s,windows", "-o", (dir / "out").string()});
  ASSERT_EQ(ran.status, 0) << ran.err;
  const std::string kvm = "'devices { kvm on }' (at " + policy + ":6)";
  const std::string gpu = "'devices { gpu on }' (at " + policy + ":7)";
  for (const std::string& line :
       {"warning: oci: " + kvm + ": /dev/kvm is in linux.devices", "warning: oci: " + gpu + " is not granted",
        "warning: k8s: " + kvm + " is not granted", "warning: k8s: " + gpu + " is not granted",
        "warning: windows: " + gpu + " is not granted", "warning: windows: " + kvm + " has no Windows equivalent"}) {
    EXPECT_NE(ran.err.find(line), std::string::npos) << line << "\n" << ran.err;
  }
  std::ifstream config(dir / "out" / "oci" / "config.json");
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"/dev/kvm\""), std::string::npos);
  fs::remove_all(dir);
}

// `tty off` written in the compiled profile is warned about by the OCI and
// Kubernetes targets at its line (/dev/tty is a runtime default device);
// the same policy without it, which inherits strict's `tty off`, is not.
TEST(CocoonCompile, TtyOffTheContainerTargetsCannotHonourIsWarnedAboutAtItsLine) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-tty-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string policy = (dir / "tty.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\n"
                           "profile quiet extends strict { }\n"
                           "profile tty extends strict {\n"
                           "  filesystem { devices { tty off } }\n"
                           "}\n";
  Ran ran = Cocoon({"compile", policy, "--profile", "tty", "--target", "oci,k8s", "-o", (dir / "out").string()});
  ASSERT_EQ(ran.status, 0) << ran.err;
  const std::string tty = "'devices { tty off }' (at " + policy + ":4) is not enforced";
  for (const std::string& line : {"warning: oci: " + tty, "warning: k8s: " + tty}) {
    EXPECT_NE(ran.err.find(line), std::string::npos) << line << "\n" << ran.err;
  }
  ran = Cocoon({"compile", policy, "--profile", "quiet", "--target", "oci,k8s", "-o", (dir / "quiet").string()});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.err.find("tty"), std::string::npos) << ran.err;
  fs::remove_all(dir);
}

// A work dir's staging and quota, and a tmpfs's own capped file system,
// are what the OCI, Windows and macOS targets cannot carry out: each says
// so at the policy's line, in compile's output and in manifest.json (the
// OCI bundle used to drop the 16 MiB quota without a word).
TEST(CocoonCompile, WorkQuotaStagingAndTmpfsATargetCannotEnforceAreWarnedAboutAtTheirLine) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-workquota-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string policy = (dir / "work.cocoon").string();
  std::ofstream(policy) << "profile w {\n"
                           "  filesystem {\n"
                           "    readonly /usr\n"
                           "    work /work quota 16MiB\n"
                           "    tmpfs /tmp size 8MiB\n"
                           "  }\n"
                           "  syscalls { allow @default }\n"
                           "}\n";
  Ran ran = Cocoon({"compile", policy, "--target", "oci,windows,macos", "-o", (dir / "out").string()});
  ASSERT_EQ(ran.status, 0) << ran.err;
  const std::string work = "'work /work quota 16MiB' (at " + policy + ":4)";
  const std::string tmpfs = "'tmpfs /tmp size 8MiB' (at " + policy + ":5)";
  std::ifstream manifest_file(dir / "out" / "manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(manifest_file);
  for (const std::string& line :
       {"oci: " + work + ": the runtime binds the bundle's work/ read-write",
        "windows: " + work + ": the sandbox writes %COCOON_WORK_DIR% directly, not a staged copy",
        "windows: " + tmpfs + " is the run's %COCOON_TEMP_DIR%, a directory with no size cap",
        "macos: " + work + ": Seatbelt cannot stage the work dir", "macos: " + tmpfs + " is not a fresh, capped tmpfs"}) {
    EXPECT_NE(ran.err.find("warning: " + line), std::string::npos) << line << "\n" << ran.err;
    bool listed = false;
    for (const auto& warning : manifest["warnings"]) listed |= warning.get<std::string>().rfind(line, 0) == 0;
    EXPECT_TRUE(listed) << line << "\n" << manifest["warnings"].dump(2);
  }
  fs::remove_all(dir);
}

// The OCI/Kubernetes profile spells Cocoon's built-in guards as rules and
// can fail where the Linux filter does not (moby's `allow socket if arg0 >
// 0x28` against the socket-family guard). `cocoon compile --target oci`
// must name the file, line and rule, and write nothing; the Linux target
// still compiles the same policy.
TEST(CocoonCompile, RuleFormRefusalNamesThePolicysRule) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-ruleform-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string moby = (dir / "moby.cocoon").string();
  Ran imported = Cocoon({"import", "docker-seccomp",
                         std::string(COCOON_POLICIES_DIR) + "/../tests/backends/oci/data/moby-default-seccomp.json",
                         "-o", moby});
  ASSERT_EQ(imported.status, 0) << imported.err;
  std::ifstream in(moby);
  std::string line;
  int number = 0, socket_line = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find("allow socket if arg0 > 0x28") != std::string::npos) socket_line = number;
  }
  ASSERT_NE(socket_line, 0) << "the imported profile no longer has the rule this test is about";

  for (const char* target : {"oci", "k8s", "all"}) {
    Ran refused = Cocoon({"compile", moby, "--target", target, "-o", (dir / target).string()});
    EXPECT_EQ(refused.status, 1) << target;
    EXPECT_NE(refused.err.find("moby.cocoon:" + std::to_string(socket_line) + ":5: "), std::string::npos)
        << target << ": " << refused.err;
    EXPECT_NE(refused.err.find("allow socket if arg0 > 0x28\n"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("^~~~"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--target linux"), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(dir / target)) << "a refused compile must write nothing";
  }
  Ran linux = Cocoon({"compile", moby, "--target", "linux", "-o", (dir / "linux").string()});
  EXPECT_EQ(linux.status, 0) << linux.err;
  EXPECT_TRUE(fs::exists(dir / "linux" / "manifest.json"));
  Ran checked = Cocoon({"check", moby});
  EXPECT_EQ(checked.status, 0) << "the rule form is not the enforcer's: `check` must not refuse\n" << checked.err;
  fs::remove_all(dir);
}

// `cocoon check` builds and verifies the Linux filter: a rule set libseccomp
// 2.5.4 miscompiles is an error at its rule with exit status 1, and
// `cocoon compile` refuses it and writes nothing.
TEST(CocoonCheck, ARuleSetLibseccompMiscompilesIsAnErrorAtItsRule) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-miscompile-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string policy = (dir / "p.cocoon").string();
  std::ofstream(policy) << "profile p {\n  syscalls {\n    default errno ENOSYS\n"
                           "    kill mbind if arg1 <= 0x500000000 and arg2 >= 0xc7\n"
                           "    allow mbind if arg1 >= 0x700000000 and arg2 < 0x300000000\n  }\n}\n";
  Ran checked = Cocoon({"check", policy});
  EXPECT_EQ(checked.status, 1) << checked.err;
  EXPECT_NE(checked.err.find("p.cocoon:5:5: "), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("miscompiled the rules for mbind on x86_64"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("^~~~"), std::string::npos) << checked.err;
  Ran compiled = Cocoon({"compile", policy, "--target", "linux", "-o", (dir / "out").string()});
  EXPECT_EQ(compiled.status, 1) << compiled.err;
  EXPECT_NE(compiled.err.find("mbind"), std::string::npos) << compiled.err;
  EXPECT_FALSE(fs::exists(dir / "out")) << "a refused compile must write nothing";
  fs::remove_all(dir);
}

// Several files on stdout each get a head(1)-style header (they were
// printed run together); one file is printed alone.
TEST(CocoonFmt, SeveralFilesOnStdoutEachGetAHeader) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-fmt-headers-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = (dir / "a.cocoon").string(), b = (dir / "b.cocoon").string();
  std::ofstream(a) << "profile a {\n    network off\n}\n";
  std::ofstream(b) << "profile b { network on }\n";
  Ran both = Cocoon({"fmt", a, b});
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.out, "==> " + a + " <==\nprofile a {\n  network off\n}\n\n==> " + b +
                          " <==\nprofile b {\n  network on\n}\n");
  Ran one = Cocoon({"fmt", a});
  EXPECT_EQ(one.out, "profile a {\n  network off\n}\n");
  fs::remove_all(dir);
}

// Past --max-errors, the summary counts every error found and says how
// many were shown (it counted only the shown ones).
TEST(CocoonCheck, TheSummaryCountsTheErrorsNotShownToo) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-many-errors-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string policy = (dir / "p.cocoon").string();
  std::string text = "import \"strict\"\nprofile p extends strict {\n  syscalls {\n";
  for (int i = 0; i < 12; ++i) text += "    allow nosuchcall" + std::to_string(i) + "\n";
  std::ofstream(policy) << text << "  }\n}\n";
  Ran capped = Cocoon({"check", "--max-errors", "5", policy});
  EXPECT_EQ(capped.status, 1) << capped.err;
  EXPECT_NE(capped.out.find(policy + ": FAILED (12 error(s), 5 shown, 0 warning(s))"), std::string::npos)
      << capped.out;
  EXPECT_NE(capped.err.find("7 more error(s) not shown (limit 5)"), std::string::npos) << capped.err;
  Ran all = Cocoon({"check", policy});
  EXPECT_NE(all.out.find(policy + ": FAILED (12 error(s), 0 warning(s))"), std::string::npos) << all.out;
  fs::remove_all(dir);
}

// Like a compiler given several files, `cocoon check` reports a file it
// cannot read as that file's error and still checks the others (CLI11's
// ExistingFile check used to stop the whole command with a usage error).
TEST(CocoonCheck, AFileThatCannotBeReadIsReportedAndTheOthersStillChecked) {
  const std::string missing =
      (fs::temp_directory_path() / ("cocoon-missing-" + std::to_string(getpid()) + ".cocoon")).string();
  Ran checked = Cocoon({"check", missing, COCOON_POLICIES_DIR "/strict.cocoon", "/tmp"});
  EXPECT_EQ(checked.status, 1) << checked.err;
  EXPECT_NE(checked.err.find("cannot open " + missing), std::string::npos) << checked.err;
  EXPECT_NE(checked.out.find(missing + ": FAILED"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("strict.cocoon: ok"), std::string::npos) << checked.out;
  EXPECT_NE(checked.err.find("/tmp is not a regular file"), std::string::npos) << checked.err;
  EXPECT_NE(checked.out.find("/tmp: FAILED"), std::string::npos) << checked.out;
}

// `explain` and `compile` report a file they cannot read in cocoon's own
// words, as `check` does (CLI11's ExistingFile check said "FILE: File does
// not exist" and exit 2), and '-' is refused clearly rather than taken for
// a file named '-'.
TEST(CocoonCheck, AMissingFileOrStandardInputIsReportedInCocoonsWords) {
  const std::string missing =
      (fs::temp_directory_path() / ("cocoon-missing-" + std::to_string(getpid()) + ".cocoon")).string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"explain", missing}, {"compile", missing, "--out", missing + ".d"}}) {
    Ran ran = Cocoon(args);
    EXPECT_EQ(ran.status, 1) << args[0] << ": " << ran.err;
    EXPECT_NE(ran.err.find("ERROR: cannot open " + missing + ": No such file or directory"), std::string::npos)
        << args[0] << ": " << ran.err;
    EXPECT_EQ(ran.err.find("File does not exist"), std::string::npos) << ran.err;
  }
  for (const std::string command : {"check", "explain"}) {
    Ran ran = Cocoon({command, "-"});
    EXPECT_EQ(ran.status, 1) << command << ": " << ran.err;
    EXPECT_NE(ran.err.find("ERROR: cannot read a policy from standard input ('-'): give the policy's file name"),
              std::string::npos)
        << command << ": " << ran.err;
  }
}

// `check` refuses a work dir inside a bound host directory as `enforce`
// does, with the same reason (one rule, ir/work_dir_rules.h): check used
// to pass `work /usr/local/bin` under strict's `readonly /usr`.
TEST(CocoonCheck, AWorkDirInsideABindIsRefusedAsEnforceRefusesIt) {
  const fs::path dir = fs::temp_directory_path() / ("cocoon-workbind-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host-work");
  const std::string policy = (dir / "p.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\nprofile p extends strict {\n  filesystem { work /usr/local/bin }\n}\n";
  const std::string reason =
      "the work dir /usr/local/bin is inside a bound host directory (/usr); put the work dir on the sandbox's own "
      "tree, outside every bind";
  Ran checked = Cocoon({"check", policy});
  EXPECT_EQ(checked.status, 1) << checked.err;
  EXPECT_NE(checked.err.find("ERROR: " + policy + ":3:21: " + reason), std::string::npos) << checked.err;
  Ran enforced = Cocoon({"enforce", "--work", (dir / "host-work").string(), policy, "--", "/bin/true"});
  EXPECT_NE(enforced.status, 0) << enforced.err;
  EXPECT_NE(enforced.err.find(reason), std::string::npos) << enforced.err;
  fs::remove_all(dir);
}

// An empty value is a usage error, never the option left out: `--work
// "$OUT"` with OUT unset ran without a work dir (results lost, exit 0), and
// an empty --audit-log ran without the audit trail.
TEST(CocoonRun, AnEmptyPathOrSizeIsAUsageError) {
  const std::vector<std::vector<std::string>> lines = {
      {"run", "--work", "", "--", "/bin/true"},      {"run", "--mem", "", "--", "/bin/true"},
      {"run", "--disk", "", "--", "/bin/true"},      {"run", "--audit-log", "", "--", "/bin/true"},
      {"run", "--log-json", "", "--", "/bin/true"},  {"pipeline", "--work", "", "-s", "bash:true"},
      {"enforce", "--work", "", COCOON_POLICIES_DIR "/strict.cocoon", "--", "/bin/true"}};
  for (const auto& line : lines) {
    Ran ran = Cocoon(line);
    EXPECT_EQ(ran.status, 2) << line[1] << " in " << line[0] << ": " << ran.err;
    EXPECT_NE(ran.err.find(line[1] + ": must not be empty"), std::string::npos) << ran.err;
  }
}

TEST(CocoonRun, UnknownRuntimeIsAUsageError) {
  Ran ran = Cocoon({"run", "-r", "cobol", "-c", "x"});
  EXPECT_EQ(ran.status, 2);
  EXPECT_NE(ran.err.find("unknown runtime 'cobol'"), std::string::npos) << ran.err;
}

// --log-json FILE always holds this run's result: a refused run replaces
// what an earlier run left there with the refusal, in every output mode.
TEST(CocoonRun, ARefusedRunReplacesAStaleLogJson) {
  fs::path log = fs::temp_directory_path() / ("cocoon-log-json-" + std::to_string(getpid()) + ".json");
  for (const char* mode : {"", "--json"}) {
    std::ofstream(log) << R"({"exit_code": 0, "stdout": "an earlier run"})" << "\n";
    std::vector<std::string> args = {"run", "--log-json", log.string(), "-r", "cobol", "-c", "x"};
    if (*mode != '\0') args.insert(args.begin() + 1, mode);
    Ran ran = Cocoon(args);
    EXPECT_EQ(ran.status, *mode != '\0' ? 1 : 2) << mode << ": " << ran.err;  // --json: the refusal is on stdout
    std::ifstream in(log);
    json j = json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << mode;
    EXPECT_EQ(j["refused"], true) << mode << j.dump();
    EXPECT_NE(j["error"].get<std::string>().find("unknown runtime 'cobol'"), std::string::npos) << j.dump();
  }
  fs::remove(log);
}

// --log-json replaces FILE (a temporary renamed over it), never opens it: a
// symlink planted there is replaced, not written through (as root, O_TRUNC
// through it clobbered any file). A FIFO is written to, never replaced, and
// only when it has a reader as the run starts. A destination that cannot
// take the result is refused before the command runs.
TEST(CocoonRun, LogJsonReplacesTheNameAndIsCheckedBeforeTheRun) {
  const fs::path base = fs::temp_directory_path() / ("cocoon-log-json-dest-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path victim = base / "victim";
  std::ofstream(victim) << "precious\n";
  const fs::path link = base / "out.json";
  fs::create_symlink(victim, link);
  Ran ran = Cocoon({"run", "--log-json", link.string(), "--", "/bin/true"}, "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_FALSE(fs::is_symlink(link));
  std::ifstream victim_in(victim);
  std::string victim_text((std::istreambuf_iterator<char>(victim_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(victim_text, "precious\n") << "written through the symlink";
  std::ifstream log_in(link);
  EXPECT_EQ(json::parse(log_in, nullptr, false)["exit_code"], 0);

  const fs::path fifo = base / "fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const fs::path marker = base / "ran";
  for (const fs::path& bad : {base / "missing-dir" / "o.json", base, fifo}) {
    ran = Cocoon({"run", "--log-json", bad.string(), "--", "/bin/touch", marker.string()}, "/tmp");
    EXPECT_EQ(ran.status, 1) << bad << "\n" << ran.err;
    EXPECT_NE(ran.err.find("--log-json"), std::string::npos) << ran.err;
  }
  EXPECT_FALSE(fs::exists(marker)) << "the command ran although its result could not be written";
  EXPECT_TRUE(fs::is_fifo(fifo)) << "a FIFO without a reader was replaced";
  for (const auto& entry : fs::directory_iterator(base)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "leftover " << entry.path();
  }
  fs::remove_all(base);
}

// A character device or FIFO named by --log-json is written to and stays
// what it was: renaming a file over /dev/null (as root, devtmpfs takes it)
// broke every later run on the host. The device here is a null device made
// in a temporary dir, so that the old behaviour cannot harm the host's /dev.
// /dev/stderr is cocoon's own stderr.
TEST(CocoonRun, LogJsonWritesToADeviceOrFifoAndLeavesItInPlace) {
  const fs::path base = fs::temp_directory_path() / ("cocoon-log-json-dev-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path fifo = base / "results";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The reader: O_RDWR never blocks on a FIFO, and the Outcome (a few KiB)
  // fits in the pipe's buffer, so it is read back after cocoon exits.
  const int reader = open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << strerror(errno);
  Ran ran = Cocoon({"run", "--json", "--log-json", fifo.string(), "--", "/bin/echo", "via-fifo"}, "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  std::string read_back;
  char buffer[4096];
  for (ssize_t n; (n = read(reader, buffer, sizeof buffer)) > 0;) read_back.append(buffer, static_cast<size_t>(n));
  close(reader);
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced by a file";
  json j = json::parse(read_back, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << read_back;
  EXPECT_EQ(j["stdout"], "via-fifo\n");

  ran = Cocoon({"run", "--json", "--log-json", "/dev/stderr", "--", "/bin/echo", "via-stderr"}, "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.err.find("\"stdout\": \"via-stderr\\n\""), std::string::npos) << ran.err;

  // A symlink to the FIFO (as /dev/stdin is to a descriptor) is written
  // through and kept: replacing /dev's links with files broke /dev as root.
  // On a cold cache (the launcher hands the run to cocoon-full), the
  // launcher's writer outlives the exec, so the reader is still there.
  const fs::path link = base / "results-link";
  fs::create_symlink(fifo, link);
  const fs::path cold_cache = base / "cold-cache";
  fs::create_directories(cold_cache);
  fs::permissions(cold_cache, fs::perms::owner_all, fs::perm_options::replace);
  const int link_reader = open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(link_reader, 0);
  ran = Cocoon({"run", "--json", "--timeout", "17.123", "--log-json", link.string(), "--", "/bin/echo", "via-link"},
               "/tmp", {{"COCOON_CACHE_DIR", cold_cache.string()}});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_TRUE(fs::is_symlink(link));
  read_back.clear();
  for (ssize_t n; (n = read(link_reader, buffer, sizeof buffer)) > 0;) read_back.append(buffer, static_cast<size_t>(n));
  close(link_reader);
  EXPECT_NE(read_back.find("via-link"), std::string::npos) << read_back;

  // A reader gone before the end (EPIPE) is reported; cocoon still prints
  // its Outcome and exits with the command's status (SIGPIPE killed it).
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t reader_process = fork();
  if (reader_process == 0) {  // there when cocoon starts, gone when it writes
    const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    (void)!write(ready[1], "r", 1);
    usleep(1000 * 1000);
    _exit(fd >= 0 ? 0 : 1);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ran = Cocoon({"run", "--json", "--log-json", fifo.string(), "--", "/bin/sh", "-c", "sleep 2; exit 3"}, "/tmp");
  waitpid(reader_process, nullptr, 0);
  EXPECT_EQ(ran.status, 3) << ran.err;
  EXPECT_EQ(Json(ran)["exit_code"], 3);

  // Refused before the command runs: stdout when it carries the Outcome
  // already (--json, --stream: it broke the NDJSON stream), however spelt,
  // a descriptor open for reading only, and a chain of links to a FIFO
  // (only the first link's owner was checked, so another user's link in the
  // middle could be re-pointed at any device).
  const fs::path marker = base / "ran";
  const fs::path chain = base / "chain";
  fs::create_symlink(link, chain);  // chain -> results-link -> results
  ran = Cocoon({"run", "--log-json", chain.string(), "--", "/bin/touch", marker.string()}, "/tmp");
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("leads through more than one symlink"), std::string::npos) << ran.err;
  EXPECT_TRUE(fs::is_symlink(chain));
  for (const char* mode : {"--json", "--stream"}) {
    for (const char* spelling : {"/dev/stdout", "/dev//stdout", "/proc/self/fd/1"}) {
      ran = Cocoon({"run", mode, "--log-json", spelling, "--", "/bin/touch", marker.string()}, "/tmp");
      EXPECT_EQ(ran.status, 1) << mode << " " << spelling << "\n" << ran.err;
      EXPECT_NE(ran.err.find("stdout carries the Outcome already"), std::string::npos) << ran.err;
    }
  }
  ran = Cocoon({"run", "--log-json", "/dev/stdin", "--", "/bin/touch", marker.string()}, "/tmp", {}, COCOON_BINARY,
               std::string());
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("open for reading only"), std::string::npos) << ran.err;
  EXPECT_FALSE(fs::exists(marker));

  if (geteuid() != 0) {
    std::cerr << "NOT TESTED HERE (needs root to mknod): --log-json onto a character device\n";
  } else {
    const fs::path null_device = base / "null";
    ASSERT_EQ(mknod(null_device.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
    ran = Cocoon({"run", "--log-json", null_device.string(), "--", "/bin/true"}, "/tmp");
    EXPECT_EQ(ran.status, 0) << ran.err;
    struct stat st {};
    ASSERT_EQ(lstat(null_device.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced by a regular file";
  }
  // Another user's FIFO (one planted under the name a caller will use) is
  // refused: writing to it would hand them the Outcome.
  if (geteuid() == 0) {
    const fs::path planted = base / "planted";
    ASSERT_EQ(mkfifo(planted.c_str(), 0666), 0);
    ASSERT_EQ(chown(planted.c_str(), 65534, 65534), 0);
    ran = Cocoon({"run", "--log-json", planted.string(), "--", "/bin/true"}, "/tmp");
    EXPECT_EQ(ran.status, 1) << ran.err;
    EXPECT_NE(ran.err.find("of another user"), std::string::npos) << ran.err;
  }
  fs::remove_all(base);
}

// Without --json, notes (here: a cwd that is not mounted) reach stderr
// before the command runs; the JSON modes carry them in the Outcome.
// A current directory whose path a policy cannot hold (invalid UTF-8, a
// newline) is not bound, with a note, like a system path: it made every
// `cocoon run` from there fail, -r python -c runs that never use it included.
TEST(CocoonRun, ACurrentDirectoryAPolicyCannotNameIsNotBound) {
  const fs::path base = fs::temp_directory_path() / ("cocoon-odd-cwd-" + std::to_string(getpid()));
  // U+FEFF, U+200B and U+202E: characters the policy lexer refuses as
  // invisible or bidirectional controls.
  for (const char* name : {"bad\xff" "dir", "new\nline", "bom\xef\xbb\xbf", "zw\xe2\x80\x8bsp", "rtl\xe2\x80\xaeo"}) {
    const fs::path dir = base / name;
    fs::create_directories(dir);
    Ran ran = Cocoon({"run", "--", "/bin/echo", "ran"}, dir.string());
    EXPECT_EQ(ran.status, 0) << ran.err;
    EXPECT_EQ(ran.out, "ran\n");
    EXPECT_NE(ran.err.find("the current directory is not mounted: its path holds a control character, an invisible"),
              std::string::npos)
        << ran.err;
  }
  fs::remove_all(base);
}

// --disk sizes the staged work dir, a tmpfs: RAM. It is clamped to the same
// ceiling as --mem (rootless, no memory cgroup charges it: a --disk 2G run
// held 1.5 GiB of host RAM under --mem 64), and a disk above the memory
// limit is explained (as root the writes ended in an OOM kill at --mem).
TEST(CocoonRun, DiskIsClampedLikeMemoryAndExplainedAboveIt) {
  json j = Json(Cocoon({"run", "--explain", "--json", "--disk", "100000000", "--", "/bin/true"}, "/tmp"));
  const std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("clamped to"), std::string::npos) << notes;
  EXPECT_NE(notes.find("the staged work dir is a tmpfs, in RAM"), std::string::npos) << notes;
  EXPECT_NE(notes.find("is above the memory limit 128.0 MiB"), std::string::npos) << notes;
  j = Json(Cocoon({"run", "--explain", "--json", "--disk", "100", "--mem", "200", "--", "/bin/true"}, "/tmp"));
  EXPECT_EQ(j["notes"].dump().find("is above the memory limit"), std::string::npos) << j["notes"].dump();
}

// The command reads cocoon's stdin (`cocoon run -- ./solution <
// input.txt`, as under `cocoon enforce`); it was /dev/null, so a harness's
// input silently went missing. Code read from stdin is not handed on again.
TEST(CocoonRun, TheCommandReadsStdinUnlessItHeldTheCode) {
  Ran ran = Cocoon({"run", "--", "/bin/cat"}, "/tmp", {}, COCOON_BINARY, std::string("the input\n"));
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "the input\n") << ran.err;
  ran = Cocoon({"run", "-r", "sh"}, "/tmp", {}, COCOON_BINARY, std::string("echo code; cat; echo end\n"));
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "code\nend\n") << ran.err;
}

// --env reaches the command and is recorded as an override by name: the
// audit log shows that the environment was changed, never the value (often
// a token), and no file keeps it: the generated policy passes the name (it
// was a `set` with the value, in the artifact cache until pruned).
TEST(CocoonRun, EnvFlagsReachTheCommandAndNoFileOrRecordHoldsTheValue) {
  const fs::path cache = fs::temp_directory_path() / ("cocoon-env-cache-" + std::to_string(getpid()));
  fs::remove_all(cache);
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::owner_all, fs::perm_options::replace);
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", cache.string()},
                                                                {"API_TOKEN", "the-host-value"}};
  Ran ran = Cocoon({"run", "--json", "--env", "API_TOKEN=sk-secret-value", "--", "/bin/sh", "-c", "echo $API_TOKEN"},
                   "/tmp", env);
  EXPECT_EQ(ran.status, 0) << ran.err;
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], "sk-secret-value\n");
  bool recorded = false;
  for (const auto& o : j["overrides"]) recorded |= o.get<std::string>() == "environment.API_TOKEN: set (--env)";
  EXPECT_TRUE(recorded) << j["overrides"].dump();
  EXPECT_EQ(j["overrides"].dump().find("sk-secret-value"), std::string::npos);
  json explained = Json(Cocoon({"run", "--explain", "--json", "--env", "API_TOKEN=sk-secret-value", "--", "/bin/true"},
                               "/tmp", env));
  EXPECT_EQ(explained.dump().find("sk-secret-value"), std::string::npos) << explained["generated_policy"];
  // A variable the runtime preset sets, under another base policy: --env
  // wins (the preset's `set` and a second `set` of it failed the check).
  ran = Cocoon({"run", "--json", "--policy", COCOON_POLICIES_DIR "/strict.cocoon", "-r", "sh", "--env",
                "SHELL=/bin/given", "-c", "echo $SHELL"},
               "/tmp", env);
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(Json(ran)["stdout"], "/bin/given\n") << ran.err;
  for (const auto& entry : fs::recursive_directory_iterator(cache)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("sk-secret-value"), std::string::npos) << "the value is in " << entry.path();
  }
  fs::remove_all(cache);
}

TEST(CocoonRun, PassThroughPrintsThePolicyNotes) {
  Ran ran = Cocoon({"run", "--", "/bin/true"}, "/tmp");
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.err.find("cocoon run: note: the current directory /tmp is not mounted"), std::string::npos) << ran.err;
}

// Hello world per preset; a runtime not installed here is skipped loudly.
struct Hello {
  const char* runtime;
  const char* code;
};

class CocoonRuntime : public ::testing::TestWithParam<Hello> {};

TEST_P(CocoonRuntime, RunsHelloWorld) {
  const Hello& hello = GetParam();
  Ran list = Cocoon({"run", "--list-runtimes", "--json"});
  json runtimes = Json(list)["runtimes"];
  bool found = false, available = false;
  for (const auto& r : runtimes) {
    if (r["name"] == hello.runtime) {
      found = true;
      available = r["available"];
    }
  }
  ASSERT_TRUE(found) << "no preset for " << hello.runtime;
  if (!available) GTEST_SKIP() << "RUNTIME NOT INSTALLED: " << hello.runtime << " (inspect reports it missing)";
  Ran ran = Cocoon({"run", "--json", "-r", hello.runtime, "-c", hello.code});
  json j = Json(ran);
  EXPECT_EQ(j["stdout"], std::string("hello from ") + hello.runtime + "\n") << j.dump(2) << ran.err;
  EXPECT_EQ(j["exit_code"], 0) << j["stderr"];
}

// A version is what the interpreter printed for its version flag, never a
// usage error: dash has no --version and says "Illegal option --".
TEST(CocoonRun, ListedVersionsAreNotUsageErrors) {
  json runtimes = Json(Cocoon({"run", "--list-runtimes", "--json"}))["runtimes"];
  bool saw_sh = false;
  for (const auto& r : runtimes) {
    if (!r["available"].get<bool>()) continue;
    std::string version = r.value("version", "");
    EXPECT_EQ(version.find("Illegal option"), std::string::npos) << r.dump();
    EXPECT_EQ(version.find("unknown option"), std::string::npos) << r.dump();
    if (r["name"] == "sh") {
      saw_sh = true;
      bool dash = std::filesystem::canonical(r["path"].get<std::string>()).filename() == "dash";
      if (dash) {
        EXPECT_EQ(version, "") << r.dump();
        EXPECT_NE(r.value("error", "").find("printed no version"), std::string::npos) << r.dump();
      }
    }
  }
  EXPECT_TRUE(saw_sh) << "sh, the case this test is about, was not listed as available:\n" << runtimes.dump(2);
}

// Each preset gives a throwaway HOME (issue 6): a tool's dotfiles go to the
// sandbox's /tmp, never into the host work dir.
TEST(CocoonRun, PresetsGiveAThrowawayHome) {
  const std::vector<std::pair<const char*, const char*>> home_printers = {
      {"python", "import os; print(os.environ['HOME'])"},
      {"node", "console.log(process.env.HOME)"},
      {"bash", "mkdir -p $HOME/.config && echo state > $HOME/.config/tool; echo $HOME"},
      {"sh", "echo $HOME"},
      {"perl", "print \"$ENV{HOME}\\n\""}};
  fs::path work = fs::temp_directory_path() / ("cocoon-home-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  for (const auto& [runtime, code] : home_printers) {
    // Run from the work dir: the default read-only cwd is bound at its own
    // path, which must not lie under the sandbox's /work.
    Ran ran = Cocoon({"run", "--json", "--work", work.string(), "-r", runtime, "-c", code}, work.string());
    json j = Json(ran);
    EXPECT_EQ(j["stdout"], "/tmp\n") << runtime << ": " << j.dump(2) << ran.err;
  }
  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(work)) left.push_back(entry.path().string());
  EXPECT_TRUE(left.empty()) << "reached the host work dir: " << ::testing::PrintToString(left);
  fs::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, CocoonRuntime,
    ::testing::Values(
        Hello{"python", "print('hello from python')"},
        Hello{"python-skill", "print('hello from python-skill')"},
        Hello{"node", "console.log('hello from node')"},
        Hello{"bash", "echo hello from bash"},
        Hello{"sh", "echo hello from sh"},
        Hello{"perl", "print \"hello from perl\\n\""},
        Hello{"ruby", "puts 'hello from ruby'"},
        Hello{"php", "echo \"hello from php\\n\";"},
        Hello{"lua", "print('hello from lua')"},
        Hello{"go", "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello from go\") }\n"},
        Hello{"rust", "fn main() { println!(\"hello from rust\"); }\n"},
        Hello{"java", "class Main { public static void main(String[] a) { System.out.println(\"hello from java\"); } }\n"},
        Hello{"deno", "console.log('hello from deno')"},
        Hello{"bun", "console.log('hello from bun')"},
        Hello{"pwsh", "Write-Output 'hello from pwsh'"}),
    [](const auto& info) {
      std::string name = info.param.runtime;
      for (char& c : name) if (c == '-') c = '_';
      return name;
    });

TEST(CocoonPipeline, StepsShareTheWorkDir) {
  Ran ran = Cocoon({"pipeline", "--json", "-s", "python:open('n.txt','w').write('41')", "-s",
                    "bash:echo $(( $(cat n.txt) + 1 ))"});
  ASSERT_EQ(ran.status, 0) << ran.out << ran.err;
  json j = Json(ran);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["outcome"]["stdout"], "42\n");
  EXPECT_EQ(j["total"]["ok"], true);
}

TEST(CocoonPipeline, StopsAtFirstFailureUnlessKeepGoing) {
  Ran stop = Cocoon({"pipeline", "--json", "-s", "bash:exit 3", "-s", "bash:echo second"});
  EXPECT_EQ(stop.status, 3);
  EXPECT_EQ(Json(stop)["steps"].size(), 1u);
  Ran going = Cocoon({"pipeline", "--json", "--keep-going", "-s", "bash:exit 3", "-s", "bash:echo second"});
  EXPECT_EQ(going.status, 3);
  json j = Json(going);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["outcome"]["stdout"], "second\n");
  EXPECT_EQ(j["total"]["failed"], 1);
}

// A typo in a later step's runtime is a usage error found before any step
// runs: nothing of step 1 reaches the --work dir.
TEST(CocoonPipeline, AnUnknownRuntimeInAnyStepRefusesBeforeTheFirstRuns) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-pipe-typo-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Ran ran = Cocoon({"pipeline", "--work", dir.string(), "-s", "bash:echo made > made.txt", "-s", "pyhton:print(1)"});
  EXPECT_EQ(ran.status, 2) << ran.err;
  EXPECT_NE(ran.err.find("step 2: unknown runtime 'pyhton'; presets: "), std::string::npos) << ran.err;
  EXPECT_EQ(ran.out, "");
  EXPECT_TRUE(fs::is_empty(dir)) << "step 1 ran before the typo was found";
  fs::remove_all(dir);
}

// SIGTERM to cocoon cancels the running step and ends the pipeline, even
// with --keep-going: the caller asked cocoon to stop, not the step to fail.
TEST(CocoonPipeline, ACancelledStepEndsThePipelineEvenWithKeepGoing) {
  fs::path out_path = fs::temp_directory_path() / ("cocoon-pipe-cancel-" + std::to_string(getpid()) + ".out");
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout)) _exit(125);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    execl(COCOON_BINARY, COCOON_BINARY, "pipeline", "--json", "--keep-going", "-s", "bash:sleep 30", "-s",
          "bash:echo second", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  auto waited = std::chrono::steady_clock::now() - sent;
  EXPECT_LT(waited, std::chrono::seconds(10)) << "the sleep ran on";
  ASSERT_TRUE(WIFEXITED(status)) << "cocoon died by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream in(out_path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  fs::remove(out_path);
  json j = json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["steps"].size(), 1u) << "step 2 ran after the cancel:\n" << text;
  EXPECT_EQ(j["total"]["cancelled"], true);
}

// Without --json each step's notes reach stderr, as with `cocoon run`: an
// escaping link a step leaves is reported as left out of the shared dir,
// the step as failed, and (--keep-going) the next step as running without
// all of its inputs.
TEST(CocoonPipeline, PlainOutputReportsWhatEachStepLeftOut) {
  Ran ran = Cocoon({"pipeline", "--keep-going", "-s", "bash:echo one; ln -s /etc/passwd escape", "-s", "bash:ls"});
  EXPECT_EQ(ran.status, 1) << ran.err;
  EXPECT_NE(ran.err.find("cocoon pipeline: step 1: work dir entry left out: escape (symlink-escape)"), std::string::npos)
      << ran.err;
  EXPECT_NE(ran.err.find("cocoon pipeline: step 1: failed: 1 entry the step wrote was left out of the shared work dir"),
            std::string::npos)
      << ran.err;
  EXPECT_NE(ran.err.find("cocoon pipeline: step 2: ran without all of its inputs"), std::string::npos) << ran.err;
  EXPECT_EQ(ran.out.find("escape"), std::string::npos) << "step 2 must not see the link:\n" << ran.out;
}

// A step whose files breakout verification left out of the shared dir has
// not handed on its work: it is not ok (status 1, its command's 0 kept in
// the Outcome) and the pipeline stops there; with --keep-going the next
// step says it ran without all of its inputs, and from which step. Seen
// failing on the old code: step 1 was `ok: true`, step 2 ran, and the
// pipeline exited 0 although step 2 never got the link and the FIFO.
TEST(CocoonPipeline, AStepWhoseFilesWereLeftOutFailsAndTheNextSaysItsInputsAreIncomplete) {
  if (!fs::exists("/bin/bash")) GTEST_SKIP() << "SKIPPED, NOT PASSED: no /bin/bash for the bash preset";
  const std::string leaves = "bash:echo kept > a.txt; ln -s /etc/passwd link; mkfifo fifo";
  Ran stop = Cocoon({"pipeline", "--json", "-s", leaves, "-s", "bash:cat a.txt"});
  EXPECT_EQ(stop.status, 1) << stop.err;
  json j = Json(stop);
  ASSERT_EQ(j["steps"].size(), 1u) << stop.out;
  EXPECT_EQ(j["steps"][0]["ok"], false);
  EXPECT_EQ(j["steps"][0]["exit_status"], 1);
  EXPECT_EQ(j["steps"][0]["outcome"]["exit_code"], 0);
  EXPECT_EQ(j["steps"][0]["outputs_left_out"], 2);
  EXPECT_NE(j["steps"][0].value("reason", "").find("left out of the shared work dir"), std::string::npos) << stop.out;
  EXPECT_EQ(j["steps"][0]["inputs_complete"], true);
  EXPECT_EQ(j["total"]["ok"], false);
  EXPECT_EQ(j["total"]["failed"], 1);
  EXPECT_EQ(j["total"]["exit_status"], 1);

  Ran going = Cocoon({"pipeline", "--json", "--keep-going", "-s", leaves, "-s", "bash:cat a.txt", "-s", "bash:exit 4",
                      "-s", "bash:true"});
  EXPECT_EQ(going.status, 1) << going.err;
  j = Json(going);
  ASSERT_EQ(j["steps"].size(), 4u) << going.out;
  EXPECT_EQ(j["steps"][1]["outcome"]["stdout"], "kept\n");
  EXPECT_EQ(j["steps"][1]["ok"], true) << "step 2's own run succeeded";
  EXPECT_EQ(j["steps"][1]["inputs_complete"], false);
  EXPECT_EQ(j["steps"][1]["inputs_missing"], json::parse(R"([{"step": 1, "left_out": 2}])"));
  EXPECT_EQ(j["steps"][1]["outputs_left_out"], 0);
  // A step that exits non-zero still commits what it wrote (cli.md): it is
  // not listed as missing; the first step still is.
  EXPECT_EQ(j["steps"][2]["exit_status"], 4);
  EXPECT_EQ(j["steps"][3]["inputs_missing"], json::parse(R"([{"step": 1, "left_out": 2}])"));
  EXPECT_EQ(j["total"]["failed"], 2);
}

// Direct work mode: the step writes the shared dir itself, and breakout
// verification removes an escaping link from it but only clears a set-id
// file's bit (the file stays, and later steps get it). Every finding was
// counted in outputs_left_out and the reason said "left out of the shared
// work dir", the set-id file included, though it was still there. Now only
// what was removed is counted, and said to be removed. Seen failing on the
// old code (outputs_left_out 2, "left out of").
TEST(CocoonPipeline, ADirectStepCountsOnlyWhatWasRemovedFromTheSharedDir) {
  if (!fs::exists("/bin/bash")) GTEST_SKIP() << "SKIPPED, NOT PASSED: no /bin/bash for the bash preset";
  fs::path dir = fs::temp_directory_path() / ("cocoon-pipeline-direct-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "w");
  // As root the sandbox runs as 65534: the shared dir must be writable to it.
  fs::permissions(dir / "w", fs::perms::all);
  const std::string policy = (dir / "p.cocoon").string();
  std::ofstream(policy) << "import \"strict\"\nprofile p extends strict {\n  filesystem {\n"
                           "    work /work quota 64MiB direct\n  }\n}\n";
  Ran ran = Cocoon({"pipeline", "--json", "--policy", policy, "--work", (dir / "w").string(), "-s",
                    "bash:cp /bin/true s; chmod 4755 s; ln -s /etc/passwd esc"});
  json j = Json(ran);
  ASSERT_EQ(j["steps"].size(), 1u) << ran.out << ran.err;
  EXPECT_EQ(j["steps"][0]["outcome"]["breakout"]["work_mode"], "direct") << ran.out;
  EXPECT_EQ(j["steps"][0]["outcome"]["breakout"]["findings"].size(), 2u) << ran.out;
  EXPECT_EQ(j["steps"][0]["outputs_left_out"], 1) << ran.out;
  const std::string reason = j["steps"][0].value("reason", "");
  EXPECT_NE(reason.find("1 entry the step wrote was removed from the shared work dir"), std::string::npos) << reason;
  EXPECT_TRUE(fs::exists(dir / "w" / "s")) << "the set-id file (bit cleared) is in the shared dir";
  EXPECT_FALSE(fs::is_symlink(dir / "w" / "esc"));
  fs::remove_all(dir);
}

// A step refused or killed by a limit hands on nothing: with --keep-going
// the steps after it say so.
TEST(CocoonPipeline, AStepThatCommittedNothingIsAnInputMissingFromLaterSteps) {
  if (!fs::exists("/bin/bash")) GTEST_SKIP() << "SKIPPED, NOT PASSED: no /bin/bash for the bash preset";
  Ran ran = Cocoon({"pipeline", "--json", "--keep-going", "--timeout", "1", "-s", "bash:echo x > x; sleep 30", "-s",
                    "bash:ls"});
  EXPECT_EQ(ran.status, 124) << ran.err;
  json j = Json(ran);
  ASSERT_EQ(j["steps"].size(), 2u) << ran.out;
  EXPECT_EQ(j["steps"][0]["outcome"]["committed"], false);
  EXPECT_EQ(j["steps"][1]["inputs_complete"], false);
  EXPECT_EQ(j["steps"][1]["inputs_missing"], json::parse(R"([{"step": 1, "committed": false}])"));
  EXPECT_EQ(j["steps"][1]["outcome"]["stdout"], "");
}

std::vector<json> Lines(const std::string& text) {
  std::vector<json> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    lines.push_back(j);
  }
  return lines;
}

std::string DecodeBase64(const std::string& in) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : in) {
    size_t value = kAlphabet.find(c);
    if (value == std::string::npos) continue;  // '=' padding
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

// How the bytes are split into chunks depends on when the supervisor reads
// the pipe (the text and the binary may arrive in one read), so the test
// reassembles the stream and checks its bytes, and that non-UTF-8 data went
// out as base64.
TEST(CocoonStream, ChunksThenOutcomeWithBase64ForBinary) {
  Ran ran = Cocoon({"run", "--stream", "-r", "python", "-c",
                    "import sys\nprint('text', flush=True)\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00'); sys.stdout.flush()\n"
                    "print('err', file=sys.stderr)"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  auto lines = Lines(ran.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.back()["stream"], "outcome");
  EXPECT_EQ(lines.back()["exit_code"], 0);
  std::string stdout_bytes, stderr_bytes;
  bool base64 = false;
  uint64_t last_seq = 0;
  for (const auto& l : lines) {
    EXPECT_GT(l["seq"].get<uint64_t>(), last_seq);
    last_seq = l["seq"];
    if (l["stream"] != "stdout" && l["stream"] != "stderr") continue;
    bool encoded = l.value("encoding", "") == "base64";
    std::string data = encoded ? DecodeBase64(l["data"].get<std::string>()) : l["data"].get<std::string>();
    if (l["stream"] == "stdout") {
      stdout_bytes += data;
      base64 |= encoded;
    } else {
      stderr_bytes += data;
    }
  }
  EXPECT_EQ(stdout_bytes, std::string("text\n\xff\xfe\0", 8));
  EXPECT_TRUE(base64) << ran.out;
  EXPECT_EQ(stderr_bytes, "err\n");
}

TEST(CocoonStream, GigabyteFloodIsTruncatedWithBoundedMemory) {
  Ran ran = Cocoon({"run", "--stream", "--timeout", "60", "--", "/bin/sh", "-c", "head -c 1073741824 /dev/zero"});
  auto lines = Lines(ran.out);
  ASSERT_FALSE(lines.empty()) << ran.err;
  const json& outcome = lines.back();
  EXPECT_EQ(outcome["stream"], "outcome");
  EXPECT_EQ(outcome["stdout_truncated"], true);
  bool marker = false;
  for (const auto& l : lines) marker |= l.value("truncated", false);
  EXPECT_TRUE(marker) << "no truncation marker line";
  EXPECT_LT(ran.out.size(), 16u << 20) << "more than the cap came through";
  EXPECT_LT(ran.max_rss_kib, 256 * 1024) << "cocoon's peak RSS grew with the flood";
}

TEST(CocoonDoctor, DefaultPolicyEnforceableHere) {
  Ran ran = Cocoon({"doctor", "--json"});
  json j = Json(ran);
  EXPECT_EQ(j["default_policy_enforceable"], ran.status == 0);
  bool userns = false;
  for (const auto& c : j["checks"]) {
    EXPECT_TRUE(c["status"] == "ok" || c["status"] == "warn" || c["status"] == "fail") << c;
    if (c["status"] != "ok") {
      EXPECT_TRUE(c.contains("fix")) << c;
    }
    if (c["name"] == "user namespaces") userns = c["status"] == "ok";
  }
  EXPECT_TRUE(userns) << j.dump(2);
  Ran text = Cocoon({"doctor"});
  EXPECT_NE(text.out.find("ok    user namespaces"), std::string::npos) << text.out;
}

// Without strict.cocoon in the policy search path every `cocoon run`
// without --policy fails ("strict.cocoon not found"); doctor said the
// default policy could be enforced and exited 0. It is a required check.
TEST(CocoonDoctor, ADefaultPolicyThatCannotBeFoundIsARequiredFailure) {
  const std::vector<std::pair<std::string, std::string>> nowhere = {{"COCOON_POLICY_PATH", "/nonexistent"}};
  Ran ran = Cocoon({"doctor", "--json"}, "/tmp", nowhere);
  EXPECT_EQ(ran.status, 1) << ran.out << ran.err;
  json j = Json(ran);
  EXPECT_EQ(j["default_policy_enforceable"], false);
  bool found = false;
  for (const auto& c : j["checks"]) {
    if (c["name"] != "default policy") continue;
    found = true;
    EXPECT_EQ(c["status"], "fail") << c;
    EXPECT_NE(c.value("fix", "").find("COCOON_POLICY_PATH"), std::string::npos) << c;
  }
  EXPECT_TRUE(found) << j.dump(2);
  Ran text = Cocoon({"doctor"}, "/tmp", nowhere);
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("CANNOT be enforced"), std::string::npos) << text.out;
  // Where it is found, the check passes.
  json here = Json(Cocoon({"doctor", "--json"}, "/tmp"));
  for (const auto& c : here["checks"]) {
    if (c["name"] == "default policy") {
      EXPECT_EQ(c["status"], "ok") << c;
    }
  }
}

// Rootless on a host whose memory and pids controllers are on cgroup v1
// (this one), no user can be delegated a group: doctor says so instead of
// suggesting systemd-run, which only delegates cgroup v2.
TEST(CocoonDoctor, TheRootlessCgroupFixFitsTheHost) {
  const bool v2_memory = [] {
    std::ifstream in("/sys/fs/cgroup/cgroup.controllers");
    std::ifstream hybrid("/sys/fs/cgroup/unified/cgroup.controllers");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.append(std::istreambuf_iterator<char>(hybrid), std::istreambuf_iterator<char>());
    return text.find("memory") != std::string::npos;
  }();
  if (geteuid() != 0 || v2_memory || access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED LOUDLY: needs root (to run doctor as uid 65534 with setpriv) on a host whose memory "
                    "controller is on cgroup v1";
  }
  Ran ran = Cocoon({"--reuid=65534", "--regid=65534", "--clear-groups", COCOON_BINARY, "doctor", "--json"}, "/tmp",
                   {{"HOME", "/tmp"}}, "/usr/bin/setpriv");
  json j = Json(ran);
  bool found = false;
  for (const auto& c : j["checks"]) {
    if (c["name"] != "cgroups") continue;
    found = true;
    EXPECT_EQ(c["status"], "warn") << c;
    EXPECT_NE(c["fix"].get<std::string>().find("not on cgroup v2 here"), std::string::npos) << c;
  }
  EXPECT_TRUE(found) << j.dump(2);
}

TEST(CocoonInfo, MemoryCeilingIs95Percent) {
  json j = Json(Cocoon({"info", "--json"}));
  uint64_t total = j["memory"]["total_bytes"];
  uint64_t ceiling = j["memory"]["ceiling_bytes"];
  uint64_t base = j["memory"].contains("cgroup_limit_bytes")
                      ? std::min<uint64_t>(total, j["memory"]["cgroup_limit_bytes"].get<uint64_t>())
                      : total;
  EXPECT_EQ(ceiling, base / 100 * 95);
  EXPECT_FALSE(j["kernel"]["release"].get<std::string>().empty());
}

// A limit on a group above cocoon's binds it as much as its own: a 1 GiB
// parent with an unlimited child OOM-killed a "--mem 2G" sandbox, and the
// ceiling said 95% of the host. v1 here (memory.stat's
// hierarchical_memory_limit); the v2 walk up memory.max is the same rule.
TEST(CocoonInfo, AnAncestorGroupsMemoryLimitBindsTheCeiling) {
  std::ifstream cgroup_file("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(cgroup_file, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    if (controllers.find(",memory,") != std::string::npos) own = line.substr(second + 1);
  }
  const fs::path mount = "/sys/fs/cgroup/memory";
  if (geteuid() != 0 || own.empty() || !fs::exists(mount / "memory.limit_in_bytes")) {
    GTEST_SKIP() << "SKIPPED LOUDLY: needs root and a cgroup v1 memory hierarchy at " << mount;
  }
  const fs::path parent = mount / own.substr(1) / ("cocoon-ceiling-test-" + std::to_string(getpid()));
  const fs::path child = parent / "child";
  fs::create_directories(child);
  std::ofstream(parent / "memory.limit_in_bytes") << (1ull << 30);
  Ran ran = Cocoon({"-c", "echo $$ > " + (child / "cgroup.procs").string() + " && exec " COCOON_BINARY " info --json"},
                   "", {}, "/bin/sh");
  fs::remove(child);
  fs::remove(parent);
  ASSERT_EQ(ran.status, 0) << ran.err;
  json j = json::parse(ran.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ran.out;
  EXPECT_EQ(j["memory"]["cgroup_limit_bytes"], 1ull << 30) << j["memory"].dump();
  EXPECT_EQ(j["memory"]["ceiling_bytes"], (1ull << 30) / 100 * 95) << j["memory"].dump();
}

// The launcher `cocoon` and cocoon-full (docs/cli.md, "Two executables").
// A private copy of both, with a private artifact cache: the cache key names
// cocoon-full's build by its inode, size and mtime, so a copy starts cold.
class CocoonLauncher : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cocoon-launcher-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cache");
    fs::permissions(dir_ / "cache", fs::perms::owner_all, fs::perm_options::replace);
    fs::create_directories(dir_ / "work");
    fs::path built = fs::path(COCOON_BINARY).parent_path();
    fs::copy_file(built / "cocoon", dir_ / "cocoon");
    fs::copy_file(built / "cocoon-full", dir_ / "cocoon-full");
    env_ = {{"COCOON_CACHE_DIR", (dir_ / "cache").string()}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  Ran Run(const std::vector<std::string>& args, const std::optional<std::string>& stdin_text = std::nullopt) {
    return Cocoon(args, "", env_, (dir_ / "cocoon").string(), stdin_text);
  }

  fs::path dir_;
  std::vector<std::pair<std::string, std::string>> env_;
  const std::string strict_ = std::string(COCOON_POLICIES_DIR) + "/strict.cocoon";
};

TEST_F(CocoonLauncher, WarmEnforceAndRunAreServedWithoutCocoonFull) {
  // Cold: the launcher hands both to cocoon-full, which compiles and fills
  // the caches.
  Ran cold_enforce = Run({"enforce", strict_, "--", "/bin/echo", "cold"});
  ASSERT_EQ(cold_enforce.status, 0) << cold_enforce.err;
  EXPECT_EQ(cold_enforce.out, "cold\n");
  Ran cold_run = Run({"run", "--", "/bin/echo", "cold"});
  ASSERT_EQ(cold_run.status, 0) << cold_run.err;

  // cocoon-full can no longer be executed; chmod changes its ctime only, not
  // the inode, size and mtime that the cache key names.
  fs::permissions(dir_ / "cocoon-full", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace);
  Ran warm_enforce = Run({"enforce", strict_, "--", "/bin/echo", "served"});
  EXPECT_EQ(warm_enforce.status, 0) << warm_enforce.err;
  EXPECT_EQ(warm_enforce.out, "served\n");
  Ran warm_run = Run({"run", "--", "/bin/echo", "served"});
  EXPECT_EQ(warm_run.status, 0) << warm_run.err;
  EXPECT_EQ(warm_run.out, "served\n");

  // Whatever needs the compiler is refused with a message naming the file,
  // and nothing runs.
  const std::string expected = "cannot run " + (dir_ / "cocoon-full").string();
  Ran check = Run({"check", strict_});
  EXPECT_EQ(check.status, 1);
  EXPECT_NE(check.err.find(expected), std::string::npos) << check.err;
  Ran new_flags = Run({"run", "--work", (dir_ / "work").string(), "--timeout", "7", "--", "/bin/sh", "-c",
                       "echo ran > /work/out.txt"});
  EXPECT_EQ(new_flags.status, 1);
  EXPECT_NE(new_flags.err.find(expected), std::string::npos) << new_flags.err;
  EXPECT_FALSE(fs::exists(dir_ / "work" / "out.txt"));
}

TEST_F(CocoonLauncher, CodeReadFromStdinReachesCocoonFullOnAColdCache) {
  // The launcher reads the code, then finds it must compile: cocoon-full gets
  // the same bytes on its stdin.
  Ran cold = Run({"run", "-r", "python"}, "print('from stdin', 6 * 7)\n");
  EXPECT_EQ(cold.status, 0) << cold.err;
  EXPECT_EQ(cold.out, "from stdin 42\n");
  Ran warm = Run({"run", "-r", "python"}, "print('again')\n");
  EXPECT_EQ(warm.status, 0) << warm.err;
  EXPECT_EQ(warm.out, "again\n");
}

// The launcher is a static executable: a signed audit log (libcrypto is
// dlopen'ed) and a network allow-list (getaddrinfo) are handed to cocoon-full
// before anything starts (cli/launch_dynamic.h). Shown by taking cocoon-full
// away on a warm cache: those launches are refused and run nothing, while a
// plain warm launch is still served.
TEST_F(CocoonLauncher, AuditedAndAllowListLaunchesAreHandedToCocoonFull) {
  const std::string key = (dir_ / "key").string();
  ASSERT_EQ(Run({"audit", "keygen", "--out", key}).status, 0);
  fs::path allow = dir_ / "allow.cocoon";
  std::ofstream(allow) << "import \"strict\"\nprofile allow extends strict {\n  network allow { 127.0.0.1:9 }\n}\n";
  const std::string log = (dir_ / "audit.ndjson").string();
  // Warm both caches; with cocoon-full present, both launches work.
  Ran audited = Run({"enforce", strict_, "--audit-log", log, "--audit-key", key, "--", "/bin/echo", "audited"});
  ASSERT_EQ(audited.status, 0) << audited.err;
  EXPECT_EQ(audited.out, "audited\n");
  Ran verified = Run({"audit", "verify", log, "--trust", key + ".pub"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  Ran allowed = Run({"enforce", allow.string(), "--", "/bin/echo", "allow-list"});
  ASSERT_EQ(allowed.status, 0) << allowed.err;
  EXPECT_EQ(allowed.out, "allow-list\n");
  fs::remove(log);

  fs::permissions(dir_ / "cocoon-full", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace);
  const std::string expected = "cannot run " + (dir_ / "cocoon-full").string();
  Ran plain = Run({"enforce", strict_, "--", "/bin/echo", "served"});
  EXPECT_EQ(plain.status, 0) << plain.err;
  Ran audited_warm = Run({"enforce", strict_, "--audit-log", log, "--audit-key", key, "--", "/bin/sh", "-c",
                          "echo ran > " + (dir_ / "work" / "audited.txt").string()});
  EXPECT_EQ(audited_warm.status, 1);
  EXPECT_NE(audited_warm.err.find(expected), std::string::npos) << audited_warm.err;
  EXPECT_FALSE(fs::exists(log)) << "the launcher must not write the audit log itself";
  Ran allowed_warm = Run({"enforce", allow.string(), "--", "/bin/echo", "allow-list"});
  EXPECT_EQ(allowed_warm.status, 1);
  EXPECT_NE(allowed_warm.err.find(expected), std::string::npos) << allowed_warm.err;
  EXPECT_EQ(allowed_warm.out, "");
}

// A compiled filter is cached under what it is compiled from (the syscall
// rules and the connect routing: backends::SeccompCompileInput), so `run`
// flags that change only limits reuse it; a different rule set gets its own.
TEST_F(CocoonLauncher, FlagsThatChangeOnlyLimitsReuseTheCompiledFilter) {
  // {all entries, filter-only entries} in the private cache dir.
  auto count = [&] {
    std::pair<int, int> n{0, 0};
    for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
      if (entry.path().extension() != ".entry") continue;
      ++n.first;
      std::ifstream in(entry.path());
      std::string index;
      std::getline(in, index);
      auto j = nlohmann::json::parse(index);
      if (j["plan"]["size"] == 0 && j["bpf"]["size"] != 0) ++n.second;
    }
    return n;
  };
  Ran first = Run({"run", "--timeout", "3", "--", "/bin/true"});
  ASSERT_EQ(first.status, 0) << first.err;
  auto after_first = count();
  EXPECT_EQ(after_first.second, 1);
  Ran other_timeout = Run({"run", "--timeout", "4", "--", "/bin/true"});
  ASSERT_EQ(other_timeout.status, 0) << other_timeout.err;
  auto after_second = count();
  EXPECT_EQ(after_second.first, after_first.first + 1) << "a new policy entry, and no new filter";
  EXPECT_EQ(after_second.second, 1);
  Ran other_rules = Run({"run", "--policy", std::string(COCOON_POLICIES_DIR) + "/build.cocoon", "--timeout", "4", "--",
                         "/bin/true"});
  ASSERT_EQ(other_rules.status, 0) << other_rules.err;
  EXPECT_EQ(count().second, 2) << "build's syscall rules are not strict's: a filter of their own";
}

TEST_F(CocoonLauncher, PolicyMistakesOnAColdCacheAreReportedByCocoonFull) {
  fs::path bad = dir_ / "bad.cocoon";
  std::ofstream(bad) << "profile bad {\n  network sideways\n}\n";
  Ran ran = Run({"enforce", bad.string(), "--", "/bin/true"});
  EXPECT_EQ(ran.status, 1);
  EXPECT_NE(ran.err.find(bad.string() + ":2:"), std::string::npos) << ran.err;
}

}  // namespace
namespace {

// strict.cocoon with another host name: a base profile whose effect a run
// prints (`/bin/hostname`).
std::string StrictWithHostname(const std::string& hostname) {
  std::ifstream in(COCOON_POLICIES_DIR "/strict.cocoon");
  std::stringstream text;
  text << in.rdbuf();
  std::string strict = text.str();
  const std::string from = "hostname sandbox";
  size_t at = strict.find(from);
  EXPECT_NE(at, std::string::npos) << "strict.cocoon sets no hostname any more";
  if (at != std::string::npos) strict.replace(at, from.size(), "hostname " + hostname);
  return strict;
}

// Every entry under `dir`, as paths relative to it.
std::vector<std::string> EntriesUnder(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    names.push_back(fs::relative(it->path(), dir).string());
  }
  return names;
}

}  // namespace

// `import` resolves a relative COCOON_POLICY_PATH entry against the current
// directory, so the cache key must too: with the raw text in the key, a run
// from another directory with COCOON_POLICY_PATH=p was served the first
// run's import (seen failing on that code: both printed "one").
TEST(CocoonEnforce, ARelativePolicyPathResolvesFromEachRunsOwnDirectoryCachedOrNot) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-relative-search-" + std::to_string(getpid()));
  fs::remove_all(dir);
  for (const char* sub : {"a/p", "b/p", "policy", "cache"}) fs::create_directories(dir / sub);
  std::ofstream(dir / "a" / "p" / "base.cocoon") << StrictWithHostname("one");
  std::ofstream(dir / "b" / "p" / "base.cocoon") << StrictWithHostname("two");
  // `cocoon run`'s base, found in the search path (it once went into the
  // generated policy as the relative p/strict.cocoon, which nothing found).
  std::ofstream(dir / "a" / "p" / "strict.cocoon") << StrictWithHostname("one");
  std::ofstream(dir / "b" / "p" / "strict.cocoon") << StrictWithHostname("two");
  const std::string policy = (dir / "policy" / "mine.cocoon").string();
  std::ofstream(policy) << "import \"base\"\nprofile mine extends strict {}\n";
  const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", (dir / "cache").string()},
                                                                {"COCOON_POLICY_PATH", "p"}};
  for (int round = 0; round < 2; ++round) {  // the second round from a warm cache
    for (const char* cwd : {"a", "b"}) {
      const std::string expected = std::string(cwd) == "a" ? "one\n" : "two\n";
      Ran ran = Cocoon({"enforce", policy, "--", "/bin/hostname"}, (dir / cwd).string(), env);
      EXPECT_EQ(ran.status, 0) << ran.err;
      EXPECT_EQ(ran.out, expected) << "enforce from " << cwd << ", round " << round;
      Ran run = Cocoon({"run", "--", "/bin/hostname"}, (dir / cwd).string(), env);
      EXPECT_EQ(run.status, 0) << run.err;
      EXPECT_EQ(run.out, expected) << "run from " << cwd << ", round " << round;
    }
  }
  fs::remove_all(dir);
}

// Where stdout cannot take what cocoon writes there (a full disk: /dev/full
// fails every write with ENOSPC), the run is reported on stderr and exits
// 125, never 0 with half an Outcome (seen failing on the old code: exit 0,
// and no word from `run --json`, `run --stream` and pass-through).
TEST(CocoonRun, OutputThatCannotBeWrittenExits125WithANote) {
  const std::string strict = COCOON_POLICIES_DIR "/strict.cocoon";
  const std::vector<std::vector<std::string>> commands = {
      {"enforce", "--json", strict, "--", "/bin/echo", "hi"},
      {"enforce", strict, "--", "/bin/echo", "hi"},
      {"run", "--json", "--", "/bin/echo", "hi"},
      {"run", "--stream", "--", "/bin/echo", "hi"},
      {"run", "--", "/bin/echo", "hi"},
      {"pipeline", "--json", "-s", "bash:echo hi"},
      {"pipeline", "-s", "bash:echo hi"},
  };
  for (const auto& command : commands) {
    if (command[0] == "pipeline" && !fs::exists("/bin/bash")) continue;
    std::vector<std::string> args = {"-c", "exec \"$0\" \"$@\" > /dev/full", COCOON_BINARY};
    args.insert(args.end(), command.begin(), command.end());
    Ran ran = Cocoon(args, "", {}, "/bin/sh");
    std::string shown;
    for (const auto& word : command) shown += word + " ";
    EXPECT_EQ(ran.status, 125) << shown << ran.err;
    EXPECT_NE(ran.err.find("could not be written"), std::string::npos) << shown << ran.err;
  }
}

// A cache directory that another user could change (it, or a directory
// above it, is theirs or writable by others) is neither read nor written:
// `enforce` compiles and runs without it, `run` (which keeps its generated
// policy there) refuses and says why. Root once wrote its entries and the
// `quick` policy files into such a dir, and `run` compiled whatever policy
// that user put there (seen failing on the old code: entries were written).
TEST(CocoonRun, ACacheDirAnotherUserCouldChangeIsNotUsed) {
  if (geteuid() != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): needs root, to make a directory another user owns";
  fs::path dir = fs::temp_directory_path() / ("cocoon-untrusted-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "theirs" / "cache");
  fs::create_directories(dir / "owned");
  fs::create_directories(dir / "open");
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(chown((dir / "theirs").c_str(), 65534, 65534), 0);  // they can rename our `cache` away
  ASSERT_EQ(chown((dir / "owned").c_str(), 65534, 65534), 0);   // theirs outright
  ASSERT_EQ(chmod((dir / "open").c_str(), 0777), 0);            // anyone's to write
  const std::string strict = COCOON_POLICIES_DIR "/strict.cocoon";
  for (const fs::path& cache : {dir / "theirs" / "cache", dir / "owned", dir / "open"}) {
    const std::vector<std::pair<std::string, std::string>> env = {{"COCOON_CACHE_DIR", cache.string()}};
    Ran enforce = Cocoon({"enforce", strict, "--", "/bin/echo", "ran"}, "", env);
    EXPECT_EQ(enforce.status, 0) << cache << enforce.err;
    EXPECT_EQ(enforce.out, "ran\n") << cache;
    Ran run = Cocoon({"run", "--", "/bin/echo", "ran"}, "", env);
    EXPECT_EQ(run.status, 1) << cache << run.err;
    EXPECT_EQ(run.out, "") << cache;
    EXPECT_NE(run.err.find("COCOON_CACHE_DIR"), std::string::npos) << cache << run.err;
    EXPECT_EQ(EntriesUnder(cache), std::vector<std::string>{}) << cache << ": written although untrusted";
  }
  fs::remove_all(dir);
}

// Runs cocoon with stdout a pipe whose reader has gone (the read end closed
// before cocoon starts: `cocoon run --json | head -c1` once head is done),
// stderr captured, stdin `stdin_text` (then EOF) or /dev/null.
Ran CocoonWithClosedStdout(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  std::string dir = fs::temp_directory_path() / ("cocoon-closed-stdout-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string err_path = dir + "/err", in_path = dir + "/in";
  std::ofstream(in_path) << stdin_text;
  int fds[2];
  if (pipe(fds) != 0) return {};
  close(fds[0]);
  pid_t pid = fork();
  if (pid == 0) {
    int in = open(in_path.c_str(), O_RDONLY);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || err < 0 || dup2(in, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(err, 2) < 0) _exit(126);
    signal(SIGPIPE, SIG_DFL);  // as a shell leaves it
    std::vector<char*> argv = {const_cast<char*>(COCOON_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(COCOON_BINARY, argv.data());
    _exit(127);
  }
  close(fds[1]);
  Ran ran;
  std::tie(ran.status, ran.err) = WaitAndReadStderr(pid, err_path);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return ran;
}

// A reader of stdout that went away before the Outcome (or the stream, or
// the pipeline's result) was written: cocoon says so on stderr and exits
// 125, after the run was verified and its work committed as usual, and
// --log-json still gets its copy. Seen failing on the old code: SIGPIPE
// ended cocoon (exit 141) with no word, and the --log-json file was never
// written.
TEST(CocoonRun, AClosedStdoutIsReportedNotDiedOf) {
  const std::string strict = COCOON_POLICIES_DIR "/strict.cocoon";
  const fs::path base = fs::temp_directory_path() / ("cocoon-epipe-" + std::to_string(getpid()));
  fs::remove_all(base);
  struct Case {
    std::vector<std::string> args;
    std::string what;
  };
  const std::string work = (base / "work").string();
  const std::string log = (base / "outcome.json").string();
  const std::vector<Case> cases = {
      {{"enforce", "--json", strict, "--work", work, "--", "/bin/sh", "-c", "echo made > /work/made.txt; echo hi"},
       "the Outcome (--json) on stdout could not be written in full"},
      {{"run", "--json", "--log-json", log, "--work", work, "--", "/bin/sh", "-c", "echo made > made.txt; echo hi"},
       "the Outcome (--json) on stdout could not be written in full"},
      {{"run", "--stream", "--work", work, "--", "/bin/sh", "-c", "echo made > made.txt; echo hi"},
       "the stream (--stream) on stdout could not be written in full"},
      {{"pipeline", "--json", "--work", work, "-s", "bash:echo made > made.txt; echo hi"},
       "the result (--json) on stdout could not be written in full"},
  };
  for (const Case& c : cases) {
    if (c.args[0] == "pipeline" && !fs::exists("/bin/bash")) continue;
    fs::remove_all(base);
    fs::create_directories(work);
    chmod(work.c_str(), 0777);
    Ran ran = CocoonWithClosedStdout(c.args);
    const std::string shown = c.args[0] + " " + c.args[1];
    EXPECT_EQ(ran.status, 125) << shown << ": " << ran.err;
    EXPECT_NE(ran.err.find(c.what), std::string::npos) << shown << ": " << ran.err;
    EXPECT_TRUE(fs::exists(work + "/made.txt")) << shown << ": the run's work was not committed";
    if (std::find(c.args.begin(), c.args.end(), "--log-json") != c.args.end()) {
      std::ifstream in(log);
      json j = json::parse(in, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << shown << ": --log-json not written";
      if (!j.is_discarded()) {
        EXPECT_EQ(j["stdout"], "hi\n") << shown;
      }
    }
  }
  fs::remove_all(base);
}

// An MCP client that closed its end of the server's stdout can read no
// answer: the server stops at the first one it cannot write (cancelling the
// call in flight, whose sandbox is killed), says so and exits 125. Seen
// failing on the old code: it ran the call to its end, answered nobody and
// exited 0 (and, with stdin left open, served on).
TEST(CocoonMcp, AClientThatClosedStdoutStopsTheServer) {
  const std::string requests =
      R"j({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":{"command":"sleep 3; echo done"}}})j"
      "\n"
      R"j({"jsonrpc":"2.0","id":2,"method":"ping"})j"
      "\n";
  Ran ran = CocoonWithClosedStdout({"mcp"}, requests);
  EXPECT_EQ(ran.status, 125) << ran.err;
  EXPECT_NE(ran.err.find("cocoon mcp: an answer to the client on stdout (the calls in flight were cancelled) could "
                         "not be written in full"),
            std::string::npos)
      << ran.err;
}

// Binds are recursive, so a procfs mounted below a bound directory showed
// the host's processes (PID 1's cmdline, /proc/PID/root) in the sandbox,
// through `--ro`, the current directory, a policy's `readonly` and a
// `--copy`, root and rootless: only the bound path was checked. Each launch
// is now refused before anything runs, naming the bind and the mount. In a
// throwaway mount namespace (nothing is mounted on the host). Seen failing
// before the fix: every launch ran and listed the host's PIDs.
void CheckAProcBelowABindIsRefused(bool rootless) {
  if (rootless && geteuid() == 0 && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  }
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): needs root to mount a proc to bind";
  fs::path dir = fs::temp_directory_path() / ("cocoon-subproc-" + std::to_string(getpid()) + (rootless ? "-rl" : ""));
  fs::remove_all(dir);
  fs::create_directories(dir / "m" / "p");
  fs::create_directories(dir / "home");
  fs::create_directories(dir / "work");
  const std::string m = (dir / "m").string();
  std::ofstream(dir / "ro.cocoon") << "import \"strict\"\nprofile ro extends strict {\n  filesystem {\n    readonly \"" +
                                          m + "\"\n  }\n}\n";
  for (const fs::path& p : {dir, dir / "m", dir / "home", dir / "work", dir / "ro.cocoon"}) {
    ASSERT_EQ(chown(p.c_str(), rootless ? 65534 : 0, rootless ? 65534 : 0), 0) << p;
  }
  const std::string probe = "ls " + m + "/p /p 2>/dev/null | grep -c '^[0-9]'; echo ran";
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::string cwd;
  };
  std::vector<Case> cases = {
      {"--ro", {"run", "--json", "--ro", m, "--", "/bin/sh", "-c", probe}, "/"},
      {"cwd", {"run", "--json", "--", "/bin/sh", "-c", "ls p | grep -c '^[0-9]'; echo ran"}, m},
      {"policy readonly", {"enforce", (dir / "ro.cocoon").string(), "--json", "--", "/bin/sh", "-c", probe}, "/"},
      {"--copy", {"run", "--json", "--work", (dir / "work").string(), "--copy", m, "--", "/bin/sh", "-c",
                  "ls /work/m/p | grep -c '^[0-9]'; echo ran"}, "/"},
  };
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    std::string text;
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("proc", (dir / "m" / "p").c_str(), "proc", 0, nullptr) != 0) {
      text = std::string("namespace setup: ") + strerror(errno);
    } else {
      for (const Case& c : cases) {
        std::vector<std::string> args = c.args;
        std::string binary = COCOON_BINARY;
        if (rootless) {
          args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
          binary = "/usr/bin/setpriv";
        }
        Ran ran = Cocoon(args, c.cwd,
                         {{"HOME", (dir / "home").string()}, {"XDG_CACHE_HOME", (dir / "home").string()},
                          {"COCOON_CACHE_DIR", (dir / "home" / "cache").string()}},
                         binary);
        text += std::string("case ") + c.name + " status=" + std::to_string(ran.status) + "\n" + ran.out + ran.err +
                "\n";
      }
    }
    (void)!write(report[1], text.data(), text.size());
    _exit(0);
  }
  close(report[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(report[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_EQ(text.find("namespace setup"), std::string::npos) << text;
  for (const Case& c : cases) {
    const std::string head = std::string("case ") + c.name + " status=";
    const size_t at = text.find(head);
    ASSERT_NE(at, std::string::npos) << text;
    const size_t next = text.find("case ", at + head.size());
    const std::string part = text.substr(at, next == std::string::npos ? std::string::npos : next - at);
    EXPECT_EQ(part.find("\nran"), std::string::npos) << c.name << ": the command ran:\n" << part;
    EXPECT_EQ(part.rfind(head + "0", 0), std::string::npos) << c.name << ":\n" << part;
    EXPECT_NE(part.find("proc at " + m + "/p"), std::string::npos) << c.name << ": no message naming the mount:\n"
                                                                    << part;
  }
  fs::remove_all(dir);
}

TEST(CocoonRun, AProcMountedBelowABoundDirectoryIsRefused) { CheckAProcBelowABindIsRefused(false); }
TEST(CocoonRun, AProcMountedBelowABoundDirectoryIsRefusedRootless) { CheckAProcBelowABindIsRefused(true); }

// A policy's `hide` held against --work and --copy: `--ro` of a hidden path
// was refused, but a work dir or copy at, inside or holding it handed the
// hidden file to the sandbox (and a work dir committed it back). Each is
// refused before anything runs, for `run` with the policy as its base and
// for `enforce` of the policy itself. Seen failing before the fix: every
// case ran and printed the secret.
TEST(CocoonRun, AWorkDirOrCopyCannotShowWhatThePolicyHides) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-hidden-work-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "proj" / "secrets");
  fs::create_directories(dir / "w");
  std::ofstream(dir / "proj" / "secrets" / "key") << "TOPSECRET\n";
  std::ofstream(dir / "proj" / "readme") << "hello\n";
  const std::string proj = (dir / "proj").string(), secrets = (dir / "proj" / "secrets").string();
  std::ofstream(dir / "base.cocoon") << "import \"strict\"\nprofile base extends strict {\n  filesystem {\n"
                                        "    readonly \"" + proj + "\"\n    hide \"" + secrets + "\"\n  }\n}\n";
  const std::string base = (dir / "base.cocoon").string(), w = (dir / "w").string();
  const std::string show = "cat /work/key /work/secrets/key /work/proj/secrets/key 2>/dev/null; echo ran";
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--json", "--policy", base, "--work", w, "--copy", secrets, "--", "/bin/sh", "-c", show},
      {"run", "--json", "--policy", base, "--work", w, "--copy", proj, "--", "/bin/sh", "-c", show},
      {"run", "--json", "--policy", base, "--work", secrets, "--", "/bin/sh", "-c", show},
      {"run", "--json", "--policy", base, "--work", proj, "--", "/bin/sh", "-c", show},
      {"enforce", base, "--json", "--work", proj, "--", "/bin/sh", "-c", show},
      {"enforce", base, "--json", "--work", w, "--copy", secrets, "--", "/bin/sh", "-c", show},
  };
  for (const auto& args : cases) {
    Ran ran = Cocoon(args, "/");
    const std::string what = args[0] + " " + args[4] + " " + args[5] + (args.size() > 7 ? " " + args[7] : "");
    EXPECT_EQ(ran.status, 1) << what << ": " << ran.out << ran.err;
    EXPECT_EQ(ran.out.find("TOPSECRET"), std::string::npos) << what << ": the hidden file reached the sandbox";
    EXPECT_NE(ran.out.find("which the policy hides"), std::string::npos) << what << ": " << ran.out << ran.err;
  }
  EXPECT_FALSE(fs::exists(dir / "w" / "secrets")) << "a hidden file was committed to the work dir";
  // What is not hidden still goes in.
  Ran fine = Cocoon({"run", "--json", "--policy", base, "--work", w, "--copy", (dir / "proj" / "readme").string(),
                     "--", "/bin/cat", "/work/readme"}, "/");
  EXPECT_EQ(fine.status, 0) << fine.out << fine.err;
  EXPECT_NE(fine.out.find("hello"), std::string::npos) << fine.out;
  fs::remove_all(dir);
}

// The caller's home as a work dir (or a dir above it, or its credential
// stores) let the sandbox read ~/.ssh and rewrite ~/.bashrc and
// authorized_keys, while the implicit current-directory bind already
// refused a home. Refused now for --work and --copy, in `run` and
// `enforce`. Seen failing before the fix: the runs were accepted.
TEST(CocoonRun, AWorkDirOrCopyCannotBeTheCallersHomeOrItsCredentials) {
  fs::path dir = fs::temp_directory_path() / ("cocoon-home-work-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "home" / ".ssh");
  fs::create_directories(dir / "home" / "project");
  fs::create_directories(dir / "w");
  std::ofstream(dir / "home" / ".ssh" / "id_ed25519") << "PRIVATEKEY\n";
  std::ofstream(dir / "home" / ".netrc") << "machine x password PASSWORD\n";
  const std::string home = (dir / "home").string(), w = (dir / "w").string();
  const std::vector<std::pair<std::string, std::string>> env = {
      {"HOME", home}, {"XDG_CACHE_HOME", (dir / "cache").string()}};
  const std::string show = "cat /work/.ssh/id_ed25519 /work/id_ed25519 /work/.netrc /work/home/.netrc 2>/dev/null; "
                           "echo ran";
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--json", "--work", home, "--", "/bin/sh", "-c", show},
      {"run", "--json", "--work", dir.string(), "--", "/bin/sh", "-c", show},
      {"run", "--json", "--work", home + "/.ssh", "--", "/bin/sh", "-c", show},
      {"run", "--json", "--work", w, "--copy", home + "/.ssh/id_ed25519", "--", "/bin/sh", "-c", show},
      {"run", "--json", "--work", w, "--copy", home + "/.netrc", "--", "/bin/sh", "-c", show},
      {"run", "--json", "--work", w, "--copy", home, "--", "/bin/sh", "-c", show},
      {"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--json", "--work", home, "--", "/bin/sh", "-c", show},
  };
  for (const auto& args : cases) {
    Ran ran = Cocoon(args, "/", env);
    std::string what;
    for (const auto& a : args) what += a + " ";
    EXPECT_EQ(ran.status, 1) << what << ": " << ran.out << ran.err;
    EXPECT_EQ(ran.out.find("PRIVATEKEY"), std::string::npos) << what;
    EXPECT_EQ(ran.out.find("PASSWORD"), std::string::npos) << what;
    EXPECT_TRUE(ran.out.find("home directory") != std::string::npos ||
                ran.out.find("(your credentials)") != std::string::npos)
        << what << ": " << ran.out << ran.err;
  }
  // A project inside the home is still a work dir.
  Ran fine = Cocoon({"run", "--json", "--work", home + "/project", "--", "/bin/sh", "-c", "echo ok > /work/out"}, "/",
                    env);
  EXPECT_EQ(fine.status, 0) << fine.out << fine.err;
  EXPECT_TRUE(fs::exists(dir / "home" / "project" / "out"));
  fs::remove_all(dir);
}

// Cocoon's own state dir (rootless: $XDG_RUNTIME_DIR/cocoon, else
// /tmp/.cocoon-UID) as a work dir or copy let a sandbox plant what later
// runs use (the new root's mount point, stage dirs, locks). Refused now.
// Rootless with a private $XDG_RUNTIME_DIR, so the state dir is the test's
// own. Seen failing before the fix: the run was accepted.
TEST(CocoonRun, AWorkDirOrCopyCannotOverlapCocoonsStateDir) {
  const bool root = geteuid() == 0;
  if (root && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): no setpriv to run cocoon as uid 65534";
  }
  const uid_t uid = root ? 65534 : geteuid();
  fs::path dir = fs::temp_directory_path() / ("cocoon-state-work-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "xdg");
  fs::create_directories(dir / "home");
  fs::create_directories(dir / "w");
  for (const fs::path& p : {dir, dir / "xdg", dir / "home", dir / "w"}) ASSERT_EQ(chown(p.c_str(), uid, uid), 0) << p;
  ASSERT_EQ(chmod((dir / "xdg").c_str(), 0700), 0);
  const std::vector<std::pair<std::string, std::string>> env = {
      {"HOME", (dir / "home").string()}, {"XDG_CACHE_HOME", (dir / "home").string()},
      {"XDG_RUNTIME_DIR", (dir / "xdg").string()}};
  auto cocoon = [&](std::vector<std::string> args) {
    std::string binary = COCOON_BINARY;
    if (root) {
      args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", binary});
      binary = "/usr/bin/setpriv";
    }
    return Cocoon(args, "/", env, binary);
  };
  Ran first = cocoon({"run", "--", "/bin/true"});  // makes the state dir
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string state = (dir / "xdg" / "cocoon").string();
  ASSERT_TRUE(fs::is_directory(state)) << "the state dir is not where the test expects it";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--json", "--work", state, "--", "/bin/sh", "-c", "echo ran"},
           {"run", "--json", "--work", (dir / "xdg").string(), "--", "/bin/sh", "-c", "echo ran"},
           {"run", "--json", "--work", (dir / "w").string(), "--copy", state, "--", "/bin/sh", "-c", "echo ran"}}) {
    Ran ran = cocoon(args);
    EXPECT_EQ(ran.status, 1) << args[3] << ": " << ran.out << ran.err;
    EXPECT_NE(ran.out.find("Cocoon's state dir"), std::string::npos) << args[3] << ": " << ran.out << ran.err;
    EXPECT_EQ(ran.out.find("\"ran"), std::string::npos) << ran.out;
  }
  fs::remove_all(dir);
}

// With --json, a refusal is the one JSON object on stdout and exits 1, as
// documented (docs/agents.md); 2 is for what the flag parser rejects, with
// nothing on stdout. A refused --ro and an unknown runtime exited 2 with
// the JSON printed, so a caller following the docs took them for usage
// errors. Seen failing before the fix (status 2).
TEST(CocoonRun, EveryJsonRefusalExitsOne) {
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--json", "--ro", "/etc", "--", "/bin/true"},
      {"run", "--json", "-r", "nosuch", "-c", "1"},
      {"run", "--json", "--work", "/", "--", "/bin/true"},
      {"enforce", COCOON_POLICIES_DIR "/strict.cocoon", "--json", "--copy", "/etc/hostname", "--", "/bin/true"},
  };
  for (const auto& args : cases) {
    Ran ran = Cocoon(args);
    EXPECT_EQ(ran.status, 1) << args[2] << " " << args[3] << ": " << ran.out << ran.err;
    json j = json::parse(ran.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << ran.out;
    EXPECT_EQ(j["refused"], true) << j.dump();
  }
  Ran parser = Cocoon({"run", "--json", "--timeout", "0", "--", "/bin/true"});
  EXPECT_EQ(parser.status, 2) << parser.err;
  EXPECT_EQ(parser.out, "");
}
