#include "enforcer/child_spec_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <new>

namespace cocoon::enforcer {
namespace {

// Place() copies ChildSpec field by field. A field added to ChildSpec (or to
// the structs it points to) without a matching copy here would leave the
// child following a pointer into the parent's heap, which in the child is a
// stale snapshot: this size check makes such a change fail to compile.
static_assert(sizeof(ChildSpec) == 264, "ChildSpec changed: copy the new field in ChildSpecArena::Place, then update this size");
static_assert(sizeof(ChildMountOp) == 104, "ChildMountOp changed: copy the new field in ChildSpecArena::Place");
static_assert(sizeof(ChildLandlockRule) == 24, "ChildLandlockRule changed: copy the new field in ChildSpecArena::Place");

// A bump allocator over the arena; every Copy* returns nullptr once full.
class Bump {
 public:
  Bump(char* begin, size_t capacity) : next_(begin), end_(begin + capacity) {}

  void* Take(size_t size, size_t align) {
    auto at = (reinterpret_cast<uintptr_t>(next_) + align - 1) & ~(uintptr_t{align} - 1);
    if (at > reinterpret_cast<uintptr_t>(end_) || size > reinterpret_cast<uintptr_t>(end_) - at) {
      full_ = true;
      return nullptr;
    }
    next_ = reinterpret_cast<char*>(at + size);
    return reinterpret_cast<void*>(at);
  }

  template <typename T>
  T* CopyArray(const T* source, size_t count) {
    if (source == nullptr) return nullptr;
    void* place = Take(sizeof(T) * (count == 0 ? 1 : count), alignof(T));
    if (place == nullptr) return nullptr;
    if (count != 0) std::memcpy(place, source, sizeof(T) * count);
    return static_cast<T*>(place);
  }

  const char* CopyString(const char* text) {
    if (text == nullptr) return nullptr;
    return CopyArray(text, std::strlen(text) + 1);
  }

  // A NULL-terminated array of strings (argv, envp).
  char** CopyStringVector(char* const* strings) {
    if (strings == nullptr) return nullptr;
    size_t count = 0;
    while (strings[count] != nullptr) ++count;
    auto** out = static_cast<char**>(Take(sizeof(char*) * (count + 1), alignof(char*)));
    if (out == nullptr) return nullptr;
    for (size_t i = 0; i < count; ++i) out[i] = const_cast<char*>(CopyString(strings[i]));
    out[count] = nullptr;
    return out;
  }

  bool full() const { return full_; }

 private:
  char* next_;
  char* end_;
  bool full_ = false;
};

}  // namespace

Result<ChildSpecArena> ChildSpecArena::Map(size_t capacity) {
  if (capacity < sizeof(ChildSpec)) return InvalidArgumentError("child spec arena too small");
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return ErrnoError("mmap the child spec arena");
  return ChildSpecArena(static_cast<char*>(base), capacity);
}

ChildSpecArena::ChildSpecArena(ChildSpecArena&& other) noexcept : base_(other.base_), capacity_(other.capacity_) {
  other.base_ = nullptr;
  other.capacity_ = 0;
}

ChildSpecArena::~ChildSpecArena() {
  if (base_ != nullptr) munmap(base_, capacity_);
}

bool ChildSpecArena::Contains(const void* p, size_t size) const {
  auto at = reinterpret_cast<uintptr_t>(p);
  auto begin = reinterpret_cast<uintptr_t>(base_);
  return at >= begin && size <= capacity_ && at - begin <= capacity_ - size;
}

Status ChildSpecArena::Place(const ChildSpec& spec) {
  Bump bump(base_, capacity_);
  auto* out = new (bump.Take(sizeof(ChildSpec), alignof(ChildSpec))) ChildSpec(spec);

  out->cgroup_parent_dirs = bump.CopyStringVector(spec.cgroup_parent_dirs);
  out->cgroup_tasks_path = bump.CopyString(spec.cgroup_tasks_path);
  out->hostname = bump.CopyArray(spec.hostname, spec.hostname_len);
  out->new_root = bump.CopyString(spec.new_root);
  out->new_root_data = bump.CopyString(spec.new_root_data);

  ChildMountOp* mounts = bump.CopyArray(spec.mounts, spec.mount_count);
  for (size_t i = 0; mounts != nullptr && i < spec.mount_count; ++i) {
    mounts[i].source = bump.CopyString(spec.mounts[i].source);
    mounts[i].target = bump.CopyString(spec.mounts[i].target);
    mounts[i].data = bump.CopyString(spec.mounts[i].data);
  }
  out->mounts = mounts;
  out->work_spec = bump.CopyArray(spec.work_spec, 1);
  out->cwd = bump.CopyString(spec.cwd);
  out->rlimits = bump.CopyArray(spec.rlimits, 1);
  out->nested_uid_map = bump.CopyArray(spec.nested_uid_map, spec.nested_uid_map_len);
  out->nested_gid_map = bump.CopyArray(spec.nested_gid_map, spec.nested_gid_map_len);

  ChildLandlockRule* rules = bump.CopyArray(spec.landlock_rules, spec.landlock_rule_count);
  for (size_t i = 0; rules != nullptr && i < spec.landlock_rule_count; ++i) {
    rules[i].path = bump.CopyString(spec.landlock_rules[i].path);
  }
  out->landlock_rules = rules;

  if (spec.seccomp != nullptr) {
    sock_fprog* program = bump.CopyArray(spec.seccomp, 1);
    if (program != nullptr) program->filter = bump.CopyArray(spec.seccomp->filter, spec.seccomp->len);
    out->seccomp = program;
  }
  // spec.handoff is a MAP_SHARED page of its own (launcher.cc): kept as is.

  const char** candidates = bump.CopyArray(spec.exec_candidates, spec.exec_candidate_count);
  for (size_t i = 0; candidates != nullptr && i < spec.exec_candidate_count; ++i) {
    candidates[i] = bump.CopyString(spec.exec_candidates[i]);
  }
  out->exec_candidates = candidates;
  out->argv = bump.CopyStringVector(spec.argv);
  out->envp = bump.CopyStringVector(spec.envp);

  if (bump.full()) {
    return ResourceExhaustedError("the sandbox's launch description (command line, environment, mounts, rules) exceeds " +
                                  std::to_string(capacity_ >> 20) +
                                  " MiB: pass large data through the work dir or stdin, not argv or --env");
  }
  return Status::Ok();
}

}  // namespace cocoon::enforcer
