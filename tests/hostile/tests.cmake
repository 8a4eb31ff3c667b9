# The hostile-input corpus (tests/hostile/cases, made by make-cases.py) run
# against the MCP dispatcher in this process and through the real
# sly-agent-q-mcp binary (included from the top-level CMakeLists.txt).
if(TARGET sly-agent-q-mcp)
  add_executable(hostile_tests
    ${CMAKE_SOURCE_DIR}/tests/hostile/hostile_test.cpp
    ${CMAKE_SOURCE_DIR}/tests/hostile/hostile_case.cpp
    ${CMAKE_SOURCE_DIR}/tests/hostile/generated_cases.cpp)
  target_link_libraries(hostile_tests PRIVATE agentq_mcp agentq_ecl GTest::gtest GTest::gtest_main)
  target_include_directories(hostile_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)  # common/child_process.hpp
  target_compile_definitions(hostile_tests PRIVATE
    AGENTQ_MCP_BINARY="$<TARGET_FILE:sly-agent-q-mcp>"
    AGENTQ_HOSTILE_CASES="${CMAKE_SOURCE_DIR}/tests/hostile/cases")
  add_dependencies(hostile_tests sly-agent-q-mcp)
  gtest_discover_tests(hostile_tests TEST_PREFIX "hostile." DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endif()
