// The checker's driver: profile selection, `extends` resolution, profile-level
// statements, and the final canonical IR. Sections live in checker_*.cc.
#include "compiler/frontend/checker.h"

#include <algorithm>
#include <filesystem>
#include <list>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/common/digest.h"
#include "compiler/frontend/checker_internal.h"
#include "compiler/ir/work_dir_rules.h"

namespace cocoon::frontend {
namespace internal {

bool RuleKey::operator<(const RuleKey& other) const {
  if (int order = name.compare(other.name); order != 0) return order < 0;
  return std::lexicographical_compare(
      conditions.begin(), conditions.end(), other.conditions.begin(), other.conditions.end(),
      [](const ir::ArgCondition& a, const ir::ArgCondition& b) {
        return std::tie(a.arg, a.op, a.value, a.mask) < std::tie(b.arg, b.op, b.value, b.mask);
      });
}

size_t RuleKeyHash::operator()(const RuleKey& key) const {
  size_t h = std::hash<std::string>{}(key.name);
  auto mix = [&h](uint64_t v) { h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const ir::ArgCondition& c : key.conditions) {
    mix(c.arg);
    mix(static_cast<uint64_t>(c.op));
    mix(c.value);
    mix(c.mask);
  }
  return h;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string MountKindName(ir::MountKind kind) {
  switch (kind) {
    case ir::MountKind::kReadOnly: return "read-only";
    case ir::MountKind::kWritable: return "writable";
    case ir::MountKind::kTmpfs: return "tmpfs";
  }
  return "?";
}

int Permissiveness(const ir::Action& action) {
  switch (action.kind) {
    case ir::ActionKind::kKillProcess: return 0;
    case ir::ActionKind::kTrap: return 1;
    case ir::ActionKind::kErrno: return 2;
    case ir::ActionKind::kNotify: return 3;
    case ir::ActionKind::kLog: return 4;
    case ir::ActionKind::kAllow: return 5;
  }
  return 0;
}

void Layer::Error(Span span, std::string message, std::string hint) {
  diagnostics_.Error(file().source, span, std::move(message), std::move(hint));
}

void Layer::Warning(Span span, std::string message, std::string hint) {
  diagnostics_.Warning(file().source, span, std::move(message), std::move(hint));
}

void Layer::Note(Span span, std::string message) { diagnostics_.Note(file().source, span, std::move(message)); }

void Layer::Weakens(const std::string& setting, Span span, const std::string& what) {
  if (parent_.empty()) return;  // only a child can weaken what it inherited
  bool acknowledged = false;
  for (Relaxed& relaxed : relaxed_) {
    if (setting == relaxed.setting || setting.rfind(relaxed.setting + ".", 0) == 0) {
      relaxed.used = true;
      acknowledged = true;
    }
  }
  if (acknowledged) return;
  std::string category = setting.substr(0, setting.find('.'));
  Warning(span, "profile '" + profile() + "' weakens " + setting + " inherited from '" + parent_ + "': " + what,
          "if this is deliberate, say so with `relaxes " + category + "` in profile '" + profile() + "'");
}

void Layer::WarnUnusedRelaxes() {
  if (diagnostics_.error_count() + diagnostics_.suppressed() != errors_before_) return;
  for (const Relaxed& relaxed : relaxed_) {
    if (relaxed.used) continue;
    const std::string why = parent_.empty()
                                ? "profile '" + profile() + "' extends no profile, so it weakens nothing"
                                : "profile '" + profile() + "' weakens no " + relaxed.setting +
                                      " setting inherited from '" + parent_ + "'";
    Warning(relaxed.span, "`relaxes " + relaxed.setting + "` acknowledges nothing: " + why,
            "remove it: `relaxes` is for a weakening `cocoon check` would otherwise warn about, and one that "
            "marks none tells a reviewer of a loosening that is not there");
  }
}

void Layer::Origin(const std::string& key, Span span) {
  state_.policy.provenance[key] = ir::Origin{profile(), file().source->name(), file().source->Locate(span.begin).line};
}

bool Layer::FirstInLayer(const std::string& key, Span span, const std::string& what) {
  auto [it, inserted] = seen_.emplace(key, span);
  if (inserted) return true;
  Error(span, what + " is set twice in profile '" + profile() + "' (first at line " +
                  std::to_string(file().source->Locate(it->second.begin).line) + ")");
  return false;
}

std::optional<Span> Layer::WhereInLayer(const std::string& key) const {
  auto it = seen_.find(key);
  if (it == seen_.end()) return std::nullopt;
  return it->second;
}

namespace {

// "/" or "/a/b" with no empty, "." or ".." component: what lexically_normal()
// would return unchanged.
bool IsPlainAbsolute(std::string_view path) {
  if (path == "/") return true;
  if (path.empty() || path.front() != '/') return false;
  size_t begin = 1;
  while (begin <= path.size()) {
    size_t end = std::min(path.find('/', begin), path.size());
    std::string_view component = path.substr(begin, end - begin);
    if (component.empty() || component == "." || component == "..") return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace

bool Layer::NoControlCharacters(const ast::Word& path) {
  for (char c : path.text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      Error(path.span, "control character in path");
      return false;
    }
  }
  return true;
}

bool Layer::AbsolutePath(const ast::Word& word, std::string& out) {
  const std::string& path = word.text;
  if (path.empty()) {
    Error(word.span, "empty path");
    return false;
  }
  if (!NoControlCharacters(word)) return false;
  if (path.front() != '/') {
    std::string hint = path[0] == '.' || path[0] == '~' ? "" : "write '/" + path + "'";
    Error(word.span, "relative path " + Quote(path) + " where an absolute path is needed", hint);
    return false;
  }
  if (IsPlainAbsolute(path)) {  // the common case, without path's per-component allocations
    out = path;
    return true;
  }
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  if (normal != path) {
    Error(word.span, "non-canonical path " + Quote(path) + "; write " + Quote(normal));
    return false;
  }
  out = path;
  return true;
}

bool Layer::Unit(const ast::Word& word, UnitKind kind, uint64_t& out, uint64_t max) {
  const std::vector<Span>& reported = file().ast.reported;
  if (std::find(reported.begin(), reported.end(), word.span) != reported.end()) return false;  // said by the parser
  UnitValue v = ParseUnitValue(word.text, kind, max);
  if (!v.ok) {
    Error(word.span, v.error, v.hint);
    return false;
  }
  out = v.value;
  return true;
}

// The State a profile's chain leaves once applied down to it, and what
// applying it reported, for the ancestors used last (CheckSession). A few
// suffice: a file's profiles extend a handful of bases, and its siblings
// are checked one after another; each entry is a copy of a whole policy.
class AppliedAncestors {
 public:
  struct Applied {
    State state;
    std::vector<Diagnostic> reported;
  };

  // nullptr when `profile` is not kept.
  const Applied* Find(const ast::Profile* profile) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != profile) continue;
      entries_.splice(entries_.begin(), entries_, it);  // the most recently used first
      return &entries_.front().second;
    }
    return nullptr;
  }

  void Keep(const ast::Profile* profile, const State& state, const std::vector<Diagnostic>& reported) {
    entries_.emplace_front(profile, Applied{state, reported});
    if (entries_.size() > kCapacity) entries_.pop_back();
  }

 private:
  static constexpr size_t kCapacity = 16;
  std::list<std::pair<const ast::Profile*, Applied>> entries_;
};

}  // namespace internal

namespace {

using internal::Layer;
using internal::Quote;
using internal::State;

const std::vector<std::string>& ProfileKeys() {
  static const auto* keys = new std::vector<std::string>{
      "description", "network", "filesystem", "limits", "syscalls", "environment",
      "cwd", "hostname", "user", "runtime", "relaxes"};
  return *keys;
}

// A statement of a `syscalls` block that starts with a name, not a verb
// (`alow read`): the grammar reads it as an unknown statement so that the
// rest of the block still parses. Reported here, and left out of the rules.
void ApplySyscallsBlock(Layer& layer, const ast::Statement& stmt) {
  static const std::vector<std::string> kWords{"default", "allow", "deny", "kill", "log", "notify", "trap", "arch"};
  auto unknown = [](const ast::Statement& s) { return s.keyword.kind == ast::WordKind::kIdent; };
  if (std::none_of(stmt.block.begin(), stmt.block.end(), unknown)) return internal::ApplySyscalls(layer, stmt);
  ast::Statement known = stmt;
  known.block.clear();
  for (const ast::Statement& s : stmt.block) {
    if (!unknown(s)) {
      known.block.push_back(s);
      continue;
    }
    const std::string suggestion = DidYouMean(s.keyword.text, kWords);
    layer.Error(s.keyword.span, "unknown syscalls statement " + Quote(s.keyword.text),
                suggestion.empty() ? "a rule starts with allow, deny, kill, log, notify or trap; also default, arch"
                                   : "did you mean '" + suggestion + "'?");
  }
  internal::ApplySyscalls(layer, known);
}

const std::vector<std::string>& RelaxableSettings() {
  static const auto* keys = new std::vector<std::string>{
      "network", "filesystem", "devices", "limits", "syscalls", "environment", "user"};
  return *keys;
}

// The narrower dotted names `relaxes` accepts: each setting Layer::Weakens
// reports below a category. A misspelt one would acknowledge nothing, and
// the weakening it meant to explain would go unmarked.
const std::vector<std::string>& RelaxableDottedSettings() {
  static const auto* names = [] {
    auto* list = new std::vector<std::string>{"filesystem.work", "devices.gpu", "devices.tty", "devices.kvm",
                                              "syscalls.default", "syscalls.arch"};
    for (const std::string& limit : internal::LimitNames()) list->push_back("limits." + limit);
    return list;
  }();
  return *names;
}

// Checks a dotted `relaxes` name whose category is known; false (and an
// error) when the category has no such narrower setting.
bool KnownDottedSetting(Layer& layer, const ast::Word& word, const std::string& category) {
  const auto& dotted = RelaxableDottedSettings();
  if (std::find(dotted.begin(), dotted.end(), word.text) != dotted.end()) return true;
  std::vector<std::string> same_category;
  for (const std::string& name : dotted) {
    if (name.starts_with(category + ".")) same_category.push_back(name);
  }
  std::string hint;
  if (same_category.empty()) {
    hint = category + " has no narrower settings; write `relaxes " + category + "`";
  } else if (std::string suggestion = DidYouMean(word.text, same_category); !suggestion.empty()) {
    hint = "did you mean '" + suggestion + "'?";
  } else {
    hint = "one of: " + category;
    for (const std::string& name : same_category) hint += ", " + name;
  }
  layer.Error(word.span, "unknown setting " + Quote(word.text) + " in relaxes", hint);
  return false;
}

void ApplyRelaxes(Layer& layer, const ast::Statement& stmt) {
  for (const ast::Word& word : stmt.args) {
    std::string category = word.text.substr(0, word.text.find('.'));
    const auto& known = RelaxableSettings();
    if (std::find(known.begin(), known.end(), category) == known.end()) {
      std::string suggestion = DidYouMean(category, known);
      layer.Error(word.span, "unknown setting " + Quote(word.text) + " in relaxes",
                  suggestion.empty() ? "one of: network, filesystem, devices, limits, syscalls, environment, user"
                                     : "did you mean '" + suggestion + "'?");
      continue;
    }
    if (category != word.text && !KnownDottedSetting(layer, word, category)) continue;
    layer.Relax(word.text, word.span);
  }
}

void ApplyHostname(Layer& layer, const ast::Statement& stmt) {
  const ast::Word& word = stmt.args[0];
  // hostname(7): labels of letters, digits and '-', at most 64 bytes in all.
  bool valid = !word.text.empty() && word.text.size() <= 64 && word.text.front() != '-';
  for (char c : word.text) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.');
  if (!valid) {
    layer.Error(word.span, "invalid hostname " + Quote(word.text),
                "use letters, digits, '-' and '.', at most 64 characters");
    return;
  }
  layer.state().policy.hostname = word.text;
  layer.Origin("hostname", stmt.span);
}

void ApplyUser(Layer& layer, const ast::Statement& stmt) {
  const ast::Word& word = stmt.args[0];
  std::string uid_text = word.text.substr(0, word.text.find(':'));
  std::string gid_text = word.text.find(':') == std::string::npos ? uid_text : word.text.substr(word.text.find(':') + 1);
  uint64_t uid = 0, gid = 0;
  if (!ParseInteger(uid_text, uid) || !ParseInteger(gid_text, gid) || uid > 65534 || gid > 65534) {
    layer.Error(word.span, "invalid user " + Quote(word.text) + "; expected uid:gid, each 0..65534");
    return;
  }
  ir::SandboxUser& user = layer.state().policy.user;
  if (uid == 0 && user.uid != 0) layer.Weakens("user", word.span, "the command runs as uid 0 in its namespace");
  user.uid = static_cast<uint32_t>(uid);
  user.gid = static_cast<uint32_t>(gid);
  layer.Origin("user", stmt.span);
}

void ApplyStatement(Layer& layer, const ast::Statement& stmt) {
  const std::string& key = stmt.keyword.text;
  ir::Policy& policy = layer.state().policy;
  if (key == "description") {
    if (!layer.FirstInLayer(key, stmt.span, "description")) return;
    policy.description = stmt.args[0].text;
    layer.Origin(key, stmt.span);
  } else if (key == "network") {
    if (layer.FirstInLayer(key, stmt.span, "network")) internal::ApplyNetwork(layer, stmt);
  } else if (key == "filesystem") {
    for (const ast::Statement& s : stmt.block) internal::ApplyFilesystem(layer, s);
  } else if (key == "limits") {
    for (const ast::Statement& s : stmt.block) internal::ApplyLimits(layer, s);
  } else if (key == "syscalls") {
    ApplySyscallsBlock(layer, stmt);
  } else if (key == "environment") {
    for (const ast::Statement& s : stmt.block) internal::ApplyEnvironment(layer, s);
  } else if (key == "cwd") {
    std::string path;
    if (layer.FirstInLayer(key, stmt.span, "cwd") && layer.AbsolutePath(stmt.args[0], path)) {
      policy.cwd = path;
      layer.Origin(key, stmt.span);
    }
  } else if (key == "hostname") {
    if (layer.FirstInLayer(key, stmt.span, "hostname")) ApplyHostname(layer, stmt);
  } else if (key == "user") {
    if (layer.FirstInLayer(key, stmt.span, "user")) ApplyUser(layer, stmt);
  } else if (key == "runtime") {
    if (layer.FirstInLayer(key, stmt.span, "runtime")) internal::ApplyRuntime(layer, stmt);
  } else if (key == "relaxes") {
    // handled before the other statements
  } else {
    std::string suggestion = DidYouMean(key, ProfileKeys());
    layer.Error(stmt.keyword.span, "unknown setting " + Quote(key),
                suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
  }
}

// Applies one profile of a chain (`parent`: the profile above it, empty for
// the root-most one) on top of what the profiles above it made of `state`.
void ApplyLayer(const ProfileRef& ref, const std::string& parent, State& state, Diagnostics& diagnostics) {
  Layer layer(ref, parent, state, diagnostics);
  for (const ast::Statement& stmt : ref.profile->body) {
    if (stmt.keyword.text == "relaxes") ApplyRelaxes(layer, stmt);
  }
  for (const ast::Statement& stmt : ref.profile->body) ApplyStatement(layer, stmt);
  layer.WarnUnusedRelaxes();
  state.policy.lineage.insert(state.policy.lineage.begin(), ref.profile->name.text);
}

// Applies `chain` (a profile, then its ancestors up to the root-most one)
// from the top down. With `ancestors`, it starts from the nearest ancestor
// kept there, replaying what applying it reported, and keeps each ancestor
// it applies itself.
State ApplyChain(const std::vector<ProfileRef>& chain, internal::AppliedAncestors* ancestors,
                 Diagnostics& diagnostics) {
  State state;
  std::string parent;
  size_t next = chain.size();  // chain[next - 1] is the next profile to apply
  std::vector<Diagnostic> reported;  // what the profiles applied so far reported
  for (size_t i = 1; ancestors != nullptr && i < chain.size(); ++i) {
    const internal::AppliedAncestors::Applied* applied = ancestors->Find(chain[i].profile);
    if (applied == nullptr) continue;
    state = applied->state;
    reported = applied->reported;
    for (const Diagnostic& d : reported) diagnostics.Add(d);
    parent = chain[i].profile->name.text;
    next = i;
    break;
  }
  while (next-- > 0) {
    const size_t items_before = diagnostics.all().size();
    const size_t suppressed_before = diagnostics.suppressed();
    ApplyLayer(chain[next], parent, state, diagnostics);
    parent = chain[next].profile->name.text;
    if (ancestors == nullptr || next == 0) continue;
    // A capped Diagnostics dropped some of what this profile reported: it
    // could not be replayed whole, so nothing from here down is kept.
    if (diagnostics.suppressed() != suppressed_before) {
      ancestors = nullptr;
      continue;
    }
    reported.insert(reported.end(), diagnostics.all().begin() + static_cast<std::ptrdiff_t>(items_before),
                    diagnostics.all().end());
    ancestors->Keep(chain[next].profile, state, reported);
  }
  return state;
}

std::optional<ir::Policy> CheckChain(const ProfileRef& ref, LineageResolver& lineages,
                                     internal::AppliedAncestors* ancestors,
                                     std::vector<CheckSession::MissingSyscalls>* missing_syscalls,
                                     const Program& program, Diagnostics& diagnostics,
                                     const SyscallRuleCheck& rule_check);

// Under each diagnostic from all()[first] on that lies in an ancestor
// defined in another file than the profile checked (chain[0]), such as a
// shipped policy or one imported with -I: a note at each `extends` from
// that ancestor down to chain[0], which says why that file's profile was
// checked at all. chain[i] extends chain[i + 1].
void AddExtendsNotes(const std::vector<ProfileRef>& chain, Diagnostics& diagnostics, size_t first) {
  const Source* checked = chain.front().file->source.get();
  for (size_t i = first; i < diagnostics.all().size(); ++i) {
    const Diagnostic& d = diagnostics.all()[i];
    if (d.severity == Severity::kNote || d.source == nullptr || d.source.get() == checked) continue;
    size_t holder = 0;
    for (size_t k = 1; k < chain.size() && holder == 0; ++k) {
      const Span body = chain[k].profile->span;
      if (chain[k].file->source == d.source && d.span.begin >= body.begin && d.span.begin < body.end) holder = k;
    }
    for (size_t k = holder; k > 0; --k) {
      const ProfileRef& child = chain[k - 1];
      diagnostics.AttachNote(i, child.file->source, child.profile->parent.span,
                             "in profile " + Quote(chain[k].profile->name.text) + " (" + chain[k].file->source->name() +
                                 "), which profile " + Quote(child.profile->name.text) + " extends here");
    }
  }
}

// True when another rule of `rules` names `it`'s syscall (the map orders by
// name first, so such rules are its neighbours).
bool SharesSyscallWithNeighbour(const std::map<internal::RuleKey, internal::RuleEntry>& rules,
                                std::map<internal::RuleKey, internal::RuleEntry>::const_iterator it) {
  const std::string& name = it->first.name;
  if (it != rules.begin() && std::prev(it)->first.name == name) return true;
  const auto next = std::next(it);
  return next != rules.end() && next->first.name == name;
}

// `hide` masks what a bind shows of the host (or of /proc). The work dir is
// the caller's own files, staged (or bound, in direct mode) at launch: a mask
// there would not reach the staged copy (nor its other names), so a hidden
// path inside it is an error rather than a promise the enforcer cannot keep.
void CheckHiddenOutsideWorkDir(const State& state, Diagnostics& diagnostics) {
  const std::string& work = state.policy.filesystem.work.path;
  if (work.empty()) return;
  auto strictly_under = [](const std::string& path, const std::string& dir) {
    return path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0;
  };
  for (const auto& [hidden, site] : state.hide_sites) {
    const std::string& path = hidden;  // clang 14 cannot capture a structured binding
    if (strictly_under(work, path) || (state.policy.cwd != work && (strictly_under(state.policy.cwd, path)))) {
      // The empty directory the mask puts there would cover the work dir (or
      // the directory the command starts in), and the launch would fail.
      const bool holds_work = strictly_under(work, path);
      diagnostics.Error(site.source, site.span,
                        "cannot hide " + Quote(path) + ": it holds the " +
                            (holds_work ? "work dir " + Quote(work) : "working directory " + Quote(state.policy.cwd)) +
                            ", which the sandbox needs; the empty directory put there would cover it",
                        "hide the entries beside it one by one, or move the " +
                            std::string(holds_work ? "work dir with `work PATH`" : "working directory with `cwd PATH`"));
      continue;
    }
    if (path != work && !strictly_under(path, work)) continue;
    // Inside a bind nested in the work dir, it is that bind's host path that
    // is hidden, as anywhere else.
    const bool in_nested_bind = std::any_of(state.mounts.begin(), state.mounts.end(), [&](const auto& entry) {
      const ir::Mount& mount = entry.second;
      return (mount.kind == ir::MountKind::kReadOnly || mount.kind == ir::MountKind::kWritable) &&
             strictly_under(mount.target, work) && strictly_under(path, mount.target);
    });
    if (in_nested_bind) continue;
    diagnostics.Error(site.source, site.span,
                      "cannot hide " + Quote(path) + ": it is inside the work dir " + Quote(work) +
                          ", which holds the caller's own files (staged at launch), not a host bind",
                      "keep that file out of the host work dir, or hide it where it is bound from");
  }
}

// /proc/self and /proc/thread-self name whichever process looks: the mask
// is made during setup, where they lead to the setup process's own entry,
// not to the sandboxed program's. A /proc/PID entry is whichever process
// has that PID in the sandbox's new PID namespace, unknown when the policy
// is written. Neither is a promise the enforcer can keep: an error.
void CheckHiddenProcPaths(const State& state, Diagnostics& diagnostics) {
  for (const auto& [hidden, site] : state.hide_sites) {
    if (hidden.rfind("/proc/", 0) != 0) continue;
    const size_t end = hidden.find('/', 6);
    const std::string entry = hidden.substr(6, end == std::string::npos ? std::string::npos : end - 6);
    const bool per_process = entry == "self" || entry == "thread-self" ||
                             (!entry.empty() && std::all_of(entry.begin(), entry.end(), [](char c) {
                               return c >= '0' && c <= '9';
                             }));
    if (!per_process) continue;
    const bool names_the_looker = entry == "self" || entry == "thread-self";
    diagnostics.Error(site.source, site.span,
                      "cannot hide " + Quote(hidden) + ": " +
                          (names_the_looker
                               ? "/proc/" + entry + " names whichever process looks, and the mask is made at setup, "
                                 "where that is Cocoon's setup process, not the program: it would hide nothing the "
                                 "program reads"
                               : "/proc/" + entry + " is the entry of whichever process has that PID in the "
                                 "sandbox's new PID namespace, which is not known when the policy is written: the "
                                 "mask would promise nothing about the program's own entry"),
                      "hide a /proc path that is the same for every process (such as /proc/kcore), or keep the "
                      "secret out of the sandbox's environment and command line");
  }
}

// The work dir is mounted at launch; a bind or tmpfs on the same target
// would be mounted over it (plan_builder.cc refuses it too). The two may come
// from different layers, so this is checked once the profile is complete.
void CheckMountsBesideWorkDir(const State& state, Diagnostics& diagnostics) {
  const std::string& work = state.policy.filesystem.work.path;
  auto site = state.mount_sites.find(work);
  if (work.empty() || site == state.mount_sites.end() || !state.mounts.count(work)) return;
  diagnostics.Error(site->second.source, site->second.span,
                    "cannot mount on " + Quote(work) + ": it is the work dir",
                    "mount somewhere else, or move the work dir with `work PATH`");
}

// The enforcer mounts the work dir on the sandbox's own tree only, never
// inside a bound host directory (`work /usr/local/bin` under `readonly
// /usr`): the same rule and words (ir/work_dir_rules.h), at the work line.
void CheckWorkDirOutsideBinds(const State& state, const ast::Profile* checked, const LoadedFile& file,
                              Diagnostics& diagnostics) {
  const std::string& work = state.policy.filesystem.work.path;
  const std::string* holder = ir::InnermostMountHolding(
      work, state.mounts, [](const auto& entry) -> const std::string& { return entry.first; });
  if (work.empty() || holder == nullptr) return;
  const ir::Mount& mount = state.mounts.at(*holder);
  if (mount.kind == ir::MountKind::kTmpfs) return;
  auto mount_site = state.mount_sites.find(*holder);
  const State::RuleSite* site = state.work_site ? &*state.work_site
                                : mount_site != state.mount_sites.end() ? &mount_site->second
                                                                        : nullptr;
  diagnostics.Error(site && site->source ? site->source : file.source, site ? site->span : checked->name.span,
                    ir::WorkDirInsideBindReason(work, mount.source),
                    "move the work dir with `work PATH` to a path no bind holds (such as /work), or leave " +
                        Quote(*holder) + " out of the binds");
}

// A read-only bind below a writable mount (a tmpfs, a writable bind, the
// work dir) is read-only for files only. Landlock's rights follow the path
// across mount points, so the writable mount's rule reaches into the bind,
// and the read-only mount flag stops writes to files but not an open of a
// FIFO for writing nor a connect to a unix socket: a host process reading
// a FIFO (or listening on a socket) there can be fed, or drained, by the
// sandbox. The same bind where no writable mount is above it is refused by
// Landlock. The two may come from different layers.
void CheckReadOnlyUnderWritable(const State& state, Diagnostics& diagnostics) {
  auto under = [](const std::string& path, const std::string& dir) {
    return dir == "/" ? path != "/" : path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0;
  };
  std::vector<std::pair<std::string, std::string>> writable;  // target, what it is
  for (const auto& [target, mount] : state.mounts) {
    if (mount.kind == ir::MountKind::kTmpfs) writable.emplace_back(target, "tmpfs");
    if (mount.kind == ir::MountKind::kWritable) writable.emplace_back(target, "writable bind");
  }
  if (const std::string& work = state.policy.filesystem.work.path; !work.empty()) writable.emplace_back(work, "work dir");
  for (const auto& [target, mount] : state.mounts) {
    if (mount.kind != ir::MountKind::kReadOnly) continue;
    auto site = state.mount_sites.find(target);
    if (site == state.mount_sites.end() || site->second.source == nullptr) continue;
    for (const auto& [above, what] : writable) {
      if (!under(target, above)) continue;
      diagnostics.Warning(site->second.source, site->second.span,
                          "read-only " + Quote(target) + " is inside the " + what + " " + Quote(above) +
                              ", whose write access reaches into it (Landlock rights follow paths across mounts): "
                              "its files cannot be changed, but a FIFO in it can be opened for writing, so a host "
                              "process reading one there can be fed by the sandbox",
                          "bind it at a target no writable mount is above, or keep FIFOs that host processes use "
                          "out of it (docs/security.md, Limitations)");
      break;
    }
  }
}

// A `copy` is staged into the work dir before the mounts are made: a bind
// or tmpfs at or above its destination covers it (the sandbox never sees
// it, and only an empty mount point is left on the host), and one below it
// covers part of a copied directory. The two may come from different layers.
void CheckCopiesUnderMounts(const State& state, Diagnostics& diagnostics) {
  const std::string& work = state.policy.filesystem.work.path;
  if (work.empty()) return;
  auto at_or_under = [](const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0);
  };
  for (const auto& [destination, site] : state.copy_sites) {
    if (!state.copies.count(destination)) continue;
    const std::string inside = (work == "/" ? "" : work) + "/" + destination;
    for (const auto& [target, mount] : state.mounts) {
      const bool covers = at_or_under(inside, target);
      if (!covers && !at_or_under(target, inside)) continue;
      auto mount_site = state.mount_sites.find(target);
      std::string where;
      if (mount_site != state.mount_sites.end() && mount_site->second.source != nullptr) {
        const auto& m = mount_site->second;
        where = " (" + m.source->name() + ":" + std::to_string(m.source->Locate(m.span.begin).line) + ")";
      }
      const std::string the_mount = "the " + internal::MountKindName(mount.kind) + " mount of " + Quote(target) + where;
      diagnostics.Error(site.source, site.span,
                        "copy to " + Quote(destination) + " lands at " + Quote(inside) + ", " +
                            (covers ? "under " + the_mount + ": the mount hides the copy from the sandbox"
                                    : "which holds " + the_mount + ": the mount hides that part of the copy from "
                                      "the sandbox") +
                            ", and what it hides is lost",
                        "copy to a path in the work dir that no mount covers, or mount on another target");
      break;
    }
  }
}

// A conditional rule of the profile checked that an unconditional rule for
// the same syscall (of this profile or an ancestor) outranks: the compiler
// gives every call it matches the other rule's action (effective_rules.h),
// so it never applies, though it reads as if it did (`allow kcmp if arg2 ==
// 1` under `deny @debug`). Only rules naming their syscall: a group's rules
// give way to a rule naming one of its syscalls on purpose.
void CheckOverriddenRules(const State& state, const ast::Profile* checked, Diagnostics& diagnostics) {
  using internal::ActionText;
  using internal::RuleEntry;
  // A group's kill or trap under `arch x86`: the members i386 reaches
  // through socketcall or ipc get the compiler's ENOSYS instead
  // (I386MultiplexerProblem, which reports a rule naming one such call as
  // an error). Said once per group statement, naming those members.
  std::map<std::pair<const void*, size_t>, std::pair<const RuleEntry*, std::vector<std::string>>> group_members;
  const std::vector<ir::Arch> rule_arches(state.arches.begin(), state.arches.end());
  for (const auto& [key, entry] : state.rules) {
    if (entry.profile != checked || !entry.from_group || entry.source == nullptr || !key.conditions.empty()) continue;
    std::optional<internal::I386Multiplexing> m = internal::I386MultiplexerProblem(entry.rule, rule_arches);
    if (!m || !m->error) continue;
    auto& [first, members] = group_members[{entry.source.get(), entry.span.begin}];
    if (first == nullptr) first = &entry;
    members.push_back(key.name);
  }
  for (const auto& [where, found] : group_members) {
    const auto& [entry, members] = found;
    std::string names;
    for (size_t i = 0; i < members.size() && i < 8; ++i) names += (i == 0 ? "" : ", ") + members[i];
    if (members.size() > 8) names += " and " + std::to_string(members.size() - 8) + " more";
    diagnostics.Warning(entry->source, entry->span,
                        "on x86 this " + ActionText(entry->rule.action) + " rule for " + entry->rule.group +
                            " does not " + ActionText(entry->rule.action) + " " + names +
                            " when i386 programs reach them through socketcall or ipc: the compiler refuses every "
                            "i386 socketcall and ipc call with errno ENOSYS, before any rule",
                        "the calls are refused either way; name a call on its own for the rule to be checked, or "
                        "remove `arch x86` (docs/language.md, Syscalls)");
  }
  for (const auto& [key, entry] : state.rules) {
    if (entry.profile != checked || entry.from_group || entry.source == nullptr) continue;
    const bool netlink_refused = state.policy.network.mode == ir::NetworkMode::kOff;
    if (const std::string why = internal::PrologueOverrideText(entry.rule, netlink_refused); !why.empty()) {
      diagnostics.Warning(entry.source, entry.span,
                          "this " + ActionText(entry.rule.action) + " rule for " + Quote(key.name) +
                              " never applies: " + why,
                          key.name == "clone3"
                              ? "remove this rule: no policy rule reopens " + Quote(key.name) +
                                    " (seccomp cannot read its flags, which are behind a pointer; glibc falls back "
                                    "to clone, whose flags rules can test)"
                              : "remove this rule: no policy rule reopens these calls (docs/language.md, Prologue)");
      continue;
    }
    const std::vector<ir::Arch> arches(state.arches.begin(), state.arches.end());
    if (std::optional<internal::I386Multiplexing> m = internal::I386MultiplexerProblem(entry.rule, arches)) {
      if (m->error) {
        diagnostics.Error(entry.source, entry.span, m->message, m->help);
      } else {
        diagnostics.Warning(entry.source, entry.span, m->message, m->help);
      }
      continue;
    }
    if (const std::string why = internal::PersonalityNarrowingText(entry.rule); !why.empty()) {
      diagnostics.Warning(entry.source, entry.span,
                          "this " + ActionText(entry.rule.action) + " rule for 'personality' applies in part: " + why,
                          "narrow the condition to the values it can allow, or use an errno rule for the others "
                          "(docs/language.md, Prologue)");
    }
    if (key.conditions.empty()) continue;
    auto covering = state.rules.find(internal::RuleKey{key.name, {}});
    if (covering == state.rules.end() || !internal::Overrides(covering->second.rule, entry.rule)) continue;
    const RuleEntry& by = covering->second;
    std::string where;
    if (by.source != nullptr) where = " at " + by.source->name() + ":" + std::to_string(by.source->Locate(by.span.begin).line);
    const std::string from = by.rule.group.empty() ? "" : " (from " + by.rule.group + ")";
    diagnostics.Warning(entry.source, entry.span,
                        "this " + ActionText(entry.rule.action) + " rule for " + Quote(key.name) +
                            " never applies: the unconditional " + ActionText(by.rule.action) + " rule for " +
                            Quote(key.name) + from + where +
                            " is more restrictive, and the more restrictive rule wins wherever both match",
                        "remove this rule; or, to give these calls its action, narrow the covering rule so that "
                        "it leaves them out (a condition of its own, or a rule that does not name " +
                            Quote(key.name) + ")");
  }
}

ir::Policy Finalize(State& state, const Program& program) {
  ir::Policy policy = std::move(state.policy);
  policy.filesystem.mounts.clear();
  for (auto& [target, mount] : state.mounts) policy.filesystem.mounts.push_back(mount);
  policy.filesystem.copies.clear();
  for (auto& [destination, copy] : state.copies) policy.filesystem.copies.push_back(copy);
  policy.filesystem.hidden.assign(state.hidden.begin(), state.hidden.end());
  policy.syscalls.rules.clear();
  for (auto it = state.rules.begin(); it != state.rules.end(); ++it) {
    ir::SyscallRule& rule = it->second.rule;
    // An unconditional rule that repeats the default action changes nothing,
    // unless other rules name the same syscall: "the more restrictive action
    // wins" (effective_rules.h), so `deny ptrace` under `default errno EPERM`
    // still outranks `allow ptrace if arg0 == 0`. The back ends drop the
    // default-action pieces once the rule algebra has carved the others.
    if (rule.conditions.empty() && rule.action == policy.syscalls.default_action &&
        !SharesSyscallWithNeighbour(state.rules, it)) {
      continue;
    }
    policy.syscalls.rules.push_back(std::move(rule));
  }
  policy.syscalls.architectures.assign(state.arches.begin(), state.arches.end());
  policy.syscalls.reopened.assign(state.reopened.begin(), state.reopened.end());
  policy.environment.set.clear();
  for (auto& [name, value] : state.env_set) policy.environment.set.push_back({name, value});
  policy.environment.pass.assign(state.env_pass.begin(), state.env_pass.end());
  policy.environment.unset.assign(state.env_unset.begin(), state.env_unset.end());
  std::string all;
  for (const auto& file : program.files) {
    policy.source_files.push_back(file->source->name());
    policy.source_digests.push_back({file->path, file->sha256});
    all += file->sha256;
  }
  // A directive that found its file through a symlink: the same digest
  // under the path it found, which the cache re-hashes (following the link).
  for (const Program::Alias& alias : program.aliases) {
    for (const auto& file : program.files) {
      if (file->path == alias.canonical) policy.source_digests.push_back({alias.found, file->sha256});
    }
  }
  policy.source_sha256 = Sha256Hex(all);
  policy.shadowing_paths = program.shadowing_paths;
  return policy;
}

}  // namespace

std::optional<std::string> SelectProfile(const Program& program, const std::string& requested,
                                         Diagnostics& diagnostics) {
  const LoadedFile* root = program.root();
  if (root == nullptr) return std::nullopt;
  if (!requested.empty()) return requested;
  const auto& profiles = root->ast.profiles;
  if (profiles.size() == 1) return profiles[0].name.text;
  std::string stem = std::filesystem::path(root->source->name()).stem().string();
  std::string names;
  for (const ast::Profile& p : profiles) {
    if (p.name.text == stem) return stem;
    names += (names.empty() ? "" : ", ") + p.name.text;
  }
  diagnostics.Error(root->source, Span{},
                    profiles.empty() ? "no profile in " + root->source->name()
                                     : "which profile? " + root->source->name() + " defines " + names,
                    profiles.empty() ? "" : "choose one with --profile NAME");
  return std::nullopt;
}

std::optional<ir::Policy> CheckProfile(const Program& program, const std::string& profile,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check) {
  auto it = program.profiles.find(profile);
  if (it == program.profiles.end()) {
    std::vector<std::string> names;
    for (const auto& [n, ref] : program.profiles) names.push_back(n);
    std::string suggestion = DidYouMean(profile, names);
    diagnostics.Error(nullptr, Span{}, "no profile named " + Quote(profile),
                      suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
    return std::nullopt;
  }
  return CheckProfile(program, it->second, diagnostics, rule_check);
}

CheckSession::CheckSession(const Program& program)
    : lineages_(program), ancestors_(std::make_unique<internal::AppliedAncestors>()) {}

CheckSession::~CheckSession() = default;

std::optional<ir::Policy> CheckProfile(const Program& program, const ProfileRef& ref, Diagnostics& diagnostics,
                                       const SyscallRuleCheck& rule_check) {
  LineageResolver lineages(program);
  return CheckChain(ref, lineages, nullptr, nullptr, program, diagnostics, rule_check);
}

std::optional<ir::Policy> CheckProfile(const Program& program, const ProfileRef& ref, CheckSession& session,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check) {
  return CheckChain(ref, session.lineages(), &session.ancestors(), &session.missing_syscalls(), program,
                    diagnostics, rule_check);
}

namespace {

const char kNoSyscallsHint[] = "start from a shipped profile: import \"strict\" and write `extends strict`";

// "'a', 'b', 'c' and 4 more"
std::string FirstNames(const std::vector<ProfileRef>& profiles) {
  constexpr size_t kShown = 3;
  std::string names;
  for (size_t i = 0; i < profiles.size() && i < kShown; ++i) {
    if (i > 0) names += i + 1 == profiles.size() ? " and " : ", ";
    names += Quote(profiles[i].profile->name.text);
  }
  if (profiles.size() > kShown) names += " and " + std::to_string(profiles.size() - kShown) + " more";
  return names;
}

}  // namespace

void CheckSession::ReportMissingSyscalls(Diagnostics& diagnostics) const {
  for (const MissingSyscalls& group : missing_syscalls_) {
    const ProfileRef& first = group.profiles.front();
    if (group.profiles.size() == 1) {
      diagnostics.Warning(first.file->source, first.profile->name.span,
                          "profile " + Quote(first.profile->name.text) +
                              " has no syscalls section: every syscall will fail with ENOSYS",
                          kNoSyscallsHint);
      continue;
    }
    const std::string& top = group.top.profile->name.text;
    const bool top_checked = std::any_of(group.profiles.begin(), group.profiles.end(),
                                         [&](const ProfileRef& p) { return p.profile == group.top.profile; });
    const ProfileRef& at = top_checked ? group.top : first;
    const size_t others = group.profiles.size() - (top_checked ? 1 : 0);
    const std::string profiles =
        others == 1 ? "the profile extending it" : "the " + std::to_string(others) + " profiles extending it";
    const std::string who = top_checked ? Quote(top) + " and " + profiles + " have no syscalls section"
                                        : std::to_string(others) + " profiles extending " + Quote(top) +
                                              " have no syscalls section, nor has " + Quote(top);
    diagnostics.Warning(at.file->source, at.profile->name.span,
                        who + ": every syscall will fail with ENOSYS in each (" + FirstNames(group.profiles) + ")",
                        "one syscalls section in " + Quote(top) + " would serve them all; or " + kNoSyscallsHint);
  }
}

namespace {

std::optional<ir::Policy> CheckChain(const ProfileRef& ref, LineageResolver& lineages,
                                     internal::AppliedAncestors* ancestors,
                                     std::vector<CheckSession::MissingSyscalls>* missing_syscalls,
                                     const Program& program, Diagnostics& diagnostics,
                                     const SyscallRuleCheck& rule_check) {
  const std::string& profile = ref.profile->name.text;
  size_t errors_before = diagnostics.error_count() + diagnostics.suppressed();
  auto chain = lineages.Resolve(ref, diagnostics);
  if (!chain) return std::nullopt;
  const size_t first_reported = diagnostics.all().size();
  State state = ApplyChain(*chain, ancestors, diagnostics);
  AddExtendsNotes(*chain, diagnostics, first_reported);
  const ProfileRef& self = chain->front();
  // A syntax error may be in the syscalls section the parser then dropped.
  const bool broken = std::any_of(chain->begin(), chain->end(),
                                  [](const ProfileRef& r) { return r.profile->has_syntax_errors; });
  if (!state.has_syscalls && !broken && missing_syscalls == nullptr) {
    diagnostics.Warning(self.file->source, self.profile->name.span,
                        "profile '" + profile + "' has no syscalls section: every syscall will fail with ENOSYS",
                        kNoSyscallsHint);
  } else if (!state.has_syscalls && !broken) {
    // Said once per chain top, after the session (a file of 65 profiles
    // extending one without a section said it 65 times).
    const ProfileRef& top = chain->back();
    auto group = std::find_if(missing_syscalls->begin(), missing_syscalls->end(),
                              [&](const CheckSession::MissingSyscalls& g) { return g.top.profile == top.profile; });
    if (group == missing_syscalls->end()) group = missing_syscalls->insert(group, {top, {}});
    group->profiles.push_back(self);
  }
  state.policy.name = profile;
  CheckHiddenOutsideWorkDir(state, diagnostics);
  CheckHiddenProcPaths(state, diagnostics);
  CheckMountsBesideWorkDir(state, diagnostics);
  CheckWorkDirOutsideBinds(state, self.profile, *self.file, diagnostics);
  CheckCopiesUnderMounts(state, diagnostics);
  CheckReadOnlyUnderWritable(state, diagnostics);
  CheckOverriddenRules(state, self.profile, diagnostics);
  if (diagnostics.error_count() + diagnostics.suppressed() > errors_before) return std::nullopt;
  ir::Policy policy = Finalize(state, program);
  if (!rule_check) return policy;
  std::vector<ir::SyscallRuleProblem> problems = rule_check(policy);
  for (const ir::SyscallRuleProblem& problem : problems) {
    auto site = state.rule_sites.find(problem.syscall);
    const bool located = site != state.rule_sites.end() && site->second.source != nullptr;
    diagnostics.Error(located ? site->second.source : self.file->source,
                      located ? site->second.span : self.profile->name.span, problem.message,
                      !problem.help.empty()
                          ? problem.help
                          : "seccomp compares each argument of a rule once, and rules of different actions "
                            "for one syscall must not partly overlap: split or narrow the conditions "
                            "(docs/language.md, Syscalls, Conditions)");
  }
  if (!problems.empty()) return std::nullopt;
  return policy;
}

}  // namespace

}  // namespace cocoon::frontend
