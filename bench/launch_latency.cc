// launch_latency: measures process-launch latency of several launchers,
// interleaved round by round so that machine noise hits every case alike.
// Each round runs the cases in a new random order (fixed seed: reruns are
// comparable): a sandbox's teardown finishes after its launcher returns (the
// kernel frees a network namespace from a workqueue), so in a fixed order
// every case would always follow the same neighbour and pay, or be spared,
// that neighbour's leftovers.
//
//   launch_latency --iterations 200 [--warmup 10] [--private-cgroup-ns]
//                  --case NAME=CMD [ARG...] --case ...   (args split on spaces)
//
// Each sample is the wall time from just before fork() to the return of
// waitpid() for a child that execs the case's command with stdin an empty
// file and stdout/stderr appended to a file (LaunchStdio). Prints one JSON object: per case, the samples' median, p90, p99,
// min, max, mean (microseconds) and failures.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Case {
  std::string name;
  std::vector<std::string> argv;
  std::vector<double> samples_us;
  int failures = 0;
  long max_rss_kib = 0;  // largest ru_maxrss wait4 reported for the launcher
};

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// What the launched commands get as stdin (an empty file) and as stdout
// and stderr (one file all of them append to), in a directory of our own:
// never a character device. crun 1.8 run as root gives its stdio to the
// container's user, and for stdio on any node 1,3 (the host's /dev/null or
// a private one) it changed the owner of the host's /dev/null, which it
// binds into the container; a regular file of ours it may have.
struct PrivateStdio {
  std::string dir;
  int in = -1;
  int out = -1;
};

const PrivateStdio& LaunchStdio() {
  static const PrivateStdio stdio = [] {
    PrivateStdio made;
    char dir[] = "/tmp/launch-latency-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      std::perror("launch_latency: mkdtemp");
      std::exit(1);
    }
    made.dir = dir;
    made.in = open((made.dir + "/stdin").c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    made.out = open((made.dir + "/output").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (made.in < 0 || made.out < 0) {
      std::perror("launch_latency: stdio files");
      std::exit(1);
    }
    return made;
  }();
  return stdio;
}

void RemoveLaunchStdio() {
  const PrivateStdio& stdio = LaunchStdio();
  unlink((stdio.dir + "/stdin").c_str());
  unlink((stdio.dir + "/output").c_str());
  rmdir(stdio.dir.c_str());
}

// Runs the command once; returns the elapsed microseconds, or -1 on failure.
double RunOnce(Case& c) {
  std::vector<char*> argv;
  for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const PrivateStdio& stdio = LaunchStdio();
  double start = NowUs();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(stdio.in, 0);
    dup2(stdio.out, 1);
    dup2(stdio.out, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return -1;
  int status = 0;
  rusage usage{};
  // wait4's rusage covers the launcher and the descendants it waited for; for
  // a small command (/bin/true, head) that is the launcher's own peak RSS.
  wait4(pid, &status, 0, &usage);
  double elapsed = NowUs() - start;
  c.max_rss_kib = std::max(c.max_rss_kib, usage.ru_maxrss);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return elapsed;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * (values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// crun 1.8 refuses this machine's mixed cgroup v1 + empty v2 layout. Hiding
// /sys/fs/cgroup/unified in a private mount namespace (ours alone) lets it run;
// the host's mounts are untouched because propagation is made private first.
void HideUnifiedCgroupMount() {
  if (unshare(CLONE_NEWNS) != 0) {
    perror("unshare(CLONE_NEWNS)");
    return;
  }
  mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  umount2("/sys/fs/cgroup/unified", MNT_DETACH);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  int warmup = 10;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (arg == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (arg == "--private-cgroup-ns") {
      HideUnifiedCgroupMount();
    } else if (arg == "--case" && i + 1 < argc) {
      std::string spec = argv[++i];
      size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "launch_latency: --case wants NAME=CMD, got '%s'\n", spec.c_str());
        return 2;
      }
      Case c;
      c.name = spec.substr(0, eq);
      std::istringstream words(spec.substr(eq + 1));
      for (std::string w; words >> w;) c.argv.push_back(w);
      cases.push_back(std::move(c));
    } else {
      std::fprintf(stderr, "usage: launch_latency --iterations N [--warmup N] --case NAME=CMD...\n");
      return 2;
    }
  }
  std::mt19937 order_rng(20261203);
  std::vector<Case*> order;
  for (Case& c : cases) order.push_back(&c);
  for (int round = 0; round < warmup + iterations; ++round) {
    std::shuffle(order.begin(), order.end(), order_rng);
    for (Case* case_in_round : order) {
      Case& c = *case_in_round;
      double us = RunOnce(c);
      if (round < warmup) continue;
      if (us < 0) {
        ++c.failures;
      } else {
        c.samples_us.push_back(us);
      }
    }
  }
  RemoveLaunchStdio();
  nlohmann::json out;
  out["iterations"] = iterations;
  for (const Case& c : cases) {
    double sum = 0;
    for (double v : c.samples_us) sum += v;
    std::string command;
    for (const std::string& a : c.argv) command += (command.empty() ? "" : " ") + a;
    out["cases"].push_back({{"name", c.name},
                            {"command", command},
                            {"samples", c.samples_us.size()},
                            {"failures", c.failures},
                            {"median_us", Percentile(c.samples_us, 0.5)},
                            {"p90_us", Percentile(c.samples_us, 0.9)},
                            {"p99_us", Percentile(c.samples_us, 0.99)},
                            {"min_us", Percentile(c.samples_us, 0.0)},
                            {"max_us", Percentile(c.samples_us, 1.0)},
                            {"mean_us", c.samples_us.empty() ? 0 : sum / c.samples_us.size()},
                            {"max_rss_kib", c.max_rss_kib}});
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
