#pragma once
// The record getdents64(2) fills in. glibc only gained a wrapper (and its
// `struct dirent64` is not guaranteed to match the kernel's layout when
// _FILE_OFFSET_BITS differs), so the directory walkers read the raw
// syscall's buffer through this one definition (man 2 getdents).

#include <cstdint>

namespace cocoon::enforcer {

struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

}  // namespace cocoon::enforcer
