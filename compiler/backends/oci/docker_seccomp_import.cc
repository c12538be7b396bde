#include "compiler/backends/oci/docker_seccomp_import.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cocoon_version.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends::oci {
namespace {

using nlohmann::json;

// Keywords of the .cocoon grammar that are also syscall names must be quoted.
const std::set<std::string> kKeywords = {
    "include", "import", "profile", "extends", "description", "network", "filesystem", "limits",
    "syscalls", "environment", "cwd", "hostname", "user", "runtime", "relaxes", "off", "on", "allow",
    "root", "host", "rootfs", "readonly", "writable", "optional", "as", "work", "quota", "staged",
    "direct", "copy", "to", "tmpfs", "size", "hide", "devices", "best_effort", "unlimited", "default",
    "deny", "kill", "log", "notify", "trap", "errno", "if", "and", "or", "in", "arch", "clear",
    "inherit", "set", "pass", "unset"};

const std::map<int, const char*> kErrnoNames = {
    {1, "EPERM"},   {2, "ENOENT"}, {9, "EBADF"},   {13, "EACCES"}, {22, "EINVAL"},
    {38, "ENOSYS"}, {95, "EOPNOTSUPP"}, {97, "EAFNOSUPPORT"}, {93, "EPROTONOSUPPORT"}};

struct Rule {
  std::string verb;     // allow | deny | kill | log | notify | trap
  std::string errno_;   // for deny: the errno suffix
  std::string condition;  // "" or the text after `if`
  std::string comment;
};

std::string ErrnoText(int value) {
  auto it = kErrnoNames.find(value);
  return it != kErrnoNames.end() ? it->second : std::to_string(value);
}

// Docker's arch names (moby api/types: "amd64", "x32", ...) for a Cocoon arch.
std::set<std::string> DockerArchNames(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return {"amd64", "SCMP_ARCH_X86_64"};
    case ir::Arch::kX32: return {"x32", "SCMP_ARCH_X32"};
    case ir::Arch::kX86: return {"x86", "SCMP_ARCH_X86"};
    case ir::Arch::kAarch64: return {"arm64", "SCMP_ARCH_AARCH64"};
  }
  return {};
}

std::string SanitizedText(std::string_view text, size_t max) {
  std::string out;
  for (char c : text.substr(0, max)) out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
  return out;
}

Result<std::vector<std::string>> StringList(const json& value, const char* what) {
  if (value.is_null()) return std::vector<std::string>{};
  if (!value.is_array()) return InvalidArgumentError(std::string(what) + " must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) return InvalidArgumentError(std::string(what) + " must be an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<uint64_t> Unsigned(const json& value, const char* what) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0)) {
    return InvalidArgumentError(std::string(what) + " must be a non-negative integer");
  }
  return value.get<uint64_t>();
}

std::string Hex(uint64_t v) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), v < 10 ? "%llu" : "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

struct ArgCondition {
  uint64_t index = 0;
  std::string predicate;
};

// One Docker `args` entry -> a Cocoon predicate on one argument.
Result<ArgCondition> ArgPredicate(const json& arg) {
  if (!arg.is_object()) return InvalidArgumentError("args entries must be objects");
  COCOON_ASSIGN_OR_RETURN(uint64_t index, Unsigned(arg.value("index", json()), "args.index"));
  if (index > 5) return InvalidArgumentError("args.index must be 0..5");
  COCOON_ASSIGN_OR_RETURN(uint64_t value, Unsigned(arg.value("value", json(0)), "args.value"));
  COCOON_ASSIGN_OR_RETURN(uint64_t value_two, Unsigned(arg.value("valueTwo", json(0)), "args.valueTwo"));
  const std::string op = arg.value("op", json("")).is_string() ? arg.value("op", "") : "";
  const std::string operand = "arg" + std::to_string(index);
  static const std::map<std::string, std::string> kOps = {
      {"SCMP_CMP_EQ", "=="}, {"SCMP_CMP_NE", "!="}, {"SCMP_CMP_LT", "<"},
      {"SCMP_CMP_LE", "<="}, {"SCMP_CMP_GT", ">"}, {"SCMP_CMP_GE", ">="}};
  if (op == "SCMP_CMP_MASKED_EQ") {
    return ArgCondition{index, "(" + operand + " & " + Hex(value) + ") == " + Hex(value_two)};
  }
  auto it = kOps.find(op);
  if (it == kOps.end()) return InvalidArgumentError("unknown args.op '" + SanitizedText(op, 40) + "'");
  return ArgCondition{index, operand + " " + it->second + " " + Hex(value)};
}

