// ChildSpecArena: the child's spec is written after clone into a MAP_SHARED
// arena mapped before it. The copy must be complete (same content) and
// self-contained (no pointer into the parent's heap, which the child sees
// only as the snapshot taken at clone), and a process forked before Place()
// must read what Place() wrote.
#include "enforcer/child_spec_arena.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace cocoon::enforcer {
namespace {

// A spec with every pointer field set, backed by this object's heap.
struct HeapSpec {
  std::vector<std::string> cgroup_dir_text{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu"};
  std::vector<char*> cgroup_dirs;
  std::string tasks = "cocoon-1-1/tasks";
  std::string hostname = "sandbox";
  std::string new_root = "/tmp/.cocoon-0/root";
  std::string root_data = "mode=0755,size=1m";
  std::vector<std::string> texts{"/usr", "/usr", "/tmp", "mode=1777", "/etc/hosts"};
  std::vector<ChildMountOp> mounts;
  WorkMountChildSpec work;
  std::string cwd = "/work";
  RlimitSet rlimits;
  std::vector<std::string> landlock_paths{"/usr", "/work"};
  std::vector<ChildLandlockRule> landlock;
  std::vector<sock_filter> filter{{0x20, 0, 0, 4}, {0x15, 0, 1, 0xc000003e}, {0x06, 0, 0, 0x7fff0000}};
  sock_fprog program{};
  std::vector<std::string> candidates{"/usr/bin/true", "/bin/true"};
  std::vector<const char*> candidate_ptrs;
  std::vector<std::string> argv_text{"true", "--flag", ""};
  std::vector<char*> argv;
  std::vector<std::string> env_text{"PATH=/usr/bin", "HOME=/work"};
  std::vector<char*> envp;
  ListenerHandoff handoff;
  ChildSpec spec;

  HeapSpec() {
    mounts.push_back({ChildMountKind::kBind, texts[0].c_str(), texts[1].c_str(), nullptr, true, 1, 0, 0, false});
    mounts.push_back({ChildMountKind::kTmpfs, nullptr, texts[2].c_str(), texts[3].c_str(), true, 0, 6, 1, false});
    std::strcpy(work.stage_dir, "/tmp/stage");
    std::strcpy(work.overlay_data, "lowerdir=/a,upperdir=/b,workdir=/c,userxattr");
    rlimits.entries[0] = RlimitEntry{RLIMIT_CORE, {0, 0}};
    rlimits.count = 1;
    for (const auto& path : landlock_paths) landlock.push_back({path.c_str(), 0x1234, path == "/work"});
    program.len = static_cast<unsigned short>(filter.size());
    program.filter = filter.data();
    for (const auto& c : candidates) candidate_ptrs.push_back(c.c_str());
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);

    spec.work_sock = 11;
    spec.parent_pid = 4242;
    for (auto& d : cgroup_dir_text) cgroup_dirs.push_back(d.data());
    cgroup_dirs.push_back(nullptr);
    spec.cgroup_parent_dirs = cgroup_dirs.data();
    spec.cgroup_parent_count = cgroup_dir_text.size();
    spec.cgroup_tasks_path = tasks.c_str();
    spec.hostname = hostname.c_str();
    spec.hostname_len = hostname.size();
    spec.loopback = true;
    spec.broker_sock = 12;
    spec.new_root = new_root.c_str();
    spec.new_root_data = root_data.c_str();
    spec.mounts = mounts.data();
    spec.mount_count = mounts.size();
    spec.work_spec = &work;
    spec.cwd = cwd.c_str();
    spec.rlimits = &rlimits;
    spec.uid = 1000;
    spec.gid = 1001;
    spec.landlock_abi = 6;
    spec.landlock_rules = landlock.data();
    spec.landlock_rule_count = landlock.size();
    spec.seccomp = &program;
    spec.seccomp_listener = true;
    spec.handoff = &handoff;
    spec.exec_candidates = candidate_ptrs.data();
    spec.exec_candidate_count = candidate_ptrs.size();
    spec.argv = argv.data();
    spec.envp = envp.data();
  }
};

void ExpectInside(const ChildSpecArena& arena, const void* p, size_t size, const char* what) {
  EXPECT_TRUE(arena.Contains(p, size)) << what << " points outside the arena";
}

void ExpectString(const ChildSpecArena& arena, const char* placed, const std::string& expected, const char* what) {
  ASSERT_NE(placed, nullptr) << what;
  ExpectInside(arena, placed, expected.size() + 1, what);
  EXPECT_EQ(std::string(placed), expected) << what;
}

TEST(ChildSpecArena, PlacesADeepSelfContainedCopy) {
  HeapSpec heap;
  auto arena = ChildSpecArena::Map();
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  ASSERT_TRUE(arena->Place(heap.spec).ok());
  const ChildSpec& placed = *arena->spec_slot();
  ExpectInside(*arena, &placed, sizeof(placed), "the spec");

  EXPECT_EQ(placed.work_sock, 11);
  EXPECT_EQ(placed.broker_sock, 12);
  EXPECT_EQ(placed.parent_pid, 4242);
  EXPECT_EQ(placed.uid, 1000u);
  EXPECT_EQ(placed.gid, 1001u);
  EXPECT_TRUE(placed.loopback);
  EXPECT_EQ(placed.landlock_abi, 6);
  ASSERT_EQ(placed.cgroup_parent_count, 3u);
  ExpectInside(*arena, placed.cgroup_parent_dirs, 4 * sizeof(char*), "cgroup dirs");
  ExpectString(*arena, placed.cgroup_parent_dirs[2], heap.cgroup_dir_text[2], "cgroup dir");
  EXPECT_EQ(placed.cgroup_parent_dirs[3], nullptr);
  ExpectString(*arena, placed.cgroup_tasks_path, heap.tasks, "tasks path");
  ASSERT_EQ(placed.hostname_len, heap.hostname.size());
  ExpectInside(*arena, placed.hostname, placed.hostname_len, "hostname");
  EXPECT_EQ(std::string(placed.hostname, placed.hostname_len), heap.hostname);
  ExpectString(*arena, placed.new_root, heap.new_root, "new root");
  ExpectString(*arena, placed.new_root_data, heap.root_data, "new root data");
  ExpectString(*arena, placed.cwd, heap.cwd, "cwd");

  ASSERT_EQ(placed.mount_count, 2u);
  ExpectInside(*arena, placed.mounts, 2 * sizeof(ChildMountOp), "mounts");
  ExpectString(*arena, placed.mounts[0].source, "/usr", "bind source");
  ExpectString(*arena, placed.mounts[0].target, "/usr", "bind target");
  EXPECT_EQ(placed.mounts[0].data, nullptr);
  EXPECT_EQ(placed.mounts[0].attr_set, 1u);
  EXPECT_EQ(placed.mounts[1].kind, ChildMountKind::kTmpfs);
  EXPECT_EQ(placed.mounts[1].source, nullptr);
  ExpectString(*arena, placed.mounts[1].data, "mode=1777", "tmpfs data");
  EXPECT_EQ(placed.mounts[1].existing_parent_len, 1u);

  ASSERT_NE(placed.work_spec, nullptr);
  ExpectInside(*arena, placed.work_spec, sizeof(WorkMountChildSpec), "work spec");
  EXPECT_STREQ(placed.work_spec->stage_dir, "/tmp/stage");
  EXPECT_STREQ(placed.work_spec->overlay_data, heap.work.overlay_data);
  ExpectInside(*arena, placed.rlimits, sizeof(RlimitSet), "rlimits");
  EXPECT_EQ(placed.rlimits->count, 1u);

  ASSERT_EQ(placed.landlock_rule_count, 2u);
  ExpectInside(*arena, placed.landlock_rules, 2 * sizeof(ChildLandlockRule), "landlock rules");
  ExpectString(*arena, placed.landlock_rules[1].path, "/work", "landlock path");
  EXPECT_TRUE(placed.landlock_rules[1].optional);

  ASSERT_NE(placed.seccomp, nullptr);
  ExpectInside(*arena, placed.seccomp, sizeof(sock_fprog), "seccomp program");
  ASSERT_EQ(placed.seccomp->len, 3);
  ExpectInside(*arena, placed.seccomp->filter, 3 * sizeof(sock_filter), "seccomp instructions");
  EXPECT_EQ(std::memcmp(placed.seccomp->filter, heap.filter.data(), 3 * sizeof(sock_filter)), 0);
  EXPECT_TRUE(placed.seccomp_listener);
  EXPECT_EQ(placed.handoff, &heap.handoff) << "the listener page is shared already and must not be copied";

  ASSERT_EQ(placed.exec_candidate_count, 2u);
  ExpectInside(*arena, placed.exec_candidates, 2 * sizeof(char*), "exec candidates");
  ExpectString(*arena, placed.exec_candidates[1], "/bin/true", "exec candidate");
  ExpectInside(*arena, placed.argv, 4 * sizeof(char*), "argv");
  ExpectString(*arena, placed.argv[1], "--flag", "argv[1]");
  ExpectString(*arena, placed.argv[2], "", "an empty argument");
  EXPECT_EQ(placed.argv[3], nullptr);
  ExpectString(*arena, placed.envp[1], "HOME=/work", "envp[1]");
  EXPECT_EQ(placed.envp[2], nullptr);
}

TEST(ChildSpecArena, NullFieldsStayNull) {
  ChildSpec empty;
  auto arena = ChildSpecArena::Map(1 << 16);
  ASSERT_TRUE(arena.ok());
  ASSERT_TRUE(arena->Place(empty).ok());
  const ChildSpec& placed = *arena->spec_slot();
  EXPECT_EQ(placed.mounts, nullptr);
  EXPECT_EQ(placed.work_spec, nullptr);
  EXPECT_EQ(placed.seccomp, nullptr);
  EXPECT_EQ(placed.argv, nullptr);
  EXPECT_EQ(placed.cwd, nullptr);
}

TEST(ChildSpecArena, RefusesASpecThatDoesNotFit) {
  HeapSpec heap;
  std::string huge(200000, 'x');
  heap.argv[1] = huge.data();
  auto arena = ChildSpecArena::Map(1 << 16);
  ASSERT_TRUE(arena.ok());
  Status placed = arena->Place(heap.spec);
  EXPECT_EQ(placed.code(), ErrorCode::kResourceExhausted) << placed.ToString();
  EXPECT_NE(placed.message().find("exceeds"), std::string::npos) << placed.message();
}

// The property the launcher relies on: a process forked BEFORE Place()
// reads, after a pipe handshake, the spec Place() wrote afterwards.
TEST(ChildSpecArena, AProcessForkedBeforePlaceReadsTheSpec) {
  auto arena = ChildSpecArena::Map();
  ASSERT_TRUE(arena.ok());
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(2);
    const ChildSpec& spec = *arena->spec_slot();
    bool ok = spec.argv != nullptr && std::strcmp(spec.argv[1], "--flag") == 0 && spec.mount_count == 2 &&
              std::strcmp(spec.mounts[1].data, "mode=1777") == 0 && spec.seccomp->len == 3;
    _exit(ok ? 0 : 1);
  }
  {
    HeapSpec heap;  // allocated after the fork: the child's copy of the heap never had it
    ASSERT_TRUE(arena->Place(heap.spec).ok());
  }
  ASSERT_EQ(write(go[1], "G", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(go[0]);
  close(go[1]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the forked process did not read the spec placed after the fork";
}

}  // namespace
}  // namespace cocoon::enforcer
