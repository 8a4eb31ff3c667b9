// Reading the kernel's small text files (/proc, /sys); tests pass their own.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace agentq {

// Reads a whole file; nullopt when it cannot be read.
using ReadFile = std::function<std::optional<std::string>(const std::string& path)>;

// The running system's file at PATH.
std::optional<std::string> read_system_file(const std::string& path);

}  // namespace agentq
