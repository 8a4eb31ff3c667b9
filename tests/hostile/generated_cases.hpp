// The cases too large to commit, made when the tests run: 100,000-deep
// nesting, 50 MB strings, huge argument objects and batches; and the wrong
// type for every argument of every tool, from the server's own tools/list.
#pragma once

#include <vector>

#include "hostile_case.hpp"

namespace agentq::hostile {

// BINARY: for the sly-agent-q-mcp process, which reads lines of at most
// MAX_LINE bytes (longer ones are answered with a parse error, unread);
// else for McpServer::handle, which takes any size.
std::vector<Case> large_cases(bool binary, std::size_t max_line);

// From a tools/list result: for every tool, each argument given each JSON
// type it does not accept (-32602 naming the argument), and each required
// argument missing (-32602).
std::vector<Case> wrong_type_cases(const json& tools_list_result);

}  // namespace agentq::hostile
