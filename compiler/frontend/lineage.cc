#include "compiler/frontend/lineage.h"

#include <string>

namespace cocoon::frontend {
namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

std::optional<std::vector<ProfileRef>> LineageResolver::Resolve(const ProfileRef& start,
                                                                Diagnostics& diagnostics) {
  const Resolution& resolution = ResolveOnce(start);
  if (resolution.problem) {
    diagnostics.Add(*resolution.problem);
    return std::nullopt;
  }
  // At most kMaxExtendsDepth links, each known to resolve.
  std::vector<ProfileRef> chain{start};
  chain.reserve(resolution.ancestors + 1);
  while (chain.back().profile->has_parent) {
    chain.push_back(program_.profiles.at(chain.back().profile->parent.text));
  }
  return chain;
}

const LineageResolver::Resolution& LineageResolver::ResolveOnce(const ProfileRef& start) {
  if (auto known = resolved_.find(start.profile); known != resolved_.end()) return known->second;
  // Walk up until a profile already resolved, a root, an unknown parent or a
  // cycle; then resolve the profiles walked, from the top down.
  std::vector<ProfileRef> path;  // each the parent of the one before it
  std::unordered_map<const ast::Profile*, size_t> index_on_path;
  ProfileRef current = start;
  while (true) {
    auto [seen, fresh] = index_on_path.emplace(current.profile, path.size());
    if (!fresh) {
      const std::vector<ProfileRef> members(path.begin() + seen->second, path.end());
      auto problem = Cycle(members);
      for (const ProfileRef& member : members) resolved_[member.profile] = Resolution{.problem = problem};
      path.resize(seen->second);
      ResolveDownFrom(path, &resolved_.at(current.profile));
      break;
    }
    path.push_back(current);
    if (!current.profile->has_parent) {
      ResolveDownFrom(path, nullptr);
      break;
    }
    auto found = program_.profiles.find(current.profile->parent.text);
    if (found == program_.profiles.end()) {
      path.pop_back();
      ResolveDownFrom(path, &(resolved_[current.profile] = Resolution{.problem = UnknownParent(current)}));
      break;
    }
    if (auto known = resolved_.find(found->second.profile); known != resolved_.end()) {
      ResolveDownFrom(path, &known->second);
      break;
    }
    current = found->second;
  }
  return resolved_.at(start.profile);
}

void LineageResolver::ResolveDownFrom(const std::vector<ProfileRef>& path, const Resolution* above) {
  // Nodes of an unordered_map stay put as it grows: `above` remains valid.
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    Resolution resolution;
    if (above != nullptr) {
      resolution.ancestors = above->ancestors + 1;
      resolution.problem = above->problem;
    }
    // Reported at the one profile that first goes past the limit; those
    // below it inherit that same diagnostic.
    if (!resolution.problem && resolution.ancestors > kMaxExtendsDepth) resolution.problem = TooDeep(*it);
    above = &(resolved_[it->profile] = std::move(resolution));
  }
}

std::shared_ptr<const Diagnostic> LineageResolver::UnknownParent(const ProfileRef& child) const {
  const ast::Word& parent = child.profile->parent;
  std::vector<std::string> names;
  for (const auto& [name, ref] : program_.profiles) names.push_back(name);
  std::string suggestion = DidYouMean(parent.text, names);
  return std::make_shared<const Diagnostic>(Diagnostic{
      Severity::kError, child.file->source, parent.span, "unknown parent profile " + Quote(parent.text),
      suggestion.empty() ? "import the file that defines it, e.g. import \"" + parent.text + "\""
                         : "did you mean '" + suggestion + "'?",
      {}});
}

std::shared_ptr<const Diagnostic> LineageResolver::Cycle(const std::vector<ProfileRef>& members) const {
  // members[i] extends members[i + 1], and the last extends the first. The
  // cycle is told from the member defined first, and reported at the
  // `extends` that closes it, whichever profile led to it.
  size_t first = 0;
  for (size_t i = 1; i < members.size(); ++i) {
    if (DefinedBefore(members[i], members[first])) first = i;
  }
  std::string cycle;
  for (size_t step = 0; step < members.size(); ++step) {
    cycle += members[(first + step) % members.size()].profile->name.text + " -> ";
  }
  cycle += members[first].profile->name.text;
  const ProfileRef& closing = members[(first + members.size() - 1) % members.size()];
  return std::make_shared<const Diagnostic>(Diagnostic{Severity::kError, closing.file->source,
                                                       closing.profile->parent.span, "extends cycle: " + cycle, {}, {}});
}

std::shared_ptr<const Diagnostic> LineageResolver::TooDeep(const ProfileRef& profile) const {
  const std::string limit = std::to_string(kMaxExtendsDepth);
  return std::make_shared<const Diagnostic>(Diagnostic{
      Severity::kError, profile.file->source, profile.profile->parent.span,
      "extends chain too deep: profile " + Quote(profile.profile->name.text) + " has more than " + limit +
          " ancestors (the limit)",
      "flatten the hierarchy: merge profiles of the chain, or extend one nearer the root "
      "(docs/language.md, Profiles and `extends`)",
      {}});
}

bool LineageResolver::DefinedBefore(const ProfileRef& a, const ProfileRef& b) const {
  if (a.file != b.file) {
    for (const auto& file : program_.files) {
      if (file.get() == a.file) return true;
      if (file.get() == b.file) return false;
    }
  }
  return a.profile->span.begin < b.profile->span.begin;
}

}  // namespace cocoon::frontend
