// libFuzzer entry: policy text -> checker -> every target (compiler/driver).
// Property (issue 3): a policy the checker accepts compiles to every target
// without error (the OCI/Kubernetes rule form may refuse only what
// oci::RuleFormProblems reports: `cocoon compile` checks that form too when
// those targets are asked for, and refuses at the statement), and its seccomp BPF passes the kernel's load-time checks
// (ends in a return, jumps in range, <= 4096 instructions) and really loads:
// a forked child sets NO_NEW_PRIVS and calls seccomp(SET_MODE_FILTER).
// Kernel loads are cached by the program's bytes, so the fork is paid once
// per distinct filter, not per input.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/backends/oci/oci_seccomp.h"
#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/driver/driver.h"
#include "compiler/frontend/frontend.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "compile_fuzzer: %s\n", what.c_str());
  std::abort();
}

// Shared with the forked child: it cannot be trusted to exit (the filter it
// just loaded may deny exit_group), so it reports here and the parent kills it.
struct LoadReport {
  std::atomic<int> done;
  std::atomic<int> error;
};

LoadReport* SharedReport() {
  static LoadReport* report = [] {
    void* p = mmap(nullptr, sizeof(LoadReport), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) Fail("mmap");
    return new (p) LoadReport();
  }();
  return report;
}

// 0 when the kernel accepted the program, else the errno of seccomp(2).
int KernelLoad(const cocoon::backends::BpfProgram& program) {
  LoadReport* report = SharedReport();
  report->done = 0;
  report->error = 0;
  const pid_t pid = fork();
  if (pid < 0) Fail("fork");
  if (pid == 0) {
    sock_fprog prog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
    int error = 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) error = -1;
    else if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) error = errno;
    report->error = error;
    report->done = 1;
    for (;;) pause();  // may itself be denied; the parent's SIGKILL ends us
  }
  for (int spins = 0; report->done == 0 && spins < 200000; ++spins) usleep(10);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (report->done == 0) Fail("child never reported the seccomp load result");
  return report->error;
}

void CheckSeccomp(const cocoon::backends::Artifact& artifact) {
  auto program = cocoon::backends::ParseBpf(artifact.bytes);
  if (!program.ok()) Fail("linux.seccomp.bpf does not parse: " + program.status().ToString());
  cocoon::Status valid = cocoon::backends::ValidateBpf(*program);
  if (!valid.ok()) Fail("linux.seccomp.bpf is invalid: " + valid.ToString());
  static std::unordered_set<std::string> loaded;
  if (loaded.size() > 4096) loaded.clear();
  if (!loaded.insert(artifact.bytes).second) return;
  const int error = KernelLoad(*program);
  if (error != 0) Fail("the kernel refused linux.seccomp.bpf: errno " + std::to_string(error));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  cocoon::frontend::FrontendOptions options;
  options.dfa_reuse = cocoon::frontend::DfaReuse::kProcessWide;  // a cold DFA per input cut exec/s ~6x
  options.max_file_bytes = 64 * 1024;
  // As launches check (cli/frontend_util.h): the checker reports rule sets
  // seccomp cannot express. Not FilterBuildProblems (`cocoon check`): it
  // builds the filter the compiler builds, so a bug in Cocoon's rewrites of
  // the program would be refused by the check and never reach the oracle
  // below.
  options.syscall_rule_check = cocoon::backends::SyscallRuleProblems;
  cocoon::Diagnostics diagnostics(options.diagnostics);
  auto policy = cocoon::frontend::CompilePolicyText("fuzz.cocoon", text, "", options, diagnostics);
  if (!policy) return 0;  // the checker refused it: nothing to compile
  std::vector<cocoon::driver::Target> targets = cocoon::driver::AllTargets();
  // The rule form writes Cocoon's built-in guards as rules beside the
  // policy's and can need more disjoint pieces than it allows: a documented
  // refusal, located at the statement, for those two targets only.
  if (!cocoon::backends::oci::RuleFormProblems(*policy).empty()) {
    std::erase_if(targets, [](cocoon::driver::Target t) {
      return t == cocoon::driver::Target::kOci || t == cocoon::driver::Target::kKubernetes;
    });
  }
  auto output = cocoon::driver::CompileTargets(*policy, targets);
  // libseccomp 2.5.4 loops adding some rule sets (child_deadline.h): the
  // compiler's watchdog refusal is the documented outcome, not a bug.
  if (!output.ok() && output.status().message().find("libseccomp 2.5.4 cannot build the rules") != std::string::npos) {
    return 0;
  }
  if (!output.ok()) Fail("a checked policy failed to compile: " + output.status().ToString() + "\n" + text);
  for (const auto& artifact : output->artifacts) {
    if (artifact.path == "linux.seccomp.bpf") CheckSeccomp(artifact);
  }
  return 0;
}