// An entry's `args` -> the conditions of the rules it stands for. Conditions on
// distinct argument indexes are ANDed into one rule. When any index repeats,
// runc (libcontainer/seccomp matchCall) adds every condition as a rule of its
// own, so the entry matches when ANY condition holds: `socket` with arg0 == 16
// and arg0 == 17 denies both families rather than never matching.
Result<std::vector<std::string>> EntryConditions(const json& args) {
  if (!args.is_array() && !args.is_null()) return InvalidArgumentError("args must be an array");
  std::vector<ArgCondition> conditions;
  std::set<uint64_t> indexes;
  bool repeated = false;
  for (const auto& arg : args) {
    COCOON_ASSIGN_OR_RETURN(ArgCondition condition, ArgPredicate(arg));
    repeated = !indexes.insert(condition.index).second || repeated;
    conditions.push_back(std::move(condition));
  }
  std::vector<std::string> out;
  if (repeated) {
    for (const auto& condition : conditions) out.push_back(condition.predicate);
    return out;
  }
  std::string joined;
  for (const auto& condition : conditions) joined += (joined.empty() ? "" : " and ") + condition.predicate;
  out.push_back(joined);
  return out;
}

class Importer {
 public:
  explicit Importer(const DockerImportOptions& options) : options_(options), arch_names_(DockerArchNames(options.arch)) {}

  Result<std::string> Run(const json& doc);

 private:
  Result<bool> Applies(const json& entry);
  Result<Rule> ActionRule(const json& action_value, const json& errno_value, int fallback_errno);
  Status AddEntry(const json& entry);
  std::string Render(const json& doc) const;

  const DockerImportOptions& options_;
  std::set<std::string> arch_names_;
  std::map<std::string, std::vector<std::string>> unconditional_;  // "verb|errno" -> names
  std::vector<std::pair<std::string, Rule>> conditional_;          // name, rule
  std::set<std::string> seen_;                                     // name + condition
  std::set<std::string> dropped_names_;
  std::vector<std::string> notes_;
  std::string default_line_;
  size_t skipped_entries_ = 0;
  int default_errno_ = 1;
};

bool Intersects(const std::vector<std::string>& a, const std::set<std::string>& b) {
  return std::any_of(a.begin(), a.end(), [&](const std::string& s) { return b.count(s) > 0; });
}

Result<bool> Importer::Applies(const json& entry) {
  const std::set<std::string> caps(options_.capabilities.begin(), options_.capabilities.end());
  for (const char* key : {"includes", "excludes"}) {
    const json filter = entry.value(key, json::object());
    if (!filter.is_object()) return InvalidArgumentError(std::string(key) + " must be an object");
    COCOON_ASSIGN_OR_RETURN(auto arches, StringList(filter.value("arches", json()), "arches"));
    COCOON_ASSIGN_OR_RETURN(auto needed_caps, StringList(filter.value("caps", json()), "caps"));
    const bool includes = std::string(key) == "includes";
    if (includes) {
      if (!arches.empty() && !Intersects(arches, arch_names_)) return false;
      for (const auto& cap : needed_caps) {
        if (!caps.count(cap)) return false;
      }
    } else {
      if (Intersects(arches, arch_names_) || Intersects(needed_caps, caps)) return false;
    }
  }
  return true;
}

