// Checker section: syscalls. Expands @groups into per-syscall rules (keeping
// the group name), lowers conditions into ANDed lists (one rule per
// disjunct), and detects conflicting rules within a profile.
#include <algorithm>
#include <optional>
#include <tuple>

#include "compiler/frontend/checker_internal.h"
#include "compiler/frontend/constants.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::frontend::internal {
namespace {

using Conjunction = std::vector<ir::ArgCondition>;
using Dnf = std::vector<Conjunction>;

// `or`, `in` and masked `!=` multiply rules; past this a policy is better
// written another way, and the filter would grow without bound.
constexpr size_t kMaxDisjuncts = 64;
// Comparisons ANDed in one rule. Seccomp gains nothing past a few per argument
// (six arguments), and the cap keeps lowering a long `and` chain linear: each
// step copies the conjunction built so far.
constexpr size_t kMaxConjuncts = 64;

// Syscalls the seccomp prologue denies unless a policy explicitly allows them
// by name (see compiler/backends/seccomp/effective_rules.h).
const std::set<std::string>& PrologueSyscalls() {
  static const auto* names = new std::set<std::string>{
      "setns", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
      "io_uring_register", "kexec_load", "kexec_file_load", "init_module", "finit_module",
      "delete_module", "open_by_handle_at", "keyctl", "add_key", "request_key"};
  return *names;
}

bool ParseArch(const std::string& name, ir::Arch& out) {
  if (name == "x86_64" || name == "amd64") out = ir::Arch::kX86_64;
  else if (name == "x32") out = ir::Arch::kX32;
  else if (name == "x86" || name == "i386") out = ir::Arch::kX86;
  else if (name == "aarch64" || name == "arm64") out = ir::Arch::kAarch64;
  else return false;
  return true;
}

bool ErrnoValue(Layer& layer, const ast::Word& word, int& out) {
  if (word.kind == ast::WordKind::kNumber) {
    uint64_t n = 0;
    // 4095 is MAX_ERRNO, but libseccomp refuses an errno action of 4095
    // (it takes 1..4094), so the rule would fail to compile far from here.
    if (!ParseInteger(word.text, n) || n == 0 || n > 4094) {
      layer.Error(word.span, "errno " + word.text + " is out of range; expected 1..4094 or a name such as EPERM");
      return false;
    }
    out = static_cast<int>(n);
    return true;
  }
  if (auto value = LookupErrno(word.text)) {
    out = *value;
    return true;
  }
  std::string suggestion = DidYouMean(word.text, ErrnoNames());
  layer.Error(word.span, "unknown errno " + Quote(word.text),
              suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
  return false;
}

bool EvalValue(Layer& layer, const ast::ValueExpr& expr, uint64_t& out) {
  out = 0;
  bool ok = true;
  for (const ast::Word& term : expr.terms) {
    uint64_t v = 0;
    if (term.kind == ast::WordKind::kNumber) {
      if (!ParseInteger(term.text, v)) {
        layer.Error(term.span, "number " + term.text + " does not fit in 64 bits");
        ok = false;
      }
    } else if (auto constant = LookupConstant(term.text)) {
      v = *constant;
    } else {
      std::string suggestion = DidYouMean(term.text, ConstantNames());
      layer.Error(term.span, "unknown constant " + Quote(term.text),
                  suggestion.empty() ? "write a number, or see docs/language.md#constants"
                                     : "did you mean '" + suggestion + "'?");
      ok = false;
    }
    out |= v;
  }
  return ok;
}

bool ArgIndex(Layer& layer, const ast::Word& arg, uint8_t& out) {
  uint64_t n = 0;
  if (!ParseInteger(arg.text.substr(3), n) || n > 5) {
    layer.Error(arg.span, "no argument " + Quote(arg.text) + "; syscalls have arg0..arg5");
    return false;
  }
  out = static_cast<uint8_t>(n);
  return true;
}

bool LowerAtom(Layer& layer, const ast::Condition& c, Dnf& out) {
  uint8_t arg = 0;
  bool ok = ArgIndex(layer, c.arg, arg);
  std::vector<uint64_t> values(c.values.size());
  for (size_t i = 0; i < c.values.size(); ++i) ok = EvalValue(layer, c.values[i], values[i]) && ok;
  uint64_t mask = 0;
  if (c.masked) ok = EvalValue(layer, c.mask, mask) && ok;
  if (!ok) return false;
  const bool is_in = c.kind == ast::Condition::Kind::kIn;
  if (c.masked) {
    // Checked before the `in` form too: `(a & M) in {…}` is an OR of `(a & M) == V`,
    // so a 0 mask or a value outside it is the same mistake (a dead or always-true rule).
    if (mask == 0) {
      layer.Error(c.mask.span, "mask is 0: the condition would test nothing");
      return false;
    }
    if (!is_in && c.op != "==" && c.op != "!=") {
      layer.Error(c.span, "a masked argument can only be compared with == or !=");
      return false;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if ((values[i] & ~mask) == 0) continue;
      layer.Error(c.values[i].span, "value has bits outside the mask: the condition is always " +
                                        std::string(is_in || c.op == "==" ? "false" : "true"));
      ok = false;
    }
    if (!ok) return false;
  }
  if (is_in) {
    for (uint64_t v : values) {
      out.push_back(c.masked ? Conjunction{{arg, ir::CompareOp::kMaskedEq, v, mask}}
                             : Conjunction{{arg, ir::CompareOp::kEq, v, 0}});
    }
    return true;
  }
  uint64_t v = values[0];
  if (!c.masked) {
    static const std::pair<std::string_view, ir::CompareOp> kOps[] = {
        {"==", ir::CompareOp::kEq}, {"!=", ir::CompareOp::kNe}, {"<", ir::CompareOp::kLt},
        {"<=", ir::CompareOp::kLe}, {">", ir::CompareOp::kGt}, {">=", ir::CompareOp::kGe}};
    for (const auto& [text, op] : kOps) {
      if (c.op == text) out.push_back({{arg, op, v, 0}});
    }
    return true;
  }
  if (c.op == "==") {
    out.push_back({{arg, ir::CompareOp::kMaskedEq, v, mask}});
    return true;
  }
  // (a & M) != V  <=>  some bit b of M differs from V's: OR over b of (a & b) == (~V & b).
  for (int bit = 0; bit < 64; ++bit) {
    uint64_t b = 1ull << bit;
    if (mask & b) out.push_back({{arg, ir::CompareOp::kMaskedEq, ~v & b, b}});
  }
  return true;
}

bool Lower(Layer& layer, const ast::Condition& c, Dnf& out) {
  using Kind = ast::Condition::Kind;
  if (c.kind == Kind::kCompare || c.kind == Kind::kIn) return LowerAtom(layer, c, out);
  if (c.kind == Kind::kOr) {
    bool ok = true;
    for (const ast::Condition& child : c.children) ok = Lower(layer, child, out) && ok;
    return ok;
  }
  Dnf product{Conjunction{}};
  bool ok = true;
  for (const ast::Condition& child : c.children) {
    Dnf part;
    if (!Lower(layer, child, part)) {
      ok = false;
      continue;
    }
    Dnf next;
    for (const Conjunction& left : product) {
      for (const Conjunction& right : part) {
        if (left.size() + right.size() > kMaxConjuncts) {
          layer.Error(child.span, "more than " + std::to_string(kMaxConjuncts) + " comparisons ANDed in one rule",
                      "seccomp cannot use more than a few per argument; simplify the condition");
          return false;  // stop here: going on would be quadratic in the chain's length
        }
        if (next.size() >= kMaxDisjuncts * 4) break;
        Conjunction both = left;
        both.insert(both.end(), right.begin(), right.end());
        next.push_back(std::move(both));
      }
    }
    product = std::move(next);
  }
  out.insert(out.end(), product.begin(), product.end());
  return ok;
}

void Canonicalize(Conjunction& conjunction) {
  auto key = [](const ir::ArgCondition& a) { return std::tie(a.arg, a.op, a.value, a.mask); };
  std::sort(conjunction.begin(), conjunction.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  conjunction.erase(std::unique(conjunction.begin(), conjunction.end()), conjunction.end());
}

std::string ActionPhrase(const ir::Action& action) {
  switch (action.kind) {
    case ir::ActionKind::kAllow: return "allowed";
    case ir::ActionKind::kErrno: return "denied (errno " + ErrnoName(action.errno_value) + ")";
    case ir::ActionKind::kKillProcess: return "killed";
    case ir::ActionKind::kLog: return "logged";
    case ir::ActionKind::kNotify: return "sent to the supervisor";
    case ir::ActionKind::kTrap: return "trapped";
  }
  return "?";
}

// Names the parent denied that this statement now allows (for one warning).
struct RuleStatement {
  ir::Action action;
  Span span;
  std::vector<std::string> reallowed;
  Span word;  // the syscall or group being added: where a warning about its rule points
};

void AddRule(Layer& layer, RuleStatement& stmt, const std::string& name, const Conjunction& conditions,
             const std::string& group) {
  RuleKey key{name, conditions};
  bool from_group = !group.empty();
  auto [it, inserted] = layer.layer_rules().emplace(key, Layer::LayerRule{stmt.action, from_group, stmt.span, std::nullopt});
  if (!inserted) {
    Layer::LayerRule& first = it->second;
    if (!first.from_group && !from_group) {
      uint32_t line = layer.file().source->Locate(first.span.begin).line;
      if (first.action == stmt.action) {
        layer.Warning(stmt.word, "duplicate rule for " + Quote(name) + " (first at line " + std::to_string(line) + ")");
      } else {
        layer.Error(stmt.word, "conflicting rules: " + Quote(name) + " is " + ActionPhrase(first.action) +
                                   " at line " + std::to_string(line) + " and " + ActionPhrase(stmt.action) +
                                   " here");
      }
      return;
    }
    // A syscall named on its own beats a group; between groups the stricter wins.
    if (!first.from_group) return;
    if (from_group && Permissiveness(stmt.action) >= Permissiveness(first.action)) return;
    first = Layer::LayerRule{stmt.action, from_group, stmt.span, first.inherited};
  }
  // One lookup in the profile's merged rules, for both the check and the update.
  auto& rules = layer.state().rules;
  auto previous = rules.lower_bound(key);
  const bool existed = previous != rules.end() && !(key < previous->first);
  // Compared with the parent's action, not the merged one: after `deny @debug`
  // in this layer, `allow ptrace` still re-allows what the parent denied.
  if (inserted && existed) it->second.inherited = previous->second.rule.action;
  const std::optional<ir::Action>& inherited = it->second.inherited;
  if (inherited && Permissiveness(*inherited) <= 2 && Permissiveness(stmt.action) > 2) {
    stmt.reallowed.push_back(name);
  }
  State::RuleSite& site = layer.state().rule_sites[name];
  if (site.source == nullptr || from_group <= site.from_group) {
    site = State::RuleSite{layer.file().source, stmt.span, from_group};
  }
  RuleEntry entry{ir::SyscallRule{name, stmt.action, conditions, group}, from_group, layer.file().source,
                  from_group ? stmt.span : stmt.word, layer.profile_node()};
  // A group's rules have one origin per statement, set by AddTarget.
  if (!from_group) layer.Origin(RuleOriginKey(entry.rule), stmt.span);
  if (existed) {
    previous->second = std::move(entry);
  } else {
    rules.emplace_hint(previous, std::move(key), std::move(entry));
  }
  if (!from_group && Permissiveness(stmt.action) > 2 && PrologueSyscalls().count(name)) {
    layer.state().reopened.insert(name);
    layer.Origin("syscalls.reopen:" + name, stmt.span);
  }
}

// Joins architecture names: "x86_64", "x86_64 and x32", "x86_64, x32 and x86".
std::string ArchList(const std::vector<ir::Arch>& arches) {
  std::string out;
  for (size_t i = 0; i < arches.size(); ++i) {
    if (i > 0) out += i + 1 == arches.size() ? " and " : ", ";
    out += syscalls::ArchName(arches[i]);
  }
  return out;
}

// A syscall named on its own that some of the profile's architectures do
// not have: libseccomp knows every name of every architecture it supports
// and gives a missing one a pseudo number, so `deny mmap2` on x86_64 (mmap2
// is i386's and ARM's) compiled to no rule at all, silently. Said where it
// is, naming the architectures that lack it. (Groups name such calls on
// purpose, to cover every architecture: they are not reported.)
void WarnWhereMissing(Layer& layer, const ast::Word& target, const std::vector<ir::Arch>& arches) {
  std::vector<ir::Arch> missing, present;
  for (ir::Arch arch : arches) {
    (syscalls::KernelSyscallNumber(target.text, arch) < 0 ? missing : present).push_back(arch);
  }
  if (missing.empty()) return;
  // On x86 the multiplexers and the calls only they carry (accept, semop)
  // apply nowhere: I386MultiplexerProblem says so at the rule instead.
  const bool x86 = std::find(arches.begin(), arches.end(), ir::Arch::kX86) != arches.end();
  if (x86 && (target.text == "socketcall" || target.text == "ipc" ||
              syscalls::ResolveSyscall(target.text, ir::Arch::kX86) < -1)) {
    return;
  }
  std::string message = Quote(target.text) + " does not exist on " + ArchList(missing) + ": ";
  std::string hint;
  if (!present.empty()) {
    message += "the rule applies to it on " + ArchList(present) + " only";
  } else {
    message += "the rule does nothing for it";
    std::vector<ir::Arch> elsewhere;
    for (ir::Arch arch : {ir::Arch::kX86_64, ir::Arch::kX32, ir::Arch::kX86, ir::Arch::kAarch64}) {
      if (syscalls::KernelSyscallNumber(target.text, arch) >= 0) elsewhere.push_back(arch);
    }
    hint = elsewhere.empty() ? "no architecture Cocoon filters has it; remove the rule"
                             : "it exists on " + ArchList(elsewhere) +
                                   " (see `arch`); remove the rule, or name the syscall this architecture has";
  }
  layer.Warning(target.span, message, hint);
}

// Reports `target` if it names no group or no syscall known on `arches`:
// true then. Checked first, so that a bad errno or condition in the same
// rule does not hide a misspelt name (`deny ptrac errno EPERX`).
bool ReportUnknownTarget(Layer& layer, const ast::Word& target, const std::vector<ir::Arch>& arches) {
  if (target.kind == ast::WordKind::kGroup) {
    if (syscalls::FindGroup(target.text) != nullptr) return false;
    std::vector<std::string> names;
    for (const auto& group : syscalls::AllGroups()) names.emplace_back(group.name);
    std::string suggestion = DidYouMean(target.text, names);
    layer.Error(target.span, "unknown syscall group " + Quote(target.text),
                suggestion.empty() ? "see the group table in docs/language.md" : "did you mean '" + suggestion + "'?");
    return true;
  }
  if (syscalls::IsKnownSyscall(target.text, arches)) return false;
  // `dney ptrace` on a line of its own: a misspelt action, which the
  // grammar reads as one more syscall of the rule on the line before.
  static const std::vector<std::string> kActions{"allow", "deny", "kill", "log", "notify", "trap"};
  const std::string_view text = layer.file().source->text();
  const size_t line_start = text.rfind('\n', target.span.begin == 0 ? 0 : target.span.begin - 1);
  const size_t from = line_start == std::string_view::npos ? 0 : line_start + 1;
  const bool starts_line = text.substr(from, target.span.begin - from).find_first_not_of(" \t") ==
                           std::string_view::npos;
  const std::string action = starts_line ? DidYouMean(target.text, kActions) : std::string();
  if (!action.empty()) {
    layer.Error(target.span, "unknown syscall " + Quote(target.text),
                "did you mean '" + action + "'? A rule starts with its action; as written, this line continues "
                "the rule before it");
    return true;
  }
  std::string suggestion = DidYouMean(target.text, syscalls::KnownSyscallNames());
  layer.Error(target.span, "unknown syscall " + Quote(target.text),
              suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
  return true;
}

// `target` names a known group or syscall (ReportUnknownTarget).
void AddTarget(Layer& layer, RuleStatement& stmt, const ast::Word& target, const Dnf& dnf,
               const std::vector<ir::Arch>& arches) {
  if (target.kind == ast::WordKind::kGroup) {
    for (const std::string& name : syscalls::ExpandGroup(target.text)) {
      for (const Conjunction& c : dnf) AddRule(layer, stmt, name, c, target.text);
    }
    for (const Conjunction& c : dnf) layer.Origin(RuleOriginKey({"", stmt.action, c, target.text}), stmt.span);
    return;
  }
  WarnWhereMissing(layer, target, arches);
  const bool reopened = layer.state().reopened.count(target.text) != 0;
  for (const Conjunction& c : dnf) AddRule(layer, stmt, target.text, c, "");
  // Said where the rule is, in compile's words (compile says it with no
  // position); once, where a profile first reopens it.
  if (!reopened && layer.state().reopened.count(target.text) != 0) {
    layer.Warning(target.span, syscalls::ReopenWarning(target.text),
                  "the compiler's hardening prologue denies " + target.text +
                      " unless a rule names it; keep this rule only if the program needs it");
  }
}

ir::Action VerbAction(const std::string& verb) {
  if (verb == "allow") return {ir::ActionKind::kAllow, 0};
  if (verb == "kill") return {ir::ActionKind::kKillProcess, 0};
  if (verb == "log") return {ir::ActionKind::kLog, 0};
  if (verb == "notify") return {ir::ActionKind::kNotify, 0};
  if (verb == "trap") return {ir::ActionKind::kTrap, 0};
  return {ir::ActionKind::kErrno, 1 /* EPERM */};
}

// `arches`: the profile's architectures, which decide the known syscalls.
void ApplyRule(Layer& layer, const ast::Statement& stmt, const std::vector<ir::Arch>& arches) {
  RuleStatement rule{VerbAction(stmt.keyword.text), stmt.span, {}, stmt.span};
  std::vector<const ast::Word*> targets;
  bool ok = true;  // keep going after a problem, to report every one
  for (size_t i = 0; i < stmt.args.size(); ++i) {
    if (stmt.args[i].IsKeyword("errno") && i + 1 < stmt.args.size()) {
      if (stmt.keyword.text != "deny") {
        layer.Error(stmt.args[i].span, "errno goes with deny: `deny NAME errno ENAME`");
        ok = false;
      }
      ok = ErrnoValue(layer, stmt.args[++i], rule.action.errno_value) && ok;
    } else {
      targets.push_back(&stmt.args[i]);
    }
  }
  // The names first: a bad errno or condition must not hide a bad name.
  std::vector<const ast::Word*> known;
  for (const ast::Word* target : targets) {
    if (!ReportUnknownTarget(layer, *target, arches)) known.push_back(target);
  }
  Dnf dnf;
  if (stmt.condition) {
    if (!Lower(layer, *stmt.condition, dnf) || !ok) return;
    if (dnf.size() > kMaxDisjuncts) {
      layer.Error(stmt.condition->span, "condition expands to " + std::to_string(dnf.size()) +
                                            " rules; the limit is " + std::to_string(kMaxDisjuncts));
      return;
    }
    for (Conjunction& c : dnf) Canonicalize(c);
  } else {
    if (!ok) return;
    dnf.push_back({});
  }
  for (const ast::Word* target : known) {
    rule.word = target->span;
    AddTarget(layer, rule, *target, dnf, arches);
  }
  if (!rule.reallowed.empty()) {
    std::string names;
    for (size_t i = 0; i < rule.reallowed.size() && i < 3; ++i) names += (i ? ", " : "") + Quote(rule.reallowed[i]);
    if (rule.reallowed.size() > 3) names += " and " + std::to_string(rule.reallowed.size() - 3) + " more";
    layer.Weakens("syscalls", stmt.span, ActionText(rule.action) + " " + names + ", which it denied");
  }
}

void ApplyDefault(Layer& layer, const ast::Statement& stmt) {
  if (!layer.FirstInLayer("syscalls.default", stmt.span, "the default action")) return;
  ir::Action action = VerbAction(stmt.args[0].text);
  if (stmt.args[0].IsKeyword("errno")) {
    action = {ir::ActionKind::kErrno, 0};
    if (!ErrnoValue(layer, stmt.args[1], action.errno_value)) return;
  }
  ir::Syscalls& syscalls = layer.state().policy.syscalls;
  if (Permissiveness(action) > Permissiveness(syscalls.default_action)) {
    layer.Weakens("syscalls.default", stmt.span, "default " + ActionText(action) + " is more permissive than " +
                                                     ActionText(syscalls.default_action));
  }
  syscalls.default_action = action;
  // `default log` permits every call too (and records it): written by the
  // policy, it is as explicit as `default allow` (seccomp_backend.cc Permissive).
  syscalls.default_explicitly_allows = action.kind == ir::ActionKind::kAllow || action.kind == ir::ActionKind::kLog;
  layer.Origin("syscalls.default", stmt.span);
}

void ApplyArch(Layer& layer, const ast::Statement& stmt) {
  for (const ast::Word& word : stmt.args) {
    ir::Arch arch;
    if (!ParseArch(word.text, arch)) {
      std::string suggestion = DidYouMean(word.text, {"x86_64", "x32", "x86", "aarch64"});
      layer.Error(word.span, "unknown architecture " + Quote(word.text),
                  suggestion.empty() ? "one of x86_64, x32, x86, aarch64" : "did you mean '" + suggestion + "'?");
      continue;
    }
    if (layer.state().arches.insert(arch).second) {
      layer.Weakens("syscalls.arch", word.span, "adds the " + word.text + " syscall ABI");
      // Why: compiler/backends/seccomp/effective_rules.h I386MultiplexerNames.
      if (arch == ir::Arch::kX86) {
        layer.Note(word.span,
                   "on x86 (i386) the socketcall and ipc multiplexers fail with ENOSYS whatever the policy says: "
                   "their arguments sit behind a pointer seccomp cannot read; i386 programs must use the direct "
                   "socket and SysV IPC syscalls (Linux 4.3+)");
      }
    }
  }
  layer.Origin("syscalls.arch", stmt.span);
}

}  // namespace

std::string ActionText(const ir::Action& action) {
  switch (action.kind) {
    case ir::ActionKind::kAllow: return "allow";
    case ir::ActionKind::kErrno: return "errno " + ErrnoName(action.errno_value);
    case ir::ActionKind::kKillProcess: return "kill";
    case ir::ActionKind::kLog: return "log";
    case ir::ActionKind::kNotify: return "notify";
    case ir::ActionKind::kTrap: return "trap";
  }
  return "?";
}

std::string RuleOriginKey(const ir::SyscallRule& rule) {
  std::string key = rule.group.empty() ? "syscalls.rule:" + rule.name : "syscalls.group:" + rule.group;
  key += " " + ActionText(rule.action);
  for (const ir::ArgCondition& c : rule.conditions) {
    key += " arg" + std::to_string(c.arg) + "/" + std::to_string(static_cast<int>(c.op)) + "/" +
           std::to_string(c.value) + "/" + std::to_string(c.mask);
  }
  return key;
}

namespace {

// Every call `rule_conditions` match also matches `guard` ((arg & mask) ==
// value): some condition on the same argument pins those bits.
bool Implies(const std::vector<ir::ArgCondition>& rule_conditions, const ir::ArgCondition& guard) {
  return std::any_of(rule_conditions.begin(), rule_conditions.end(), [&](const ir::ArgCondition& c) {
    if (c.arg != guard.arg) return false;
    if (c.op == ir::CompareOp::kEq) return (c.value & guard.mask) == guard.value;
    if (c.op == ir::CompareOp::kMaskedEq) return (guard.mask & ~c.mask) == 0 && (c.value & guard.mask) == guard.value;
    return false;
  });
}

}  // namespace

// Whether a policy rule with `action` takes effect over the prologue's
// `answer` for the same call: only an action of a higher rank does (kill or
// trap over an errno), or the very same action. At the same rank the
// prologue wins (effective_rules.cc, Outranks), whatever the errno: `deny
// clone3 errno EPERM` still gets ENOSYS, though EPERM is the lower errno.
bool TakesEffectOverThePrologue(const ir::Action& action, const ir::Action& answer) {
  return action == answer || ir::ActionRank(action) > ir::ActionRank(answer);
}

namespace {

// personality(2)'s values the prologue lets a permitting rule through for
// (backends/seccomp/effective_rules.cc kPersonalitySafe, on the low 32 bits:
// the kernel reads an unsigned int).
constexpr uint64_t kSafePersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
constexpr char kSafePersonalitiesText[] =
    "PER_LINUX 0, PER_LINUX32 8, UNAME26 0x20000, both 0x20008, and the 0xffffffff query";

bool Holds(const ir::ArgCondition& c, uint64_t v) {
  switch (c.op) {
    case ir::CompareOp::kEq: return v == c.value;
    case ir::CompareOp::kNe: return v != c.value;
    case ir::CompareOp::kLt: return v < c.value;
    case ir::CompareOp::kLe: return v <= c.value;
    case ir::CompareOp::kGt: return v > c.value;
    case ir::CompareOp::kGe: return v >= c.value;
    case ir::CompareOp::kMaskedEq: return (v & c.mask) == c.value;
  }
  return false;
}

// Whether `rule` matches some personality(v) whose low 32 bits are
// `low` (kUnsafe: none of kSafePersonalities). The upper 32 bits tried are
// those next to each compared value's, 0 and all ones: the conditions
// change their verdict only there.
constexpr uint64_t kUnsafe = ~uint64_t{0};
bool MatchesPersonality(const ir::SyscallRule& rule, uint64_t low) {
  std::vector<uint64_t> highs = {0, 0xffffffff};
  std::vector<uint64_t> lows = {low};
  for (const ir::ArgCondition& c : rule.conditions) {
    const uint64_t h = c.value >> 32;
    highs.insert(highs.end(), {h, (h + 1) & 0xffffffff, (h - 1) & 0xffffffff});
    if (low == kUnsafe) {
      const uint64_t l = c.value & 0xffffffff;
      lows.insert(lows.end(), {l, (l + 1) & 0xffffffff, (l - 1) & 0xffffffff, l | 0x400000});
    }
  }
  if (low == kUnsafe) {
    lows = {lows.begin() + 1, lows.end()};
    lows.insert(lows.end(), {0x400000, 0x0040008, 0xfffffffe});
    std::erase_if(lows, [](uint64_t l) {
      return std::find(std::begin(kSafePersonalities), std::end(kSafePersonalities), l) != std::end(kSafePersonalities);
    });
  }
  for (uint64_t h : highs) {
    for (uint64_t l : lows) {
      const uint64_t v = h << 32 | l;
      if (std::all_of(rule.conditions.begin(), rule.conditions.end(),
                      [v](const ir::ArgCondition& c) { return c.arg != 0 || Holds(c, v); })) {
        return true;
      }
    }
  }
  return false;
}

bool PermitsPersonality(const ir::SyscallRule& rule) {
  return rule.name == "personality" && ir::ActionRank(rule.action) < ir::ActionRank(ir::Action{ir::ActionKind::kErrno, 1});
}

}  // namespace

std::string PersonalityNarrowingText(const ir::SyscallRule& rule) {
  if (!PermitsPersonality(rule) || rule.conditions.empty() || !MatchesPersonality(rule, kUnsafe)) return "";
  return std::string("the compiler's prologue narrows every permitting personality rule to the safe personas (") +
         kSafePersonalitiesText + "): its other values fall to the other rules and the default";
}

std::string PrologueOverrideText(const ir::SyscallRule& rule, bool netlink_refused) {
  if (PermitsPersonality(rule) && std::none_of(std::begin(kSafePersonalities), std::end(kSafePersonalities),
                                               [&rule](uint64_t v) { return MatchesPersonality(rule, v); })) {
    return std::string("the compiler's prologue lets a permitting personality rule through only for the safe "
                       "personas (") +
           kSafePersonalitiesText + "), and this rule matches none of them";
  }
  if (const ir::Action* fixed = syscalls::PrologueFixedAnswer(rule.name); fixed != nullptr) {
    if (TakesEffectOverThePrologue(rule.action, *fixed)) return "";
    return "the compiler's prologue answers every " + rule.name + " with " + ActionText(*fixed) +
           ", whatever the policy says";
  }
  if (rule.conditions.empty()) return "";
  for (const syscalls::PrologueArgGuard& guard : syscalls::PrologueArgGuards(netlink_refused)) {
    if (guard.syscall != rule.name) continue;
    if (TakesEffectOverThePrologue(rule.action, guard.action)) continue;
    const bool all = std::all_of(guard.conditions.begin(), guard.conditions.end(),
                                 [&](const ir::ArgCondition& g) { return Implies(rule.conditions, g); });
    if (!all) continue;
    return "the compiler's prologue answers every " + rule.name + " call with " + guard.what + " with " +
           ActionText(guard.action) + ", whatever the policy says";
  }
  return "";
}

std::string PrologueExceptionsText(const ir::SyscallRule& rule, bool netlink_refused) {
  if (!rule.conditions.empty()) return "";
  if (PermitsPersonality(rule)) return std::string("every value but ") + kSafePersonalitiesText;
  std::vector<std::string> whats;
  for (const syscalls::PrologueArgGuard& guard : syscalls::PrologueArgGuards(netlink_refused)) {
    if (guard.syscall != rule.name || TakesEffectOverThePrologue(rule.action, guard.action)) {
      continue;
    }
    const std::string what = guard.what + ": " + ActionText(guard.action);
    if (std::find(whats.begin(), whats.end(), what) == whats.end()) whats.push_back(what);
  }
  std::string text;
  for (const std::string& what : whats) text += (text.empty() ? "" : ", ") + what;
  return text;
}

std::optional<I386Multiplexing> I386MultiplexerProblem(const ir::SyscallRule& rule,
                                                       const std::vector<ir::Arch>& arches) {
  if (std::find(arches.begin(), arches.end(), ir::Arch::kX86) == arches.end()) return std::nullopt;
  const ir::Action enosys{ir::ActionKind::kErrno, 38 /* ENOSYS */};
  const bool multiplexer = rule.name == "socketcall" || rule.name == "ipc";
  // libseccomp's pseudo numbers (below -1) mark the calls it folds into a
  // multiplexer on i386 (syscall_groups.h ResolveSyscall).
  const bool multiplexed = !multiplexer && syscalls::ResolveSyscall(rule.name, ir::Arch::kX86) < -1;
  if (!multiplexer && !multiplexed) return std::nullopt;
  // libseccomp numbers socketcall's calls from -101, ipc's from -201.
  const std::string via = multiplexer                                                ? rule.name
                          : syscalls::ResolveSyscall(rule.name, ir::Arch::kX86) > -200 ? "socketcall"
                                                                                       : "ipc";
  const bool direct = !multiplexer && syscalls::KernelSyscallNumber(rule.name, ir::Arch::kX86) >= 0;
  const std::string refused = "under `arch x86` the compiler refuses every i386 " + via +
                              " call with errno ENOSYS, before any rule (its arguments sit behind a pointer seccomp "
                              "cannot read)";
  const std::string action = ActionText(rule.action);
  const bool stronger = ir::ActionRank(rule.action) > ir::ActionRank(enosys);  // kill, trap
  I386Multiplexing out;
  if (multiplexer || !direct) {
    if (rule.action == enosys) return std::nullopt;
    const std::string what = multiplexer ? "" : ": i386 has no direct " + rule.name + " syscall, only " + via + "'s";
    out.message = "this " + action + " rule for " + Quote(rule.name) + " cannot apply on x86" + what + "; " + refused;
  } else {
    if (rule.action.kind == ir::ActionKind::kErrno) return std::nullopt;  // refused either way
    out.message = "on x86 this " + action + " rule for " + Quote(rule.name) + " applies to the direct i386 " +
                  rule.name + " syscall only: " + refused;
  }
  if (stronger) {
    out.error = true;
    out.message += "; so the rule cannot be enforced as written (" + action + " there is errno ENOSYS)";
    out.help = "write an errno rule (`deny " + rule.name + "`) if refusing the call is enough, or remove `arch x86`";
  } else {
    out.help = multiplexer || !direct
                   ? "remove this rule: under `arch x86`, i386 programs get ENOSYS for " + rule.name +
                         " (docs/language.md, Syscalls)"
                   : "i386 programs must call " + rule.name + " directly (Linux 4.3+); through " + via +
                         " it fails with ENOSYS";
  }
  return out;
}

bool Overrides(const ir::SyscallRule& overriding, const ir::SyscallRule& rule) {
  return overriding.name == rule.name && overriding.conditions.empty() && !rule.conditions.empty() &&
         ir::ActionOutranks(overriding.action, rule.action);
}

void ApplySyscalls(Layer& layer, const ast::Statement& stmt) {
  layer.state().has_syscalls = true;
  // Where a back end that cannot filter syscalls says what it dropped.
  layer.Origin("syscalls", stmt.span);
  // Architectures first: they decide which syscall names are known.
  for (const ast::Statement& s : stmt.block) {
    if (s.keyword.IsKeyword("arch")) ApplyArch(layer, s);
  }
  for (const ast::Statement& s : stmt.block) {
    if (s.keyword.IsKeyword("default")) ApplyDefault(layer, s);
  }
  const std::vector<ir::Arch> arches(layer.state().arches.begin(), layer.state().arches.end());
  for (const ast::Statement& s : stmt.block) {
    if (!s.keyword.IsKeyword("arch") && !s.keyword.IsKeyword("default")) ApplyRule(layer, s, arches);
  }
}

}  // namespace cocoon::frontend::internal
