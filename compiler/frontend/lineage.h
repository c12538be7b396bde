// Resolves `extends` chains: a profile and its ancestors, nearest first.
//
// Each profile's ancestry is resolved once and remembered, so that checking
// every profile of a file (`cocoon check`) follows each `extends` link once
// instead of once per descendant (a 4,000-profile chain took minutes). A
// broken chain (unknown parent, cycle, too deep) is described by one
// diagnostic, the same whichever profile reaches it, so that it is reported
// once rather than once per profile below it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "compiler/common/diagnostics.h"
#include "compiler/frontend/loader.h"

namespace cocoon::frontend {

// The most ancestors (parent, grandparent, ...) a profile may have. Real
// hierarchies are a few levels deep; the cap keeps a generated or hostile
// file from making every check apply thousands of layers per profile.
inline constexpr size_t kMaxExtendsDepth = 64;

class LineageResolver {
 public:
  explicit LineageResolver(const Program& program) : program_(program) {}

  // `start` then its ancestors up to the root-most one; nullopt, with the
  // chain's problem added to `diagnostics`, when the chain is broken.
  std::optional<std::vector<ProfileRef>> Resolve(const ProfileRef& start, Diagnostics& diagnostics);

 private:
  struct Resolution {
    size_t ancestors = 0;
    std::shared_ptr<const Diagnostic> problem;  // set when the chain is broken
  };

  const Resolution& ResolveOnce(const ProfileRef& start);
  // Fills in `path` (each profile the parent of the one before it), top
  // first, from the resolution of the last one's parent (null for a root).
  void ResolveDownFrom(const std::vector<ProfileRef>& path, const Resolution* above);
  std::shared_ptr<const Diagnostic> UnknownParent(const ProfileRef& child) const;
  std::shared_ptr<const Diagnostic> Cycle(const std::vector<ProfileRef>& members) const;
  std::shared_ptr<const Diagnostic> TooDeep(const ProfileRef& profile) const;
  // Load order of the file, then position in it: which cycle member a
  // cycle is reported from.
  bool DefinedBefore(const ProfileRef& a, const ProfileRef& b) const;

  const Program& program_;
  std::unordered_map<const ast::Profile*, Resolution> resolved_;
};

}  // namespace cocoon::frontend
