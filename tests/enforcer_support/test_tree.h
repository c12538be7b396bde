// Helpers for the work dir tests: throwaway directories and file builders.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace cocoon::enforcer::testing {

// A fresh directory under /tmp, removed (without following links) on destruction.
class TempDir {
 public:
  explicit TempDir(const char* tag = "cocoon-wd");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0644);
std::string ReadText(const std::string& path);
void MakeDirs(const std::string& path);
void MakeSocket(const std::string& path);
bool Exists(const std::string& path);  // lstat
ino_t Inode(const std::string& path);

// Runs `body` in a forked child inside a private mount namespace (/ made
// rprivate first), so nothing it mounts reaches the host. Returns the child's
// exit code, or 128+signal.
int RunInMountNamespace(const std::function<int()>& body);

}  // namespace cocoon::enforcer::testing
