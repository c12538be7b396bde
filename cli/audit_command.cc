// `cocoon audit keygen|verify|demo|rotate-key`: keys for, writing to and
// verifying the signed NDJSON audit log (docs/audit.md).
//
// verify's exit codes are its own contract (0 sealed, 1 tampered, 2 unsealed,
// 3 usage, 4 recovered), so its options are validated here rather than by CLI11, whose
// parse errors main() maps to 2.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/events.h"
#include "audit/keys.h"
#include "audit/verifier.h"
#include "cli/command_registry.h"

namespace cocoon::cli {
namespace {

constexpr int kVerifyUsage = 3;

// A log shrinks under verify's mapping when another program truncates it
// (a writer's crash recovery cuts a torn fragment, logrotate's copytruncate
// empties it); reading its lost pages raises SIGBUS, which used to kill
// verify (exit 135). Reported instead as unreadable input (exit 3): nothing
// can be said about a log that changed while it was read. Only write(2) and
// _exit here (signal-safety(7)); a SIGBUS anywhere else gets the default.
void OnSigbus(int, siginfo_t* info, void*) {
  const char* log = audit::MappedLogAt(info->si_addr);
  if (log == nullptr) {
    signal(SIGBUS, SIG_DFL);  // not ours: the fault repeats on return and ends the process as it would have
    return;
  }
  // Verify reads with several threads, and each may fault on the lost
  // pages at once: only the first reports (two interleaved their pieces of
  // the message in a CI run); the others wait for its _exit.
  static std::atomic_flag reporting = ATOMIC_FLAG_INIT;
  if (reporting.test_and_set()) {
    for (;;) pause();
  }
  // One write(2): the message arrives whole, not in pieces.
  char message[4096];
  size_t used = 0;
  for (const char* part : {"cocoon audit verify: ", log,
                           ": the log shrank while being read (truncated or rotated by another program); nothing "
                           "was verified: verify again\n"}) {
    for (; *part != '\0' && used < sizeof message; ++part) message[used++] = *part;
  }
  if (used == sizeof message) message[used - 1] = '\n';
  if (write(STDERR_FILENO, message, used) < 0) {}
  _exit(kVerifyUsage);
}

void CatchShrinkingLogs() {
  struct sigaction action {};
  action.sa_sigaction = OnSigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, nullptr);
}

struct VerifyArgs {
  std::vector<std::string> files;
  std::vector<std::string> trust;
  bool ignore_extra_keys = false;
  unsigned threads = 0;
  std::optional<uint64_t> expect_seq;
  std::string expect_head;
};

int RunVerify(CLI::App& command, const VerifyArgs& args) {
  if (!command.remaining().empty()) {
    std::cerr << "cocoon audit verify: unexpected argument '" << command.remaining().front() << "'\n";
    return kVerifyUsage;
  }
  if (args.files.empty() || args.trust.empty()) {
    std::cerr << "usage: cocoon audit verify FILE... --trust KEYS.pub [--trust MORE.pub] [--ignore-extra-keys] "
                 "[--expect-seq N] [--expect-head HASH]\n";
    return kVerifyUsage;
  }
  audit::VerifyOptions options;
  options.ignore_extra_keys = args.ignore_extra_keys;
  options.threads = args.threads;
  options.expect_seq = args.expect_seq;
  if (!args.expect_head.empty()) {
    audit::Digest head{};
    if (args.expect_head.size() != 2 * head.size() || !audit::HexDecode(args.expect_head, head.data(), head.size())) {
      std::cerr << "cocoon audit verify: --expect-head '" << args.expect_head.substr(0, 80)
                << "' is not a line hash (64 hex digits): give the hash of the head line an earlier verify printed\n";
      return kVerifyUsage;
    }
    options.expect_head = head;
  }
  for (const auto& path : args.trust) {
    auto keys = audit::LoadPublicKeys(path);
    if (!keys.ok()) {
      std::cerr << "cocoon audit verify: " << keys.status().message() << "\n";
      return kVerifyUsage;
    }
    for (auto& key : *keys) options.trusted.push_back(std::move(key));
  }
  CatchShrinkingLogs();
  auto report = audit::VerifyFiles(args.files, options);
  if (!report.ok()) {
    std::cerr << "cocoon audit verify: " << report.status().message() << "\n";
    return kVerifyUsage;
  }
  std::cout << audit::FormatReport(*report);
  return static_cast<int>(report->verdict);
}

int RunKeygen(const std::string& out) {
  auto key = audit::SigningKey::Generate();
  Status status = key.ok() ? audit::WriteKeyPair(*key, out) : key.status();
  if (!status.ok()) {
    std::cerr << "cocoon audit keygen: " << status.message() << "\n";
    return 1;
  }
  std::cout << "wrote " << out << " (private, 0600) and " << out << ".pub\nkey id " << key->key_id() << "\n";
  return 0;
}

struct LogArgs {
  std::string log = "audit.log";
  std::string key;
  std::string sink = "file";
  std::string syslog = "unix:/dev/log";
  std::string fsync = "batch";
  uint32_t sign_every = 1;
  uint64_t count = 0;
  uint64_t batch = 1;
  uint64_t rotate_bytes = 0;
  std::string new_key;
};

Result<std::unique_ptr<audit::AuditLog>> OpenLog(const LogArgs& args) {
  audit::AuditLogOptions options;
  COCOON_ASSIGN_OR_RETURN(options.sink, audit::ParseSinkKind(args.sink));
  COCOON_ASSIGN_OR_RETURN(options.fsync, audit::ParseFsyncPolicy(args.fsync));
  options.path = args.log;
  options.key_path = args.key;
  options.syslog_address = args.syslog;
  options.sign_every = args.sign_every;
  options.rotate_bytes = args.rotate_bytes;
  return audit::AuditLog::Open(options);
}

// One event of every type, then `count` more syscall denials in batches: a
// sample for docs/audit.md and a load generator for the tests.
std::vector<audit::Event> SampleEvents() {
  std::vector<audit::Event> events;
  events.push_back(audit::PolicyCompiled({"ci-python", "policies/ci-python.cocoon",
                                          std::string(64, 'a'), "compile", true, 0, 1,
                                          {{"linux-seccomp", std::string(64, 'b')}, {"oci", std::string(64, 'c')}}}));
  audit::SandboxLaunchedInfo launch;
  launch.policy_name = "ci-python";
  launch.policy_sha256 = std::string(64, 'a');
  launch.profile = "default";
  launch.argv = {"/usr/bin/python3", "-c", "print('hi')"};
  launch.cwd = "/work";
  launch.pid = 4242;
  launch.uid_inside = 65534;
  launch.gid_inside = 65534;
  launch.user_inside = "nobody";
  launch.namespaces = {"user", "mnt", "pid", "net", "uts", "ipc", "cgroup"};
  launch.limits = {{"memory", 268435456, "bytes", "cgroup-v1", true}, {"wall_time", 30000, "ms", "supervisor", true}};
  launch.landlock_abi = 7;
  launch.run_id = "run-7f3a";
  events.push_back(audit::SandboxLaunched(launch));
  events.push_back(audit::SyscallDenied({"ptrace", 101, {16, 1, 0, 0, 0, 0}, "errno(EPERM)", 3, "ci-python", 4242, "run-7f3a"}));
  events.push_back(audit::LimitHit({audit::LimitKind::kTimeout, 30000, 30004, "ms", "", "ci-python", "run-7f3a"}));
  events.push_back(audit::BreakoutFinding({"out/link", "symlink-escape", "/etc/shadow", "ci-python", "run-7f3a"}));
  audit::ProcessExitedInfo exited;
  exited.pid = 4242;
  exited.exit_code = -1;
  exited.signal = 9;
  exited.termination_reason = "timeout";
  exited.wall_ms = 30004;
  exited.user_cpu_ms = 29800;
  exited.peak_memory_kib = 10240;
  exited.peak_memory_source = "cgroup-v1 max_usage_in_bytes";
  exited.breakout_clean = false;
  exited.policy_name = "ci-python";
  exited.run_id = "run-7f3a";
  events.push_back(audit::ProcessExited(exited));
  return events;
}

int RunDemo(const LogArgs& args, bool rotate_key) {
  auto log = OpenLog(args);
  Status status = log.ok() ? Status::Ok() : log.status();
  if (status.ok() && rotate_key) status = (*log)->RotateKey(args.new_key);
  if (status.ok() && !rotate_key) status = (*log)->AppendBatch(SampleEvents()).status();
  for (uint64_t done = 0; status.ok() && done < args.count;) {
    std::vector<audit::Event> batch;
    for (uint64_t i = 0; i < args.batch && done < args.count; ++i, ++done) {
      batch.push_back(audit::SyscallDenied({"mount", 165, {done, 0, 0, 0, 0, 0}, "errno(EPERM)", 1, "load", 1,
                                            "run-load"}));
    }
    status = (*log)->AppendBatch(std::move(batch)).status();
  }
  if (status.ok()) status = (*log)->Close();
  if (!status.ok()) {
    std::cerr << "cocoon audit: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

void AddLogOptions(CLI::App* command, LogArgs& args) {
  command->add_option("--log", args.log, "audit log path, or - for stdout");
  command->add_option("--key", args.key, "Ed25519 private key (cocoon audit keygen)")->required();
  command->add_option("--sink", args.sink, "file | stdout | syslog | hec");
  command->add_option("--syslog", args.syslog, "unix:/dev/log | tcp:HOST:PORT | udp:HOST:PORT");
  command->add_option("--fsync", args.fsync, "none | batch (default) | event");
  command->add_option("--sign-every", args.sign_every, "1 = sign every line; N = signed checkpoints every N lines");
  command->add_option("--rotate-bytes", args.rotate_bytes, "rotate the file when it exceeds this size");
}

void SetUpAuditCommand(CLI::App& app, CommandResult& result) {
  CLI::App* audit = app.add_subcommand("audit", "Signed NDJSON audit log: keygen, verify, demo, rotate-key");
  audit->require_subcommand(1);

  auto out = std::make_shared<std::string>();
  CLI::App* keygen = audit->add_subcommand("keygen", "Create an Ed25519 key pair (PATH 0600 and PATH.pub)");
  keygen->add_option("--out", *out, "private key path")->required();
  keygen->callback([out, &result] { result.exit_code = RunKeygen(*out); });

  auto verify_args = std::make_shared<VerifyArgs>();
  CLI::App* verify = audit->add_subcommand(
      "verify", "Check audit logs: exit 0 intact+sealed, 1 tampered, 2 unsealed, 3 usage error, 4 recovered (inspect)");
  verify->allow_extras();
  verify->add_option("files", verify_args->files, "log files, oldest first (rotated series in order)");
  verify->add_option("--trust", verify_args->trust, "PEM file(s) of accepted public keys");
  verify->add_flag("--ignore-extra-keys", verify_args->ignore_extra_keys,
                   "drop top-level keys a log shipper added before checking");
  verify->add_option("--threads", verify_args->threads, "worker threads (default: every core)");
  verify->add_option("--expect-seq", verify_args->expect_seq,
                     "seq of a head recorded from an earlier verify: exit 2 if the log no longer reaches it");
  verify->add_option("--expect-head", verify_args->expect_head,
                     "hash of that recorded head: exit 2 if it is missing, 1 if its seq holds another line");
  verify->callback([verify, verify_args, &result] { result.exit_code = RunVerify(*verify, *verify_args); });

  auto demo_args = std::make_shared<LogArgs>();
  CLI::App* demo = audit->add_subcommand("demo", "Append one event of every type (and --count more) to a log");
  AddLogOptions(demo, *demo_args);
  demo->add_option("--count", demo_args->count, "extra synthetic events");
  demo->add_option("--batch", demo_args->batch, "events per append (one lock and one write each)");
  demo->callback([demo_args, &result] { result.exit_code = RunDemo(*demo_args, false); });

  auto rotate_args = std::make_shared<LogArgs>();
  CLI::App* rotate = audit->add_subcommand("rotate-key", "Announce a new signing key, signed with the old one");
  AddLogOptions(rotate, *rotate_args);
  rotate->add_option("--new-key", rotate_args->new_key, "the new private key")->required();
  rotate->callback([rotate_args, &result] { result.exit_code = RunDemo(*rotate_args, true); });
}

}  // namespace

COCOON_REGISTER_COMMAND(audit, SetUpAuditCommand);

}  // namespace cocoon::cli
