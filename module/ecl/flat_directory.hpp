// Removing a directory of plain files (ECL's temporary files lie flat in
// the compile child's private one) with system calls only (open,
// getdents64, unlinkat, rmdir), no allocation, so that a signal handler
// that interrupted malloc or the collector may call it too: the compile
// child and sly-agent-q-run-compiler do when the process they work for
// dies, and the session when a batch ends or Emacs exits.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace agentq::ecl {

// Removes the files in PATH (not its subdirectories) and PATH itself.
inline void remove_flat_directory(const char* path) {
  for (int pass = 0; pass < 2; ++pass) {  // a file made meanwhile
    const int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    alignas(8) char buffer[4096];
    for (;;) {
      const long got = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (got <= 0) break;
      for (long offset = 0; offset < got;) {
        // struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name.
        const char* record = buffer + offset;
        unsigned short length = 0;
        memcpy(&length, record + 16, sizeof length);
        const char* name = record + 19;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) unlinkat(fd, name, 0);
        if (length == 0) break;
        offset += length;
      }
    }
    close(fd);
    if (rmdir(path) == 0) return;
  }
}

}  // namespace agentq::ecl
