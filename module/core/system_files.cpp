#include "core/system_files.hpp"

#include <fstream>
#include <sstream>

namespace agentq {

std::optional<std::string> read_system_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace agentq