Result<Rule> Importer::ActionRule(const json& action_value, const json& errno_value, int fallback_errno) {
  if (!action_value.is_string()) return InvalidArgumentError("action must be a string");
  const std::string action = action_value.get<std::string>();
  int err = fallback_errno;
  if (!errno_value.is_null()) {
    COCOON_ASSIGN_OR_RETURN(uint64_t value, Unsigned(errno_value, "errnoRet"));
    if (value > 4095) return InvalidArgumentError("errnoRet must be below 4096");
    err = static_cast<int>(value);
  }
  if (action == "SCMP_ACT_ALLOW") return Rule{"allow", "", "", ""};
  if (action == "SCMP_ACT_ERRNO") return Rule{"deny", ErrnoText(err), "", ""};
  if (action == "SCMP_ACT_KILL" || action == "SCMP_ACT_KILL_THREAD" || action == "SCMP_ACT_KILL_PROCESS") {
    return Rule{"kill", "", "", ""};
  }
  if (action == "SCMP_ACT_TRAP") return Rule{"trap", "", "", ""};
  if (action == "SCMP_ACT_LOG") return Rule{"log", "", "", ""};
  if (action == "SCMP_ACT_NOTIFY") return Rule{"notify", "", "", ""};
  // seccomp(2): with no tracer attached, SECCOMP_RET_TRACE fails the call with ENOSYS.
  if (action == "SCMP_ACT_TRACE") return Rule{"deny", "ENOSYS", "", "SCMP_ACT_TRACE: no tracer, so ENOSYS"};
  return InvalidArgumentError("unknown action '" + SanitizedText(action, 40) + "'");
}

Status Importer::AddEntry(const json& entry) {
  if (!entry.is_object()) return InvalidArgumentError("syscalls entries must be objects");
  COCOON_ASSIGN_OR_RETURN(bool applies, Applies(entry));
  std::vector<std::string> names;
  if (entry.contains("name")) {
    if (!entry["name"].is_string()) return InvalidArgumentError("name must be a string");
    names.push_back(entry["name"].get<std::string>());
  }
  COCOON_ASSIGN_OR_RETURN(auto more, StringList(entry.value("names", json()), "names"));
  names.insert(names.end(), more.begin(), more.end());
  // errnoRet absent: runc and crun use EPERM for SCMP_ACT_ERRNO entries.
  COCOON_ASSIGN_OR_RETURN(Rule rule, ActionRule(entry.value("action", json()), entry.value("errnoRet", json()), 1));
  COCOON_ASSIGN_OR_RETURN(auto conditions, EntryConditions(entry.value("args", json::array())));
  if (!applies) {
    ++skipped_entries_;
    return Status::Ok();
  }
  for (const std::string& name : names) {
    if (!syscalls::IsKnownSyscall(name, {options_.arch})) {
      std::string shown;
      for (char c : name.substr(0, 64)) shown += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '?';
      dropped_names_.insert(shown);
      continue;
    }
    for (const std::string& condition : conditions) {
      if (!seen_.insert(name + "|" + condition).second) continue;  // first entry wins, as in libseccomp
      if (condition.empty()) {
        unconditional_[rule.verb + "|" + rule.errno_].push_back(name);
      } else {
        Rule conditional = rule;
        conditional.condition = condition;
        conditional_.emplace_back(name, std::move(conditional));
      }
    }
  }
  return Status::Ok();
}

std::string QuotedName(const std::string& name) { return kKeywords.count(name) ? "\"" + name + "\"" : name; }

