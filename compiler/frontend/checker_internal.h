// Shared between the checker's source files; not a public header.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/common/diagnostics.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/loader.h"
#include "compiler/frontend/units.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::frontend::internal {

struct RuleKey {
  std::string name;
  std::vector<ir::ArgCondition> conditions;  // sorted
  bool operator<(const RuleKey& other) const;
  bool operator==(const RuleKey& other) const = default;
};

struct RuleKeyHash {
  size_t operator()(const RuleKey& key) const;
};

struct RuleEntry {
  ir::SyscallRule rule;
  bool from_group = false;
  // The statement that set it, and the profile it is in: where the checker
  // reports a rule that can never apply (CheckOverriddenRules).
  SourcePtr source;
  Span span;
  const ast::Profile* profile = nullptr;
};

// The largest size a policy may give, in bytes: limits (memory, disk...), a
// tmpfs's size and the work dir's quota. Far past what a sandbox needs, so a
// slip of unit (TiB for GiB) is an error rather than no limit in effect.
inline constexpr uint64_t kMaxSizeBytes = 16ull << 40;  // 16 TiB

// The policy being built, in forms convenient for merging layers.
struct State {
  ir::Policy policy;  // scalar settings live here directly
  std::map<std::string, ir::Mount> mounts;  // by target
  std::map<std::string, ir::Copy> copies;   // by destination
  std::set<std::string> hidden;
  std::map<RuleKey, RuleEntry> rules;
  std::set<ir::Arch> arches{ir::Arch::kX86_64};
  std::set<std::string> reopened;
  std::map<std::string, std::string> env_set;
  std::set<std::string> env_pass;
  std::set<std::string> env_unset;  // kept out of an inherited environment
  bool has_syscalls = false;
  // Per syscall, the statement that last set one of its rules (a rule naming
  // it beats a group): where a back end's problem with them is reported.
  struct RuleSite {
    SourcePtr source;
    Span span;
    bool from_group = false;
  };
  std::map<std::string, RuleSite> rule_sites;
  std::map<std::string, RuleSite> hide_sites;  // per hidden path, its word
  std::map<std::string, RuleSite> mount_sites;  // per mount target, its path
  std::map<std::string, RuleSite> copy_sites;   // per copy destination, its word
  std::optional<RuleSite> work_site;            // the `work` path word in effect, if written
};

// One profile being applied on top of its parent's State.
class Layer {
 public:
  Layer(const ProfileRef& ref, const std::string& parent, State& state, Diagnostics& diagnostics)
      : ref_(ref),
        parent_(parent),
        state_(state),
        diagnostics_(diagnostics),
        inherited_env_clear_(state.policy.environment.clear),
        errors_before_(diagnostics.error_count() + diagnostics.suppressed()) {
    // Snapshotted: this profile's own `unset` of a name rewrites its origin
    // (and the set), and a later `pass` of it still undoes the ancestor's.
    for (const std::string& name : state.env_unset) {
      auto origin = state.policy.provenance.find("environment.unset:" + name);
      inherited_env_unset_.emplace(name, origin == state.policy.provenance.end() ? std::optional<ir::Origin>()
                                                                                   : std::optional(origin->second));
    }
  }

  State& state() { return state_; }
  const std::string& profile() const { return ref_.profile->name.text; }
  const std::string& parent() const { return parent_; }
  const LoadedFile& file() const { return *ref_.file; }
  const ast::Profile* profile_node() const { return ref_.profile; }
  // Whether the environment this profile inherits starts empty (`clear`) or
  // from the caller's (`inherit`), whatever this profile itself says.
  bool inherited_env_clear() const { return inherited_env_clear_; }
  // The names the inherited environment leaves out (an ancestor's `unset`),
  // with where that ancestor said it when known.
  const std::map<std::string, std::optional<ir::Origin>>& inherited_env_unset() const { return inherited_env_unset_; }

  void Error(Span span, std::string message, std::string hint = {});
  void Warning(Span span, std::string message, std::string hint = {});
  void Note(Span span, std::string message);
  // A weakening of a security-relevant `setting` relative to the parent (or,
  // with no parent, of the safe default): a warning unless `relaxes` covers it.
  void Weakens(const std::string& setting, Span span, const std::string& what);
  // `relaxes SETTING` at `span`: Weakens says nothing of that setting.
  void Relax(const std::string& setting, Span span) { relaxed_.push_back({setting, span, false}); }
  // Warns at each `relaxes` name that acknowledged no weakening (once the
  // whole profile is applied), unless the profile had errors: a statement
  // in error may be the weakening it was for.
  void WarnUnusedRelaxes();
  // Records where `key` was set (for `cocoon explain`).
  void Origin(const std::string& key, Span span);
  // False (and an error) if `key` was already set in this profile.
  bool FirstInLayer(const std::string& key, Span span, const std::string& what);
  // Records that this profile wrote `key` (keeping the first place), without
  // FirstInLayer's error for a repeat; and where it first did, if it did.
  void WroteInLayer(const std::string& key, Span span) { seen_.emplace(key, span); }
  std::optional<Span> WhereInLayer(const std::string& key) const;

