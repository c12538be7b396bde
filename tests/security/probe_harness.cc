// Host side of the security probe suite; see probe_harness.h.
#include "tests/security/probe_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

extern char** environ;

namespace cocoon::security_test {
namespace {

constexpr const char* kProbeUserName = "cocoon-probe";

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProbeUser ResolveProbeUser() {
  ProbeUser user;
  if (geteuid() != 0) {
    // An unprivileged harness runs cocoon as itself.
    user.available = true;
    user.uid = geteuid();
    user.gid = getegid();
    return user;
  }
  if (getpwnam(kProbeUserName) == nullptr) {
    std::string cmd = std::string("useradd --system --no-create-home --home-dir /nonexistent "
                                  "--shell /usr/sbin/nologin ") + kProbeUserName + " >/dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0 && getpwnam(kProbeUserName) == nullptr) {
      user.why_unavailable = "useradd cocoon-probe failed (exit " + std::to_string(rc) + ")";
      return user;
    }
  }
  struct passwd* pw = getpwnam(kProbeUserName);
  if (pw == nullptr) {
    user.why_unavailable = "user cocoon-probe does not exist after useradd";
    return user;
  }
  user.available = true;
  user.uid = pw->pw_uid;
  user.gid = pw->pw_gid;
  return user;
}

// Drops to the probe user in a forked child (before exec). Returns false on
// failure; the child then reports and exits.
bool DropToUser(RunAs run_as) {
  if (run_as == RunAs::kRoot || geteuid() != 0) return true;
  const ProbeUser& user = GetProbeUser();
  return setgroups(0, nullptr) == 0 && setresgid(user.gid, user.gid, user.gid) == 0 &&
         setresuid(user.uid, user.uid, user.uid) == 0;
}

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  // FTW_PHYS: links are removed, never followed.
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads both pipes until EOF or the deadline; returns false on timeout.
bool Drain(int out_fd, int err_fd, LaunchResult& r, size_t capture_limit,
           std::chrono::steady_clock::time_point deadline) {
  SetNonBlocking(out_fd);
  SetNonBlocking(err_fd);
  bool out_open = true, err_open = true;
  static char buf[1 << 16];
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    struct pollfd fds[2] = {{out_open ? out_fd : -1, POLLIN, 0}, {err_open ? err_fd : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) return true;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (i == 0) {
          r.out_bytes += static_cast<uint64_t>(got);
          if (r.out.size() < capture_limit) r.out.append(buf, static_cast<size_t>(got));
        } else if (r.err.size() < (16u << 20)) {
          r.err.append(buf, static_cast<size_t>(got));
        }
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  return true;
}

std::vector<std::string> BuildEnv(const LaunchOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool overridden = false;
    for (const auto& [k, v] : options.extra_env)
      if (std::strncmp(*e, (k + "=").c_str(), k.size() + 1) == 0) overridden = true;
    if (!overridden) env.emplace_back(*e);
  }
  for (const auto& [k, v] : options.extra_env) env.push_back(k + "=" + v);
  return env;
}

// The unprivileged user gets a HOME of its own (as a real user has), so that
// cocoon's per-user artifact cache works; root keeps /var/cache/cocoon.
std::string UserHome() {
  const ProbeUser& user = GetProbeUser();
  std::string home = "/tmp/cocoon-security-home-" + std::to_string(user.uid);
  if (mkdir(home.c_str(), 0700) == 0 || errno == EEXIST) {
    struct stat st;
    if (lstat(home.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != user.uid && geteuid() == 0)
      (void)!chown(home.c_str(), user.uid, user.gid);
  }
  return home;
}

LaunchResult Spawn(RunAs run_as, const std::vector<std::string>& argv, const LaunchOptions& options) {
  LaunchResult r;
  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  LaunchOptions with_home = options;
  if (run_as == RunAs::kUser && geteuid() == 0) with_home.extra_env.emplace_back("HOME", UserHome());
  std::vector<std::string> env = BuildEnv(with_home);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    r.start_error = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    // Child: own session (optionally with the pty as controlling terminal),
    // stdio, the deliberately leaked fds, then the run user, then exec.
    setsid();
    int in = open("/dev/null", O_RDONLY);
    if (!options.ctty_slave.empty()) {
      int tty = open(options.ctty_slave.c_str(), O_RDWR);
      if (tty >= 0 && ioctl(tty, TIOCSCTTY, 0) == 0) in = tty;
    }
    dup2(in, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : options.leak_fds) fcntl(fd, F_SETFD, 0);  // no FD_CLOEXEC: inherited
    if (!DropToUser(run_as)) {
      int e = errno;
      (void)!write(report[1], &e, sizeof e);
      _exit(127);
    }
    execve(cargv[0], cargv.data(), cenv.data());
    int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(report[1]);
  auto deadline = start + std::chrono::seconds(options.timeout_s);
  if (!Drain(out[0], err[0], r, options.capture_limit, deadline)) {
    r.harness_killed = true;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  close(out[0]);
  close(err[0]);
  int child_errno = 0;
  if (read(report[0], &child_errno, sizeof child_errno) == static_cast<ssize_t>(sizeof child_errno))
    r.start_error = "exec/setuid failed in the child: " + std::string(std::strerror(child_errno));
  close(report[0]);
  // cocoon may close its pipes and still hang: keep the watchdog running.
  for (;;) {
    pid_t got = wait4(pid, &r.wait_status, WNOHANG, &r.usage);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() > deadline && !r.harness_killed) {
      r.harness_killed = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    usleep(2000);
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.started = r.start_error.empty();
  r.exit_status = WIFEXITED(r.wait_status) ? WEXITSTATUS(r.wait_status)
                                           : 128 + WTERMSIG(r.wait_status);
  return r;
}

}  // namespace

const char* RunAsName(RunAs run_as) { return run_as == RunAs::kRoot ? "root" : "user"; }

const ProbeUser& GetProbeUser() {
  static const ProbeUser user = ResolveProbeUser();
  return user;
}

std::string CannotRunAs(RunAs run_as) {
  if (run_as == RunAs::kRoot) {
    return geteuid() == 0 ? "" : "the harness is not root, so the root variant cannot run";
  }
  const ProbeUser& user = GetProbeUser();
  return user.available ? "" : user.why_unavailable;
}

unsigned long long HostInitStartTime() {
  std::string stat = ReadSmallFile("/proc/1/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i) {
    if (i == 22) return std::stoull(field);
  }
  return 0;
}

std::vector<std::string> HostIdArgs() {
  std::vector<std::string> args;
  for (const char* ns : {"mnt", "pid", "net", "user"}) {
    struct stat st;
    std::string path = std::string("/proc/self/ns/") + ns;
    if (stat(path.c_str(), &st) == 0)
      args.push_back(std::string("host_") + ns + "=" + std::to_string(st.st_ino));
  }
  args.push_back("host_init_start=" + std::to_string(HostInitStartTime()));
  return args;
}

Scratch::Scratch(RunAs run_as) {
  char tmpl[] = "/tmp/cocoon-security-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return;
  root_ = tmpl;
  chmod(root_.c_str(), 0755);
  mkdir(bin().c_str(), 0755);
  mkdir(work().c_str(), 0755);
  if (run_as == RunAs::kUser && geteuid() == 0) {
    const ProbeUser& user = GetProbeUser();
    // cocoon creates its commit dir next to the work dir: the user owns both,
    // as with a real user's project dir. bin/ stays root's.
    if (chown(work().c_str(), user.uid, user.gid) != 0 || chown(root_.c_str(), user.uid, user.gid) != 0)
      root_.clear();
  }
}

Scratch::~Scratch() {
  if (!root_.empty()) nftw(root_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string Scratch::StageProbe(const std::string& name, const std::string& as) const {
  std::string src = std::string(COCOON_PROBE_DIR) + "/probe_" + name;
  std::string dst = bin() + "/" + (as.empty() ? "probe_" + name : as);
  std::ifstream in(src, std::ios::binary);
  std::ofstream outf(dst, std::ios::binary | std::ios::trunc);
  outf << in.rdbuf();
  outf.close();
  chmod(dst.c_str(), 0755);
  return dst;
}

LaunchResult Launch(const LaunchOptions& options) {
  std::vector<std::string> argv{COCOON_BINARY, "enforce"};
  if (options.measure_rss) argv.insert(argv.begin(), COCOON_RSS_METER);
  argv.insert(argv.end(), options.cocoon_args.begin(), options.cocoon_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  LaunchResult r = Spawn(options.run_as, argv, options);
  auto brace = r.out.find('{');
  if (brace != std::string::npos) {
    auto parsed = nlohmann::json::parse(r.out.substr(brace), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) r.outcome = std::move(parsed);
  }
  const std::string meter_tag = "RSS_METER maxrss_kib=";
  auto meter = r.err.rfind(meter_tag);
  if (options.measure_rss && meter != std::string::npos) {
    r.cocoon_max_rss_kib = std::strtol(r.err.c_str() + meter + meter_tag.size(), nullptr, 10);
  }
  return r;
}

LaunchResult LaunchRaw(RunAs run_as, const std::vector<std::string>& argv, const LaunchOptions& extras) {
  return Spawn(run_as, argv, extras);
}

std::string LaunchResult::Describe() const {
  std::ostringstream os;
  os << "cocoon exit status " << exit_status << (harness_killed ? " (killed by the harness watchdog)" : "")
     << (start_error.empty() ? "" : ", start error: " + start_error) << "\n--- cocoon stderr ---\n"
     << err.substr(0, 4000) << "\n--- cocoon stdout (first 4000 bytes) ---\n" << out.substr(0, 4000);
  return os.str();
}

Verdict FindVerdict(const std::string& text, const std::string& name) {
  Verdict v;
  const std::string prefix = "PROBE " + name + " ";
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      size_t end = text.find('\n', at);
      std::string line = text.substr(at + prefix.size(), end == std::string::npos ? std::string::npos
                                                                                  : end - at - prefix.size());
      size_t sp = line.find(' ');
      std::string kind = line.substr(0, sp);
      if (kind != "RUNNING") {
        v.found = true;
        v.kind = kind;
        v.detail = sp == std::string::npos ? "" : line.substr(sp + 1);
      }
    }
    at += prefix.size();
  }
  return v;
}

std::string OutcomeStream(const nlohmann::json& outcome, const char* stream) {
  return JsonString(outcome, stream);
}

std::string JsonString(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool JsonBool(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

long long JsonInt(const nlohmann::json& j, const char* key, long long fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<long long>() : fallback;
}

long long LimitRequested(const nlohmann::json& outcome, const std::string& limit) {
  auto it = outcome.find("limits");
  if (it == outcome.end()) return -1;
  // Either an array of rows {limit, requested, ...} or an object keyed by limit.
  if (it->is_array()) {
    for (const auto& row : *it)
      if (row.is_object() && JsonString(row, "limit") == limit) return JsonInt(row, "requested");
  } else if (it->is_object() && it->contains(limit)) {
    return JsonInt((*it)[limit], "requested");
  }
  return -1;
}

std::vector<pid_t> HostProcessesWith(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (d == nullptr) return found;
  while (struct dirent* e = readdir(d)) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == getpid()) continue;
    std::string cmd = ReadSmallFile("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmd.find(needle) != std::string::npos) found.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return found;
}

std::string Nonce() {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

pid_t SpawnHostSleep(RunAs run_as, const std::string& seconds_arg) {
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    if (!DropToUser(run_as)) _exit(127);
    execl("/bin/sleep", "sleep", seconds_arg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace cocoon::security_test
