// A private temporary directory (mode 0700, from mkdtemp), removed with
// everything in it at the end of the scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace agentq::fixtures {

struct TempDir {
  explicit TempDir(const char* prefix = "agentq") {
    std::string name = std::string("/tmp/") + prefix + "-XXXXXX";
    path = ::mkdtemp(name.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

}  // namespace agentq::fixtures
