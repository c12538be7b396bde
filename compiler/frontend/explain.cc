// `cocoon explain`: the resolved, effective policy in plain words. Every line
// says where its setting came from, using ir::Policy::provenance, so a
// reviewer sees what a profile inherited and from which file and line.
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "compiler/frontend/checker_internal.h"
#include "compiler/frontend/constants.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/units.h"
#include "compiler/common/display_text.h"
#include "compiler/ir/file_size_rlimit.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::frontend {
namespace {

// Policy strings (descriptions, env values, paths, file names) may hold any
// byte, and a newline or an ESC sequence would let a policy forge lines of
// its own explanation: each prints as one line of plain text
// (display_text.h escapes control characters and invalid UTF-8).
std::string Printable(std::string_view text) { return EscapeControlCharacters(text); }

// `path` is `dir` or below it (both canonical, absolute).
bool IsAtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

class Writer {
 public:
  explicit Writer(const ir::Policy& policy) : policy_(policy) {}

  void Section(const std::string& title) { out_ << "\n" << Printable(title) << "\n"; }

  // One line, padded, then where it came from. Everything a line holds goes
  // through Printable: our own words never contain control characters.
  void Line(const std::string& raw, const std::string& key = {}) {
    std::string text = Printable(raw);
    out_ << "  " << text;
    std::string origin = Printable(From(key));
    if (!origin.empty()) {
      size_t width = text.size() + 2;
      out_ << std::string(width < 58 ? 58 - width : 1, ' ') << origin;
    }
    out_ << "\n";
  }

  std::string From(const std::string& key) const {
    if (key.empty()) return {};
    auto it = policy_.provenance.find(key);
    if (it == policy_.provenance.end()) return "(built-in default)";
    const ir::Origin& origin = it->second;
    std::string where = origin.file + ":" + std::to_string(origin.line);
    if (origin.profile == policy_.name) return "(" + where + ")";
    return "(inherited from " + origin.profile + ", " + where + ")";
  }

  std::ostringstream& out() { return out_; }

