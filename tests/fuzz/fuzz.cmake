# mcp_fuzz: the libFuzzer target over the MCP entry points (make fuzz).
if(AGENTQ_FUZZ AND TARGET agentq_mcp)
  add_executable(mcp_fuzz ${CMAKE_SOURCE_DIR}/tests/fuzz/mcp_fuzz.cpp)
  target_link_libraries(mcp_fuzz PRIVATE agentq_mcp)
  target_link_options(mcp_fuzz PRIVATE -fsanitize=fuzzer)
endif()
