# The libFuzzer harnesses as plain test programs (tests/fuzz/replay_main.cc): each runs its seed
# corpus and regression reproducers, then deterministic mutants of them, linked with the
# ordinary libraries. Registered in the ASan+UBSan build only (scripts/test.sh, stage asan),
# where a sanitizer report fails the test; coverage-guided fuzzing is scripts/fuzz.sh (clang).
file(GLOB G4_FUZZ_REPLAY_HARNESSES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/*_fuzz.cc)
foreach(src ${G4_FUZZ_REPLAY_HARNESSES})
  get_filename_component(stem ${src} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" name ${stem})
  set(target g4_fuzz_replay_${name})
  add_executable(${target} ${src} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.cc)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/tests)
  g4_test_options(${target})
  target_link_libraries(${target} PRIVATE g4_server g4_model)
  add_test(NAME fuzz_replay_${name}
           COMMAND ${target} --mutants 300 --seconds 15
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
