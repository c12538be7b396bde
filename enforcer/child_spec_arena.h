// A shared arena for the child's spec: mapped (MAP_SHARED) before clone, so
// it exists at the same address in the parent and the child, and filled by
// the parent AFTER clone. That lets the child create its namespaces (~0.6 ms
// of kernel work) while the parent is still building the spec, instead of
// the parent building everything first and then waiting in clone3
// (launcher.cc).
//
// Place() deep-copies a ChildSpec and everything it points to into the
// arena, so that the copy holds no pointer into the parent's heap: the
// child runs in the parent's memory (memory_sharing_clone.h), where the heap
// the spec was built in is freed and reused while the child still reads,
// and in sanitizer builds it has only the snapshot taken at clone, before
// the spec existed. The arena stays mapped until the child has exec'd or
// died. The ListenerHandoff page is already shared and is not copied.
//
// The child reads the placed spec only after the parent's 'G' byte on the
// sync pipe; the pipe's write and read order the arena's stores before the
// child's loads. execve drops the mapping, so the sandboxed program never
// sees it.
#pragma once

#include <cstddef>

#include "compiler/common/status.h"
#include "enforcer/child_spec.h"

namespace cocoon::enforcer {

class ChildSpecArena {
 public:
  // Virtual size reserved per launch. Pages are allocated only when the
  // parent writes them (MAP_NORESERVE): a strict launch uses ~3 pages. The
  // largest spec is bounded by the command line and environment (execve's
  // own limit is a quarter of the stack rlimit) plus the policy's mounts
  // and rules; 64 MiB is far beyond any accepted execve.
  static constexpr size_t kDefaultCapacity = size_t{64} << 20;

  static Result<ChildSpecArena> Map(size_t capacity = kDefaultCapacity);
  ChildSpecArena(ChildSpecArena&& other) noexcept;
  ChildSpecArena& operator=(ChildSpecArena&&) = delete;
  ChildSpecArena(const ChildSpecArena&) = delete;
  ~ChildSpecArena();

  // Where Place() puts the spec: known before clone, for ChildBootstrap.
  const ChildSpec* spec_slot() const { return reinterpret_cast<const ChildSpec*>(base_); }

  // Deep-copies `spec` into the arena at spec_slot(). Fails (nothing the
  // child could read half-written: it waits for 'G') when it does not fit.
  Status Place(const ChildSpec& spec);

  // True when [p, p + size) lies inside the arena (for tests).
  bool Contains(const void* p, size_t size) const;

 private:
  ChildSpecArena(char* base, size_t capacity) : base_(base), capacity_(capacity) {}
  char* base_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace cocoon::enforcer
