// supervisor_memory: the peak resident memory of the `cocoon` supervisor
// process itself, during an ordinary run and during an output flood (issue 7,
// item 6).
//
//   supervisor_memory [--runs N] --case NAME=CMD [ARG...] ...   (split on spaces)
//
// Two figures per run, because they answer different questions:
//
//  * supervisor_hwm_kib: VmHWM of the supervisor's own mm (/proc/PID/status,
//    proc(5)), read when the process is stopped at PTRACE_EVENT_EXIT: the
//    kernel reports that stop in do_exit() before exit_mm() releases the
//    address space, so this is the true lifetime peak of the supervisor alone,
//    including whatever it allocates last (the Outcome JSON). We PTRACE_SEIZE
//    with only PTRACE_O_TRACEEXIT: no syscall stops, no clone tracing (the
//    sandbox is never traced), signals are re-injected unchanged.
//  * wait4_maxrss_kib: ru_maxrss from wait4() on the supervisor. For a reaped
//    child the kernel fills it with getrusage(RUSAGE_BOTH) of that child
//    (kernel/exit.c wait_task_zombie -> kernel/sys.c getrusage): the MAXIMUM
//    of the child's own peak and of the peaks of every descendant it reaped
//    (signal->cmaxrss), not a sum. The sandbox is the supervisor's child, so
//    this figure is max(supervisor, sandboxed processes); it equals the
//    supervisor's peak only when the sandboxed program is the smaller one.
//
// The sandbox's own peak is the Outcome's peak_mem_kib (its memory cgroup),
// read from stdout when the command runs with --json. Commands with --json
// have stdout captured (memfd) and parsed; others write to /dev/null.
// Prints one JSON object (bench/report.py, "Memory").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Run {
  double wall_ms = 0;
  long supervisor_hwm_kib = -1;  // -1: the exit stop was never seen
  long wait4_maxrss_kib = 0;
  int exit_status = -1;          // shell-style: 128+N when killed by signal N
  nlohmann::json outcome;        // selected Outcome fields, when --json
};

struct Case {
  std::string name;
  std::vector<std::string> argv;
  bool json = false;
  std::vector<Run> runs;
};

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// "VmHWM:     1234 kB" -> 1234 (proc(5)); -1 if absent.
long StatusKib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  }
  return -1;
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[1 << 16];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) out.append(buffer, static_cast<size_t>(n));
  return out;
}

// The Outcome fields that show the flood was really cut off and bounded.
nlohmann::json OutcomeFields(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return {{"parse_error", true}};
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"exit_code", "termination_reason", "timed_out", "stdout_bytes", "stdout_truncated",
                          "wall_ms", "peak_mem_kib", "peak_memory_source"}) {
    if (doc.contains(key)) out[key] = doc[key];
  }
  if (doc.contains("stdout") && doc["stdout"].is_string()) out["stdout_captured"] = doc["stdout"].get<std::string>().size();
  return out;
}

// Waits for the traced supervisor to exit, reading VmHWM at its exit stop and
// passing every other stop through unchanged.
void TraceUntilExit(pid_t pid, Run& run) {
  for (;;) {
    int status = 0;
    rusage usage{};
    if (wait4(pid, &status, 0, &usage) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      run.wait4_maxrss_kib = usage.ru_maxrss;
      run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return;
    }
    if (!WIFSTOPPED(status)) continue;
    const int event = status >> 16;
    int inject = 0;
    if (event == PTRACE_EVENT_EXIT) {
      run.supervisor_hwm_kib = StatusKib(pid, "VmHWM");
    } else if (event == 0) {
      inject = WSTOPSIG(status);  // signal-delivery stop: deliver it as sent
    }
    ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(inject)));
  }
}

Run RunOnce(const Case& c) {
  Run run;
  std::vector<char*> argv;
  for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out_fd = c.json ? memfd_create("supervisor-memory-stdout", MFD_CLOEXEC) : open("/dev/null", O_WRONLY | O_CLOEXEC);
  int go[2];
  if (out_fd < 0 || pipe2(go, O_CLOEXEC) != 0) return run;
  const double start = NowMs();
  const pid_t pid = fork();
  if (pid == 0) {
    // Wait until the parent has seized us, so the exit stop cannot be missed.
    char byte;
    close(go[1]);
    if (read(go[0], &byte, 1) != 1) _exit(126);
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(out_fd, 1);
    dup2(devnull, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(go[0]);
  if (pid > 0) {
    if (ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)) != 0) {
      std::perror("ptrace(PTRACE_SEIZE)");  // wait4_maxrss is still measured
    }
    (void)!write(go[1], "g", 1);
    close(go[1]);
    TraceUntilExit(pid, run);
  } else {
    close(go[1]);
  }
  run.wall_ms = NowMs() - start;
  if (c.json) run.outcome = OutcomeFields(ReadAll(out_fd));
  close(out_fd);
  return run;
}

template <typename T, typename Fn>
std::vector<T> Collect(const std::vector<Run>& runs, Fn fn) {
  std::vector<T> out;
  for (const Run& r : runs) out.push_back(fn(r));
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json CaseJson(const Case& c) {
  std::string command;
  for (const std::string& a : c.argv) command += (command.empty() ? "" : " ") + a;
  const auto hwm = Collect<long>(c.runs, [](const Run& r) { return r.supervisor_hwm_kib; });
  const auto maxrss = Collect<long>(c.runs, [](const Run& r) { return r.wait4_maxrss_kib; });
  const auto wall = Collect<double>(c.runs, [](const Run& r) { return r.wall_ms; });
  int failures = 0;
  for (const Run& r : c.runs) failures += r.exit_status != 0 || r.supervisor_hwm_kib < 0;
  nlohmann::json j = {{"name", c.name},
                      {"command", command},
                      {"runs", c.runs.size()},
                      {"failures", failures},
                      {"wall_ms_median", wall[wall.size() / 2]},
                      {"supervisor_hwm_kib_median", hwm[hwm.size() / 2]},
                      {"supervisor_hwm_kib_max", hwm.back()},
                      {"wait4_maxrss_kib_median", maxrss[maxrss.size() / 2]},
                      {"wait4_maxrss_kib_max", maxrss.back()},
                      {"exit_status", c.runs.back().exit_status}};
  if (c.json) j["outcome"] = c.runs.back().outcome;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--case" && i + 1 < argc) {
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) return std::fprintf(stderr, "supervisor_memory: --case wants NAME=CMD\n"), 2;
      Case c;
      c.name = spec.substr(0, eq);
      std::istringstream words(spec.substr(eq + 1));
      for (std::string w; words >> w;) c.argv.push_back(w);
      c.json = std::find(c.argv.begin(), c.argv.end(), "--json") != c.argv.end();
      cases.push_back(std::move(c));
    } else {
      std::fprintf(stderr, "usage: supervisor_memory [--runs N] --case NAME=CMD...\n");
      return 2;
    }
  }
  if (cases.empty()) return std::fprintf(stderr, "supervisor_memory: no --case\n"), 2;
  // Interleaved round by round, like launch_latency.
  for (int round = 0; round < runs; ++round) {
    for (Case& c : cases) c.runs.push_back(RunOnce(c));
  }
  nlohmann::json out = {{"runs", runs}};
  for (const Case& c : cases) out["cases"].push_back(CaseJson(c));
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