std::string Importer::Render(const json& doc) const {
  std::string out;
  out += "# Imported by `cocoon import docker-seccomp` (cocoon " COCOON_VERSION_STRING ")";
  if (!options_.source_name.empty()) out += " from " + SanitizedText(options_.source_name, 200);
  out += ".\n# Resolved for one target: architecture " + *arch_names_.begin() + ", capabilities: ";
  out += options_.capabilities.empty() ? "none" : "";
  for (const auto& cap : options_.capabilities) out += SanitizedText(cap, 40) + " ";
  out += "; every minKernel condition assumed met.\n";
  out += "# Skipped " + std::to_string(skipped_entries_) + " rule group(s) for other architectures or capabilities.\n";
  if (!dropped_names_.empty()) {
    out += "# Dropped names libseccomp does not know on this architecture:";
    size_t col = 80;
    for (const auto& name : dropped_names_) {
      if (col + name.size() > 90) {
        out += "\n#  ";
        col = 3;
      }
      out += " " + name;
      col += name.size() + 1;
    }
    out += "\n";
  }
  for (const auto& note : notes_) out += "# " + note + "\n";
  out += "# Everything but the syscalls block takes Cocoon's defaults (network off, no host paths).\n";
  out += "profile " + options_.profile_name + " {\n";
  out += "  description \"Imported Docker seccomp profile\"\n";
  out += "  syscalls {\n";
  out += "    " + default_line_ + "\n";
  for (const auto& [key, names] : unconditional_) {
    const size_t bar = key.find('|');
    const std::string verb = key.substr(0, bar), err = key.substr(bar + 1);
    std::string line = "    " + verb;
    for (const auto& name : names) {
      if (line.size() + name.size() > 96) {
        out += line + (err.empty() ? "" : " errno " + err) + "\n";
        line = "    " + verb;
      }
      line += " " + QuotedName(name);
    }
    out += line + (err.empty() ? "" : " errno " + err) + "\n";
  }
  for (const auto& [name, rule] : conditional_) {
    out += "    " + rule.verb + " " + QuotedName(name) + " if " + rule.condition;
    if (!rule.errno_.empty()) out += " errno " + rule.errno_;
    out += "\n";
  }
  out += "  }\n}\n";
  (void)doc;
  return out;
}

Result<std::string> Importer::Run(const json& doc) {
  if (!doc.is_object()) return InvalidArgumentError("a seccomp profile is a JSON object");
  if (doc.contains("defaultErrnoRet")) {
    COCOON_ASSIGN_OR_RETURN(uint64_t value, Unsigned(doc["defaultErrnoRet"], "defaultErrnoRet"));
    if (value > 4095) return InvalidArgumentError("defaultErrnoRet must be below 4096");
    default_errno_ = static_cast<int>(value);
  }
  COCOON_ASSIGN_OR_RETURN(Rule def, ActionRule(doc.value("defaultAction", json()), json(), default_errno_));
  default_line_ = def.verb == "deny" ? "default errno " + def.errno_ : "default " + def.verb;
  if (def.verb == "allow") notes_.push_back("WARNING: the source profile allows every syscall it does not list.");
  const json syscalls = doc.value("syscalls", json::array());
  if (!syscalls.is_array()) return InvalidArgumentError("syscalls must be an array");
  if (syscalls.size() > options_.max_entries) return InvalidArgumentError("too many syscalls entries");
  for (const auto& entry : syscalls) COCOON_RETURN_IF_ERROR(AddEntry(entry));
  if (doc.contains("archMap") && doc["archMap"].is_array()) {
    notes_.push_back("The source archMap also admits sub-architectures (x86, x32 ...); Cocoon enables extra ABIs "
                     "only with an explicit `arch` line.");
  }
  return Render(doc);
}

std::string ProfileName(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 64)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z') || out[0] == '_')) {
    out = "imported_" + out;
  }
  return kKeywords.count(out) ? out + "_profile" : out;
}

}  // namespace

Result<std::string> ImportDockerSeccomp(std::string_view text, const DockerImportOptions& options) {
  if (text.size() > options.max_input_bytes) return InvalidArgumentError("seccomp profile too large");
  DockerImportOptions resolved = options;
  resolved.profile_name = ProfileName(options.profile_name);
  try {
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    Importer importer(resolved);
    return importer.Run(doc);
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("not a JSON seccomp profile: ") + e.what());
  }
}

}  // namespace cocoon::backends::oci
