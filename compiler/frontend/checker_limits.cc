// Checker sections: limits, environment and runtime.
#include <algorithm>

#include "compiler/frontend/checker_internal.h"
#include "compiler/ir/runtime_memory_flag.h"

namespace cocoon::frontend::internal {
namespace {

struct LimitSpec {
  std::string_view name;
  UnitKind kind;
  ir::Limit ir::Limits::*field;
  uint64_t min;
  uint64_t max;
  // For a limit the enforcer always applies (an rlimit it sets whatever the
  // policy says: enforcer/limits/limit_plan.cc, PlanFiles), the value it
  // applies when the policy sets none, `unlimited` included; 0 otherwise.
  uint64_t enforcer_default = 0;
};

constexpr uint64_t kDayMs = 24ull * 3600 * 1000;
constexpr uint64_t kMiB = 1ull << 20;

const LimitSpec kLimits[] = {
    {"wall_time", UnitKind::kTime, &ir::Limits::wall_time_ms, 1, 7 * kDayMs},
    {"cpu_time", UnitKind::kTime, &ir::Limits::cpu_time_ms, 1, 7 * kDayMs},
    {"memory", UnitKind::kSize, &ir::Limits::memory_bytes, kMiB, kMaxSizeBytes},
    {"processes", UnitKind::kCount, &ir::Limits::processes, 1, 4194304},
    // stdin, stdout and stderr are already three.
    {"open_files", UnitKind::kCount, &ir::Limits::open_files, 3, 1 << 20, ir::kDefaultOpenFiles},
    {"file_size", UnitKind::kSize, &ir::Limits::file_size_bytes, 1, kMaxSizeBytes, ir::kDefaultFileSizeBytes},
    {"disk", UnitKind::kSize, &ir::Limits::disk_bytes, 1, kMaxSizeBytes},
    {"output", UnitKind::kSize, &ir::Limits::output_bytes, 1, kMaxSizeBytes},
    {"cpu", UnitKind::kPercent, &ir::Limits::cpu_percent, 1, 100000},
};

std::string Show(UnitKind kind, uint64_t value) {
  switch (kind) {
    case UnitKind::kTime: return FormatDuration(value);
    case UnitKind::kSize: return FormatBytes(value);
    case UnitKind::kPercent: return std::to_string(value) + "%";
    case UnitKind::kCount: return std::to_string(value);
  }
  return std::to_string(value);
}

const LimitSpec* FindLimit(std::string_view name) {
  for (const LimitSpec& spec : kLimits) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

void CheckWeakening(Layer& layer, const LimitSpec& spec, const ir::Limit& before, const ir::Limit& after,
                    Span span) {
  std::string setting = "limits." + std::string(spec.name);
  if (!before.set) return;
  if (!after.set && spec.enforcer_default != 0) {
    // `unlimited` leaves the enforcer's default, which may be more or less
    // than what the parent set.
    if (spec.enforcer_default > before.value) {
      layer.Weakens(setting, span,
                    "`unlimited` leaves the enforcer's default, " + Show(spec.kind, spec.enforcer_default) +
                        ", which is more than " + Show(spec.kind, before.value));
    }
  } else if (!after.set) {
    layer.Weakens(setting, span, "the limit is removed (it was " + Show(spec.kind, before.value) + ")");
  } else if (after.value > before.value) {
    layer.Weakens(setting, span, Show(spec.kind, after.value) + " is more than " + Show(spec.kind, before.value));
  } else if (after.enforcement == ir::Enforcement::kBestEffort && before.enforcement == ir::Enforcement::kRequired) {
    layer.Weakens(setting, span, "best_effort where it was required");
  }
}

bool ValidEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool EnvName(Layer& layer, const ast::Word& word) {
  if (ValidEnvName(word.text)) return true;
  layer.Error(word.span, "invalid environment variable name " + Quote(word.text),
              "use letters, digits and '_', not starting with a digit");
  return false;
}

enum class EnvStatement { kSet, kPass };

// `set NAME` and `pass NAME` in one profile contradict each other (the
// policy's value, or the caller's): false, and an error at the later one,
// when this profile already wrote the other.
bool SetOrPassOnly(Layer& layer, const std::string& name, Span span, EnvStatement statement) {
  const bool is_set = statement == EnvStatement::kSet;
  const std::optional<Span> other = layer.WhereInLayer((is_set ? "environment.pass:" : "environment.set:") + name);
  if (!other) return true;
  const std::string other_line = std::to_string(layer.file().source->Locate(other->begin).line);
  layer.Error(span, "variable " + name + " is both " + (is_set ? "passed" : "set") + " (line " + other_line +
                        ") and " + (is_set ? "set" : "passed") + " in profile '" + layer.profile() + "'",
              "keep one: `set` gives it the policy's value, `pass` the caller's");
  return false;
}

// Where an ancestor wrote `key`: "'base' sets at line 3" (`verb`: "sets"),
// with file:line for another file; empty if nothing recorded it.
std::string WhereAncestorWrote(Layer& layer, const ir::Origin& at, const std::string& verb) {
  const std::string line = std::to_string(at.line);
  return "'" + at.profile + "' " + verb + " at " +
         (at.file == layer.file().source->name() ? "line " + line : at.file + ":" + line);
}

std::string WhereAncestorWrote(Layer& layer, const std::string& key, const std::string& verb) {
  const auto& provenance = layer.state().policy.provenance;
  const auto origin = provenance.find(key);
  return origin == provenance.end() ? std::string() : WhereAncestorWrote(layer, origin->second, verb);
}

// `pass NAME` over a `set NAME` the profile inherited: the sandbox gets the
// caller's value, which the parent chose not to hand it (a caller's
// environment can hold secrets), in place of the parent's. A weakening like
// `inherit`, acknowledged by `relaxes environment`; said at the name, with
// where the parent set it.
void PassReplacesInheritedSet(Layer& layer, const ast::Word& name) {
  const std::string where = WhereAncestorWrote(layer, "environment.set:" + name.text, "sets");
  layer.Weakens("environment", name.span,
                "`pass " + name.text + "` gives the sandbox the caller's " + name.text + " in place of " +
                    (where.empty() ? "the value it inherits" : "the value " + where));
}

// `pass NAME` over an inherited `inherit` plus `unset NAME`: the parent hands
// the sandbox the caller's environment but this one variable (a token, a
// cloud key), and the pass brings the caller's value back. The same weakening
// as a pass over a `set`. Under an inherited `clear` the parent's result
// lacks the name as if it never said it, and passing it is like passing any
// name the parent did not pass: not a weakening.
void PassUndoesInheritedUnset(Layer& layer, const ast::Word& name, const std::optional<ir::Origin>& unset_at) {
  const std::string where = unset_at ? WhereAncestorWrote(layer, *unset_at, "unsets") : std::string();
  layer.Weakens("environment", name.span,
                "`pass " + name.text + "` gives the sandbox the caller's " + name.text + ", which " +
                    (where.empty() ? "the environment it inherits leaves out" : where));
}

}  // namespace

std::vector<std::string> LimitNames() {
  std::vector<std::string> names;
  for (const LimitSpec& spec : kLimits) names.emplace_back(spec.name);
  return names;
}

void ApplyLimits(Layer& layer, const ast::Statement& stmt) {
  const LimitSpec* spec = FindLimit(stmt.keyword.text);
  if (spec == nullptr) {
    std::string suggestion = DidYouMean(stmt.keyword.text, LimitNames());
    layer.Error(stmt.keyword.span, "unknown limit " + Quote(stmt.keyword.text),
                suggestion.empty() ? "limits are wall_time, cpu_time, memory, processes, open_files, "
                                     "file_size, disk, output and cpu"
                                   : "did you mean '" + suggestion + "'?");
    return;
  }
  std::string key = "limits." + std::string(spec->name);
  if (!layer.FirstInLayer(key, stmt.span, "limit " + std::string(spec->name))) return;
  const ast::Word& value = stmt.args[0];
  ir::Limit next;
  next.enforcement = stmt.args.size() > 1 ? ir::Enforcement::kBestEffort : ir::Enforcement::kRequired;
  if (!value.IsKeyword("unlimited")) {
    if (value.kind == ast::WordKind::kIdent) {
      layer.Error(value.span, "expected a value for " + std::string(spec->name) + ", not " + Quote(value.text));
      return;
    }
    if (!layer.Unit(value, spec->kind, next.value, spec->max)) return;
    if (next.value < spec->min || next.value > spec->max) {
      layer.Error(value.span, std::string(spec->name) + " " + value.text + " is out of range; expected " +
                                  Show(spec->kind, spec->min) + " to " + Show(spec->kind, spec->max));
      return;
    }
    next.set = true;
  } else if (spec->enforcer_default != 0) {
    // The enforcer always sets this rlimit: `unlimited` only means "no
    // value from the policy", and the sandbox gets the default.
    layer.Warning(value.span,
                  std::string(spec->name) + " is never unlimited: the sandbox gets the enforcer's default of " +
                      Show(spec->kind, spec->enforcer_default),
                  "write the value the program needs, up to " + Show(spec->kind, spec->max));
  }
  ir::Limit& field = layer.state().policy.limits.*(spec->field);
  CheckWeakening(layer, *spec, field, next, stmt.span);
  field = next;
  layer.Origin(key, stmt.span);
}

void ApplyEnvironment(Layer& layer, const ast::Statement& stmt) {
  State& state = layer.state();
  const std::string& key = stmt.keyword.text;
  if (key == "clear" || key == "inherit") {
    if (!layer.FirstInLayer("environment.clear", stmt.span, "clear/inherit")) return;
    bool clear = key == "clear";
    if (!clear && state.policy.environment.clear) {
      layer.Weakens("environment", stmt.span, "the caller's whole environment is passed in");
    }
    state.policy.environment.clear = clear;
    layer.Origin("environment.clear", stmt.span);
  } else if (key == "set") {
    const ast::Word& name = stmt.args[0];
    if (!EnvName(layer, name)) return;
    const std::string setting = "environment.set:" + name.text;
    if (!layer.FirstInLayer(setting, stmt.span, "variable " + name.text)) return;
    if (!SetOrPassOnly(layer, name.text, stmt.span, EnvStatement::kSet)) return;
    state.env_set[name.text] = stmt.args[1].text;
    // The child wins per name: its value replaces a `pass` it inherited.
    if (state.env_pass.erase(name.text) != 0) state.policy.provenance.erase("environment.pass:" + name.text);
    if (state.env_unset.erase(name.text) != 0) state.policy.provenance.erase("environment.unset:" + name.text);
    layer.Origin(setting, stmt.span);
  } else if (key != "pass" && key != "unset") {
    // `sett FOO "x"`: read as an unknown statement so that the rest of the
    // block still parses (grammar/CocoonParser.g4, envStmt).
    const std::string suggestion = DidYouMean(key, {"clear", "inherit", "set", "pass", "unset"});
    layer.Error(stmt.keyword.span, "unknown environment statement " + Quote(key),
                suggestion.empty() ? "the statements are clear, inherit, set, pass and unset"
                                   : "did you mean '" + suggestion + "'?");
  } else {  // pass, unset
    for (const ast::Word& name : stmt.args) {
      if (!EnvName(layer, name)) continue;
      if (key == "pass") {
        if (!SetOrPassOnly(layer, name.text, name.span, EnvStatement::kPass)) continue;
        layer.WroteInLayer("environment.pass:" + name.text, name.span);
        // The child wins per name: the caller's value replaces an inherited
        // `set` (this profile's own `set` of it is an error above).
        if (state.env_set.count(name.text) != 0) {
          PassReplacesInheritedSet(layer, name);
          state.env_set.erase(name.text);
          state.policy.provenance.erase("environment.set:" + name.text);
        }
        // An ancestor's `unset` of a variable the parent takes from the
        // caller, also when this profile unset it again first (its own
        // `unset` alone is only undone).
        if (auto inherited = layer.inherited_env_unset().find(name.text);
            inherited != layer.inherited_env_unset().end() && !layer.inherited_env_clear()) {
          PassUndoesInheritedUnset(layer, name, inherited->second);
        }
        if (state.env_unset.erase(name.text) != 0) state.policy.provenance.erase("environment.unset:" + name.text);
        if (!state.env_pass.insert(name.text).second) continue;
        layer.Origin("environment.pass:" + name.text, name.span);
      } else {
        state.env_set.erase(name.text);
        state.env_pass.erase(name.text);
        // Also out of an inherited environment (`inherit` then `unset
        // AWS_SECRET_ACCESS_KEY`): once it only left the set/pass lists,
        // and the secret reached the sandbox with everything else.
        state.env_unset.insert(name.text);
        layer.WroteInLayer("environment.unset:" + name.text, name.span);
        state.policy.provenance.erase("environment.set:" + name.text);
        state.policy.provenance.erase("environment.pass:" + name.text);
        layer.Origin("environment.unset:" + name.text, name.span);
      }
    }
  }
}

void ApplyRuntime(Layer& layer, const ast::Statement& stmt) {
  ir::Runtime runtime;
  runtime.name = stmt.args[0].text;
  std::set<std::string> seen;
  static const std::vector<std::string> kKeys{"interpreter", "flags", "code_flag", "extension", "version_args"};
  for (const ast::Statement& item : stmt.block) {
    const std::string& key = item.keyword.text;
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      std::string suggestion = DidYouMean(key, kKeys);
      layer.Error(item.keyword.span, "unknown runtime setting " + Quote(key),
                  suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      continue;
    }
    if (!seen.insert(key).second) {
      layer.Error(item.keyword.span, key + " is set twice in runtime " + Quote(runtime.name));
      continue;
    }
    bool single = key == "code_flag" || key == "extension";
    if (single && item.args.size() != 1) {
      layer.Error(item.span, key + " takes exactly one string");
      continue;
    }
    for (const ast::Word& word : item.args) {
      if (key == "interpreter") {
        std::string path;
        if (layer.AbsolutePath(word, path)) runtime.interpreters.push_back(path);
      } else if (key == "flags") {
        // Checked here as `cocoon run` reads it: a preset that checks runs.
        if (const ir::MemoryFlagPart part = ir::ParseMemoryFlag(word.text); part.present && !part.valid) {
          layer.Error(word.span, "runtime flag " + Quote(word.text) + " has a malformed memory limit share",
                      ir::MemoryFlagAdvice());
        }
        runtime.flags.push_back(word.text);
      } else if (key == "version_args") {
        runtime.version_args.push_back(word.text);
      } else if (key == "code_flag") {
        runtime.code_flag = word.text;
      } else {
        runtime.file_extension = word.text;
      }
    }
  }
  if (runtime.interpreters.empty()) {
    layer.Error(stmt.args[0].span, "runtime " + Quote(runtime.name) + " has no interpreter",
                "add: interpreter /usr/bin/NAME");
    return;
  }
  layer.state().policy.runtime = std::move(runtime);
  layer.Origin("runtime", stmt.span);
}

}  // namespace cocoon::frontend::internal
