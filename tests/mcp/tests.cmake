# Tests of the MCP server binary (included from the top-level
# CMakeLists.txt): mcp_tests (GoogleTest: its pieces, and the binary fed raw
# lines), mcp_sdk_client* (a real client, the official TypeScript SDK on
# Node; exit code 77 means "skipped": no node or npm) and mcp_python_sdk*
# (the official Python SDK).
if(TARGET sly-agent-q-mcp)
  file(GLOB MCP_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/mcp/*.cpp)
  add_executable(mcp_tests ${MCP_TEST_SOURCES})
  target_link_libraries(mcp_tests PRIVATE agentq_mcp GTest::gtest GTest::gtest_main)
  target_include_directories(mcp_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)  # common/child_process.hpp
  target_compile_definitions(mcp_tests PRIVATE AGENTQ_MCP_BINARY="$<TARGET_FILE:sly-agent-q-mcp>")
  add_dependencies(mcp_tests sly-agent-q-mcp)
  gtest_discover_tests(mcp_tests TEST_PREFIX "mcp." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

  add_test(NAME mcp_sdk_client
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/run-sdk-client.sh $<TARGET_FILE:sly-agent-q-mcp>)
  set_tests_properties(mcp_sdk_client PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RESOURCE_LOCK mcp_node_modules)

  # The SDK's Streamable HTTP client against sly-agent-q-mcp --http.
  add_test(NAME mcp_sdk_client_http
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/run-sdk-client.sh $<TARGET_FILE:sly-agent-q-mcp>
                   sdk-client-http.test.mjs)
  set_tests_properties(mcp_sdk_client_http PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RESOURCE_LOCK mcp_node_modules)

  # The same client through sly-agent-q-mcp --emacs, against a batch Emacs
  # serving MCP with the module built here.
  if(TARGET sly-agent-q-module)
    add_test(NAME mcp_sdk_client_emacs
             COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/run-sdk-client.sh $<TARGET_FILE:sly-agent-q-mcp>
                     sdk-client-emacs.test.mjs)
    set_tests_properties(mcp_sdk_client_emacs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RESOURCE_LOCK mcp_node_modules
                         ENVIRONMENT "SLY_AGENT_Q_MODULE=$<TARGET_FILE:sly-agent-q-module>")
    add_test(NAME mcp_sdk_client_emacs_http
             COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/run-sdk-client.sh $<TARGET_FILE:sly-agent-q-mcp>
                     sdk-client-emacs-http.test.mjs)
    set_tests_properties(mcp_sdk_client_emacs_http PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RESOURCE_LOCK mcp_node_modules
                         ENVIRONMENT "SLY_AGENT_Q_MODULE=$<TARGET_FILE:sly-agent-q-module>")
  endif()

  # The official MCP Python SDK (Debian unstable's python3-mcp, fetched into
  # the build directory by tests/mcp/python/fetch-sdk.sh; nothing is
  # installed on the system) as the client: headless over stdio and HTTP,
  # and through a batch Emacs over stdio and HTTP.
  add_test(NAME mcp_python_sdk
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/python/run-sdk.sh $<TARGET_FILE:sly-agent-q-mcp>
                   ${CMAKE_BINARY_DIR}/python-sdk HeadlessStdio HeadlessHttp)
  set_tests_properties(mcp_python_sdk PROPERTIES TIMEOUT 600)
  if(TARGET sly-agent-q-module)
    add_test(NAME mcp_python_sdk_emacs
             COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/python/run-sdk.sh $<TARGET_FILE:sly-agent-q-mcp>
                     ${CMAKE_BINARY_DIR}/python-sdk EmacsStdio EmacsHttp)
    set_tests_properties(mcp_python_sdk_emacs PROPERTIES TIMEOUT 600
                         ENVIRONMENT "SLY_AGENT_Q_MODULE=$<TARGET_FILE:sly-agent-q-module>")
  endif()
endif()
