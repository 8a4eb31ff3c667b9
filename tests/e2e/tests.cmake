# End-to-end tests that drive a real interactive Emacs (included from the
# top-level CMakeLists.txt).  Exit code 77 means "skipped" (tmux missing).
add_test(NAME e2e_cg_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/cg-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_cg_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME e2e_commands_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/commands-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_commands_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 90)
add_test(NAME e2e_approval_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/approval-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_approval_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME e2e_review_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/review-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_review_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME e2e_async_minibuffer_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/async-minibuffer-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_async_minibuffer_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME e2e_chat_tmux COMMAND bash ${CMAKE_SOURCE_DIR}/tests/e2e/chat-tmux.sh ${CMAKE_BINARY_DIR})
set_tests_properties(e2e_chat_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
