# The parts that need ECL and Emacs: the compiled Lisp side, the runtime,
# the Emacs module and their tests.

find_program(ECL_PROGRAM ecl REQUIRED)
find_program(ECL_CONFIG ecl-config REQUIRED)
execute_process(COMMAND ${ECL_CONFIG} --cflags OUTPUT_VARIABLE ECL_CFLAGS OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${ECL_CONFIG} --libs OUTPUT_VARIABLE ECL_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(ECL_CFLAGS UNIX_COMMAND "${ECL_CFLAGS}")
separate_arguments(ECL_LIBS UNIX_COMMAND "${ECL_LIBS}")
find_path(EMACS_MODULE_INCLUDE emacs-module.h REQUIRED)

# ---------------------------------------------------------------- lisp/ → native static library
set(LISP_SOURCES
  ${CMAKE_SOURCE_DIR}/lisp/package.lisp
  ${CMAKE_SOURCE_DIR}/lisp/capture.lisp
  ${CMAKE_SOURCE_DIR}/lisp/guards.lisp
  ${CMAKE_SOURCE_DIR}/lisp/errors.lisp
  ${CMAKE_SOURCE_DIR}/lisp/process-guard.lisp
  ${CMAKE_SOURCE_DIR}/lisp/evaluate.lisp
  ${CMAKE_SOURCE_DIR}/lisp/worker.lisp
  ${CMAKE_SOURCE_DIR}/lisp/session.lisp
  ${CMAKE_SOURCE_DIR}/lisp/emacs.lisp
  ${CMAKE_SOURCE_DIR}/lisp/agent-code.lisp
  ${CMAKE_SOURCE_DIR}/lisp/debugger.lisp
  ${CMAKE_SOURCE_DIR}/lisp/held-errors.lisp
  ${CMAKE_SOURCE_DIR}/lisp/tools.lisp
  ${CMAKE_SOURCE_DIR}/lisp/execution.lisp
  ${CMAKE_SOURCE_DIR}/lisp/introspection.lisp
  ${CMAKE_SOURCE_DIR}/lisp/xref.lisp
  ${CMAKE_SOURCE_DIR}/lisp/tiering.lisp
  ${CMAKE_SOURCE_DIR}/lisp/tiering-methods.lisp
  ${CMAKE_SOURCE_DIR}/lisp/compile-child.lisp
  ${CMAKE_SOURCE_DIR}/lisp/systems.lisp
  ${CMAKE_SOURCE_DIR}/lisp/repl-tools.lisp
  ${CMAKE_SOURCE_DIR}/lisp/inspector.lisp
  ${CMAKE_SOURCE_DIR}/lisp/syntax.lisp
  ${CMAKE_SOURCE_DIR}/lisp/profile.lisp
  ${CMAKE_SOURCE_DIR}/lisp/test-runner.lisp
  ${CMAKE_SOURCE_DIR}/lisp/form-edit.lisp)
set(LISP_BUILD_DIR ${CMAKE_BINARY_DIR}/lisp)
set(LISP_LIBRARY ${LISP_BUILD_DIR}/libagentq_lisp.a)
file(MAKE_DIRECTORY ${LISP_BUILD_DIR})
add_custom_command(
  OUTPUT ${LISP_LIBRARY}
  COMMAND sh -c "'${ECL_PROGRAM}' --norc --eval '(defparameter cl-user::*build-dir* \"${LISP_BUILD_DIR}/\")' --eval '(defparameter cl-user::*source-dir* \"${CMAKE_SOURCE_DIR}/lisp/\")' --load '${CMAKE_SOURCE_DIR}/lisp/build.lisp' > build.log 2>&1 || { cat build.log; exit 1; }"
  WORKING_DIRECTORY ${LISP_BUILD_DIR}
  DEPENDS ${LISP_SOURCES} ${CMAKE_SOURCE_DIR}/lisp/build.lisp
  COMMENT "Compiling lisp/ to native code with ECL"
  VERBATIM)
add_custom_target(agentq_lisp_build DEPENDS ${LISP_LIBRARY})
add_library(agentq_lisp STATIC IMPORTED GLOBAL)
set_target_properties(agentq_lisp PROPERTIES IMPORTED_LOCATION ${LISP_LIBRARY})
add_dependencies(agentq_lisp agentq_lisp_build)

# ---------------------------------------------------------------- ecl/: the runtime
file(GLOB ECL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/module/ecl/*.cpp
     ${CMAKE_SOURCE_DIR}/module/app/*.cpp)  # the composition root, shared by every front door
list(REMOVE_ITEM ECL_SOURCES ${CMAKE_SOURCE_DIR}/module/ecl/run_compiler_main.cpp)  # a program of its own
add_library(agentq_ecl STATIC ${ECL_SOURCES})
target_include_directories(agentq_ecl PUBLIC ${CMAKE_SOURCE_DIR}/module)
target_compile_options(agentq_ecl PRIVATE ${ECL_CFLAGS})
target_link_libraries(agentq_ecl PUBLIC agentq_core agentq_sys agentq_lisp ${ECL_LIBS} gc pthread)
if(AGENTQ_SANITIZE OR AGENTQ_FUZZ)
  # ECL's own accessor macros (ECL_CONS_CAR/CDR on its tagged pointers)
  # trip UBSan's alignment check at every list walk: not ours to fix.
  target_compile_options(agentq_ecl PRIVATE -fno-sanitize=alignment)
endif()

# ---------------------------------------------------------------- emacs/: the module
# Two files in build/: sly-agent-q-module.so, the small loader Emacs loads
# (module/emacs/loader.cpp), and sly-agent-q-core.so, the module itself,
# which the loader opens with every symbol bound at once (see loader.cpp).
file(GLOB EMACS_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/module/emacs/*.cpp)
list(REMOVE_ITEM EMACS_SOURCES ${CMAKE_SOURCE_DIR}/module/emacs/loader.cpp)
add_library(sly-agent-q-core MODULE ${EMACS_SOURCES})
set_target_properties(sly-agent-q-core PROPERTIES
  PREFIX ""
  OUTPUT_NAME sly-agent-q-core
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_include_directories(sly-agent-q-core PRIVATE ${EMACS_MODULE_INCLUDE})
target_compile_definitions(sly-agent-q-core PRIVATE AGENTQ_VERSION="${PROJECT_VERSION}")
target_link_libraries(sly-agent-q-core PRIVATE agentq_ecl)
target_link_options(sly-agent-q-core PRIVATE -Wl,--no-undefined)

add_library(sly-agent-q-module MODULE ${CMAKE_SOURCE_DIR}/module/emacs/loader.cpp)
set_target_properties(sly-agent-q-module PROPERTIES
  PREFIX ""
  OUTPUT_NAME sly-agent-q-module
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_include_directories(sly-agent-q-module PRIVATE ${EMACS_MODULE_INCLUDE})
target_link_libraries(sly-agent-q-module PRIVATE ${CMAKE_DL_LIBS})
target_link_options(sly-agent-q-module PRIVATE -Wl,--no-undefined)
add_dependencies(sly-agent-q-module sly-agent-q-core)

# ---------------------------------------------------------------- tests of the runtime (no Emacs)
file(GLOB ECL_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/ecl/*.cpp)
if(ECL_TEST_SOURCES)
  add_executable(ecl_tests ${ECL_TEST_SOURCES})
  target_link_libraries(ecl_tests PRIVATE agentq_ecl GTest::gtest GTest::gtest_main)
  gtest_discover_tests(ecl_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endif()

# ---------------------------------------------------------------- mcp/: the MCP server binary (headless)
# build/sly-agent-q-mcp: MCP over stdio with its own ECL, no Emacs at run time.
file(GLOB MCP_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/module/mcp/*.cpp)
list(REMOVE_ITEM MCP_SOURCES ${CMAKE_SOURCE_DIR}/module/mcp/main.cpp)
add_library(agentq_mcp STATIC ${MCP_SOURCES})
target_include_directories(agentq_mcp PUBLIC ${CMAKE_SOURCE_DIR}/module)
target_link_libraries(agentq_mcp PUBLIC agentq_core agentq_sys)
add_executable(sly-agent-q-mcp ${CMAKE_SOURCE_DIR}/module/mcp/main.cpp)
set_target_properties(sly-agent-q-mcp PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_link_libraries(sly-agent-q-mcp PRIVATE agentq_mcp agentq_ecl)

# build/sly-agent-q-run-compiler: runs ECL's gcc so that it ends with its
# caller (module/ecl/run_compiler_main.cpp); found beside the module or
# the MCP server.
add_executable(sly-agent-q-run-compiler ${CMAKE_SOURCE_DIR}/module/ecl/run_compiler_main.cpp)
set_target_properties(sly-agent-q-run-compiler PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_include_directories(sly-agent-q-run-compiler PRIVATE ${CMAKE_SOURCE_DIR}/module)
add_dependencies(agentq_ecl sly-agent-q-run-compiler)

# bench/ecl_responder: the ECL floor of the MCP round trip (bench/run.sh).
add_executable(ecl_responder ${CMAKE_SOURCE_DIR}/bench/ecl_responder.cpp)
target_compile_options(ecl_responder PRIVATE ${ECL_CFLAGS})
target_link_libraries(ecl_responder PRIVATE ${ECL_LIBS} gc)