 private:
  const ir::Policy& policy_;
  std::ostringstream out_;
};

std::string LimitText(const ir::Limit& limit, std::string (*format)(uint64_t)) {
  if (!limit.set) return "no limit";
  std::string text = format(limit.value);
  if (limit.enforcement == ir::Enforcement::kBestEffort) text += " (best effort)";
  return text;
}

std::string Count(uint64_t v) { return std::to_string(v); }
std::string Percent(uint64_t v) { return std::to_string(v) + "% of one CPU"; }

std::string ConditionText(const ir::ArgCondition& c) {
  char value[32];
  snprintf(value, sizeof value, "0x%llx", static_cast<unsigned long long>(c.value));
  std::string arg = "arg" + std::to_string(c.arg);
  switch (c.op) {
    case ir::CompareOp::kEq: return arg + " == " + value;
    case ir::CompareOp::kNe: return arg + " != " + value;
    case ir::CompareOp::kLt: return arg + " < " + value;
    case ir::CompareOp::kLe: return arg + " <= " + value;
    case ir::CompareOp::kGt: return arg + " > " + value;
    case ir::CompareOp::kGe: return arg + " >= " + value;
    case ir::CompareOp::kMaskedEq: {
      char mask[32];
      snprintf(mask, sizeof mask, "0x%llx", static_cast<unsigned long long>(c.mask));
      return "(" + arg + " & " + mask + ") == " + value;
    }
  }
  return arg;
}

// " if C1 and C2", or "" for an unconditional rule.
std::string ConditionsText(const std::vector<ir::ArgCondition>& conditions) {
  std::string text;
  for (size_t i = 0; i < conditions.size(); ++i) text += (i == 0 ? " if " : " and ") + ConditionText(conditions[i]);
  return text;
}

void ExplainNetwork(Writer& w, const ir::Policy& p) {
  w.Section("Network");
  switch (p.network.mode) {
    case ir::NetworkMode::kOff: w.Line("off: no network at all (an empty network namespace)", "network"); break;
    case ir::NetworkMode::kOn: w.Line("on: full network access", "network"); break;
    case ir::NetworkMode::kAllowList:
      w.Line("only these endpoints:", "network");
      for (const auto& e : p.network.allow) {
        bool v6 = e.host.find(':') != std::string::npos;
        w.Line("  " + (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port));
      }
      break;
  }
}

void ExplainFilesystem(Writer& w, const ir::Policy& p) {
  const ir::Filesystem& fs = p.filesystem;
  w.Section("Filesystem");
  w.Line(fs.root == ir::RootKind::kHost ? "root: an empty root; host directories are bound in read-only as listed"
                                        : "root: the directory " + fs.rootfs,
         "filesystem.root");
  for (const ir::Mount& m : fs.mounts) {
    std::string text;
    if (m.kind == ir::MountKind::kTmpfs) {
      text = "tmpfs      " + m.target + " (" + FormatBytes(m.size_bytes) + ", empty, discarded after the run)";
    } else {
      text = (m.kind == ir::MountKind::kReadOnly ? "read-only  " : "WRITABLE   ") + m.target;
      if (m.source != m.target) text += " (from host " + m.source + ")";
      if (m.optional) text += " (if present)";
    }
    // `hide` wins over a mount at or above which it is (the enforcer covers
    // it, docs/language.md): say so here, not only on the hidden line.
    for (const std::string& h : fs.hidden) {
      if (IsAtOrUnder(m.target, h)) {
        text += " (hidden by `hide " + h + "`)";
        break;
      }
    }
    w.Line(text, "filesystem.mount:" + m.target);
  }
  std::string work = "work dir   " + fs.work.path;
  work += fs.work.mode == ir::WorkMode::kStaged ? " (staged: writes are verified, then committed)"
                                                : " (direct: the host directory is written in place)";
  if (fs.work.quota_bytes) work += ", quota " + FormatBytes(fs.work.quota_bytes);
  w.Line(work, "filesystem.work");
  for (const ir::Copy& c : fs.copies) {
    w.Line("copy       " + c.source + " -> " + fs.work.path + "/" + c.destination, "filesystem.copy:" + c.destination);
  }
  for (const std::string& h : fs.hidden) w.Line("hidden     " + h, "filesystem.hide:" + h);
  auto device = [&](const char* name, ir::DeviceAccess access) {
    w.Line(std::string("device     ") + name + (access == ir::DeviceAccess::kAllowed ? " on" : " off"),
           std::string("filesystem.devices.") + name);
  };
  device("gpu", fs.devices.gpu);
  device("tty", fs.devices.tty);
  device("kvm", fs.devices.kvm);
}

void ExplainLimits(Writer& w, const ir::Policy& p) {
  const ir::Limits& l = p.limits;
  w.Section("Limits");
  w.Line("wall time   " + LimitText(l.wall_time_ms, FormatDuration), "limits.wall_time");
  w.Line("CPU time    " + LimitText(l.cpu_time_ms, FormatDuration), "limits.cpu_time");
  w.Line("memory      " + LimitText(l.memory_bytes, FormatBytes), "limits.memory");
  w.Line("processes   " + LimitText(l.processes, Count), "limits.processes");
  // Unset (or `unlimited`), these two still get an rlimit: the enforcer's default.
  const std::string kDefault = " (the enforcer's default)";
  w.Line("open files  " +
             (l.open_files.set ? LimitText(l.open_files, Count) : Count(ir::kDefaultOpenFiles) + kDefault),
         "limits.open_files");
  // Unset, file_size is the disk limit when there is one (file_size_rlimit.h).
  const bool from_disk = !l.file_size_bytes.set && (l.disk_bytes.set || p.filesystem.work.quota_bytes != 0);
  w.Line("file size   " + (l.file_size_bytes.set ? LimitText(l.file_size_bytes, FormatBytes)
                           : from_disk ? FormatBytes(ir::FileSizeRlimitBytes(l, p.filesystem.work)) + " (the disk limit)"
                                       : FormatBytes(ir::kDefaultFileSizeBytes) + kDefault),
         "limits.file_size");
  w.Line("disk        " + LimitText(l.disk_bytes, FormatBytes), "limits.disk");
  w.Line("output      " + LimitText(l.output_bytes, FormatBytes) + " per stream", "limits.output");
  w.Line("CPU share   " + LimitText(l.cpu_percent, Percent), "limits.cpu");
}

void ExplainSyscalls(Writer& w, const ir::Policy& p) {
  const ir::Syscalls& s = p.syscalls;
  w.Section("Syscalls");
  w.Line("default: " + internal::ActionText(s.default_action) + " for every syscall not listed below",
         "syscalls.default");
  // Group-derived rules are summarised per group, action and conditions (a
  // conditional group rule must not read as unconditional, and one `in` value
  // per line), counting distinct syscalls.
  struct GroupLine {
    std::set<std::string> names;
    std::string origin_key;  // the same for each of its rules
  };
  std::map<std::tuple<std::string, std::string, std::string>, GroupLine> groups;
  for (const ir::SyscallRule& r : s.rules) {
    if (r.group.empty()) continue;
    GroupLine& line = groups[{r.group, internal::ActionText(r.action), ConditionsText(r.conditions)}];
    if (line.names.empty()) line.origin_key = internal::RuleOriginKey(r);
    line.names.insert(r.name);
  }
  for (const auto& [key, line] : groups) {
    const auto& [group_name, action, conditions] = key;
    const syscalls::SyscallGroup* group = syscalls::FindGroup(group_name);
    std::string text = action + " " + group_name + conditions + " (" + std::to_string(line.names.size()) + " syscalls";
    if (group) text += ": " + std::string(group->description);
    w.Line(text + ")", line.origin_key);
  }
  // A conditional rule an unconditional one outranks never applies (`cocoon
  // check` warns): it must not read as if it did.
  std::map<std::string_view, const ir::SyscallRule*> unconditional;
  for (const ir::SyscallRule& r : s.rules) {
    if (r.conditions.empty()) unconditional[r.name] = &r;
  }
  for (const ir::SyscallRule& r : s.rules) {
    if (!r.group.empty()) continue;
    std::string text = internal::ActionText(r.action) + " " + r.name + ConditionsText(r.conditions);
    auto covering = unconditional.find(r.name);
    const bool netlink_refused = p.network.mode == ir::NetworkMode::kOff;
    if (const std::string why = internal::PrologueOverrideText(r, netlink_refused); !why.empty()) {
      text += " (OVERRIDDEN, never applies: " + why + ")";
    } else if (const std::string except = internal::PrologueExceptionsText(r, netlink_refused); !except.empty()) {
      text += " (except where the compiler's prologue answers: " + except + ")";
    } else if (covering != unconditional.end() && internal::Overrides(*covering->second, r)) {
      const ir::SyscallRule& by = *covering->second;
      text += " (OVERRIDDEN, never applies: the unconditional " + internal::ActionText(by.action) + " " + by.name +
              (by.group.empty() ? "" : " from " + by.group) + " wins)";
    }
    w.Line(text, internal::RuleOriginKey(r));
  }
  std::string arches;
  for (ir::Arch a : s.architectures) {
    arches += std::string(arches.empty() ? "" : ", ") +
              (a == ir::Arch::kX86_64 ? "x86_64" : a == ir::Arch::kX32 ? "x32" : a == ir::Arch::kX86 ? "x86" : "aarch64");
  }
  w.Line("architectures: " + arches + " (any other ABI is killed)", "syscalls.arch");
  for (const std::string& name : s.reopened) {
    w.Line("NOTE: reopens " + name + ", which the hardening prologue denies by default", "syscalls.reopen:" + name);
  }
}

void ExplainProcess(Writer& w, const ir::Policy& p) {
  w.Section("Environment");
  w.Line(p.environment.clear ? "starts empty (the caller's environment is not passed in)"
                             : "INHERITS the caller's whole environment",
         "environment.clear");
  for (const ir::EnvVar& v : p.environment.set) w.Line("set  " + v.name + "=" + v.value, "environment.set:" + v.name);
  for (const std::string& n : p.environment.pass) w.Line("pass " + n + " from the caller", "environment.pass:" + n);
  // Only meaningful under inherit: in a clean environment an unset name was
  // just taken out of the set/pass lists above.
  if (!p.environment.clear) {
    for (const std::string& n : p.environment.unset) w.Line("unset " + n + " (removed from the caller's)", "environment.unset:" + n);
  }
  w.Section("Process");
  w.Line("working directory " + p.cwd, "cwd");
  w.Line("hostname " + p.hostname, "hostname");
  w.Line("runs as uid " + std::to_string(p.user.uid) + ", gid " + std::to_string(p.user.gid) +
             " inside its user namespace",
         "user");
  if (p.runtime) {
    const ir::Runtime& r = *p.runtime;
    w.Section("Runtime " + r.name);
    std::string list;
    for (const auto& i : r.interpreters) list += (list.empty() ? "" : ", ") + i;
    w.Line("interpreter: the first of " + list, "runtime");
    std::string flags;
    for (const auto& f : r.flags) flags += " " + f;
    if (!flags.empty()) w.Line("flags:" + flags);
    if (!r.code_flag.empty()) w.Line("inline code via " + r.code_flag);
    if (!r.file_extension.empty()) w.Line("script files end in " + r.file_extension);
  }
}

}  // namespace

std::string ExplainPolicy(const ir::Policy& p) {
  Writer w(p);
  w.out() << "Profile " << Printable(p.name);
  if (!p.description.empty()) {
    w.out() << ": " << Printable(p.description);
    // A parent's words may not fit the child (its limits, its network): say
    // whose they are.
    auto origin = p.provenance.find("description");
    if (origin != p.provenance.end() && !origin->second.profile.empty() && origin->second.profile != p.name) {
      w.out() << " (description inherited from " << Printable(origin->second.profile) << ")";
    }
  }
  w.out() << "\n";
  std::string lineage;
  for (const std::string& name : p.lineage) lineage += (lineage.empty() ? "" : " <- ") + name;
  w.out() << "  inherits: " << Printable(lineage) << "\n";
  std::string files;
  for (const std::string& f : p.source_files) files += (files.empty() ? "" : ", ") + f;
  w.out() << "  sources:  " << Printable(files) << "\n";
  w.out() << "  sha256:   " << p.source_sha256 << "\n";
  ExplainNetwork(w, p);
  ExplainFilesystem(w, p);
  ExplainLimits(w, p);
  ExplainSyscalls(w, p);
  ExplainProcess(w, p);
  return w.out().str();
}

}  // namespace cocoon::frontend