  // Value helpers: each reports its own error and returns false on failure.
  bool AbsolutePath(const ast::Word& word, std::string& out);
  // False (and an error) if the path holds a control character: no path
  // a policy means has one, and `explain` would print it.
  bool NoControlCharacters(const ast::Word& path);
  // `max`: see ParseUnitValue.
  bool Unit(const ast::Word& word, UnitKind kind, uint64_t& out,
            uint64_t max = std::numeric_limits<uint64_t>::max());

  // Per-layer syscall rule bookkeeping for conflict detection.
  struct LayerRule {
    ir::Action action;
    bool from_group = false;
    Span span;
    // The parent's action for this key, if it had one: what a later statement
    // of this layer weakens (the merged rules already hold this layer's).
    std::optional<ir::Action> inherited;
  };
  // Only looked up (never walked in order): hashed, one probe per rule.
  std::unordered_map<RuleKey, LayerRule, RuleKeyHash>& layer_rules() { return layer_rules_; }
  // Mount targets set by this profile, to catch "both read-only and
  // writable" and two binds from different host paths.
  struct LayerMount {
    ir::MountKind kind;
    std::string source;  // the host path of a bind; empty for tmpfs
    Span span;
  };
  std::unordered_map<std::string, LayerMount>& layer_mounts() { return layer_mounts_; }

 private:
  const ProfileRef& ref_;
  std::string parent_;
  State& state_;
  Diagnostics& diagnostics_;
  bool inherited_env_clear_;
  size_t errors_before_;  // in diagnostics_, when this profile's layer began
  std::map<std::string, std::optional<ir::Origin>> inherited_env_unset_;
  struct Relaxed {
    std::string setting;
    Span span;
    bool used = false;
  };
  std::vector<Relaxed> relaxed_;
  // Only looked up, like layer_rules_: hashed (a 1 MiB policy sets tens of
  // thousands of keys, and ordered maps compared their long shared prefixes).
  std::unordered_map<std::string, Span> seen_;
  std::unordered_map<RuleKey, LayerRule, RuleKeyHash> layer_rules_;
  std::unordered_map<std::string, LayerMount> layer_mounts_;
};

// The sections (checker_*.cc).
void ApplyNetwork(Layer& layer, const ast::Statement& stmt);
void ApplyFilesystem(Layer& layer, const ast::Statement& stmt);
void ApplyLimits(Layer& layer, const ast::Statement& stmt);
void ApplySyscalls(Layer& layer, const ast::Statement& stmt);
void ApplyEnvironment(Layer& layer, const ast::Statement& stmt);
void ApplyRuntime(Layer& layer, const ast::Statement& stmt);

// The names `limits { }` knows, in the order the docs list them.
std::vector<std::string> LimitNames();

std::string Quote(const std::string& s);
// "read-only", "writable", "tmpfs".
std::string MountKindName(ir::MountKind kind);
// Permissiveness order for weakening checks: kill < trap < errno < notify < log < allow.
int Permissiveness(const ir::Action& action);
std::string ActionText(const ir::Action& action);
// Where a syscall rule came from, in ir::Policy::provenance: per syscall (or,
// for a group's rules, per group), action and conditions, as explain lists
// them. Keyed by the syscall alone, an inherited rule was credited to the
// child's last statement naming that syscall.
std::string RuleOriginKey(const ir::SyscallRule& rule);
// `overriding` is the unconditional rule for `rule`'s syscall, if any. True
// when it wins over `rule` (a conditional one) everywhere `rule` matches, by
// the order the compiler resolves overlapping rules in (ir::ActionOutranks):
// then `rule` never applies.
bool Overrides(const ir::SyscallRule& overriding, const ir::SyscallRule& rule);
// Why the prologue's fixed answer (syscalls::PrologueFixedAnswer, or one of
// syscalls::PrologueArgGuards for the argument values `rule` requires)
// overrides `rule`, which then never applies; empty if it does not.
// `netlink_refused`: the network is off, so AF_NETLINK sockets are refused.
std::string PrologueOverrideText(const ir::SyscallRule& rule, bool netlink_refused);
// For an unconditional `rule`, the argument values the prologue still
// answers its own way ("TIOCSTI: errno EPERM, TIOCLINUX: errno EPERM"), as
// explain shows them; empty if none.
std::string PrologueExceptionsText(const ir::SyscallRule& rule, bool netlink_refused);
// For a conditional permitting personality rule that also matches values
// outside the safe personas, what the prologue's narrowing does to it;
// empty otherwise.
std::string PersonalityNarrowingText(const ir::SyscallRule& rule);
// Under `arch x86`: a rule on the i386 socketcall/ipc multiplexers, or on a
// call libseccomp folds into one (socket, connect, accept, shmget, semop,
// ...), is not enforced as written: the multiplexers are refused with errno
// ENOSYS (backends/seccomp/effective_rules.h I386MultiplexerNames). An error
// when the rule's action is stronger than that refusal (kill, trap).
struct I386Multiplexing {
  bool error = false;
  std::string message;
  std::string help;
};
std::optional<I386Multiplexing> I386MultiplexerProblem(const ir::SyscallRule& rule,
                                                       const std::vector<ir::Arch>& arches);

}  // namespace cocoon::frontend::internal
