set(G4_WARNINGS -Wall -Wextra -Wno-unused-parameter)
# G4_SANITIZE: OFF | address (ON, TRUE, 1 too: the option used to be a bool) | thread.
# address: ASan on every target, UBSan on g4's own code (g4_lib_options). On test code UBSan
# doubled the compile time of the ASan build (52 s against 25 s for a server test, 2 cores),
# and what it checks there is the tests' own arithmetic.
set(G4_LIB_SANITIZE "")
set(G4_ASAN OFF)
string(TOLOWER "${G4_SANITIZE}" g4_sanitize)
if(g4_sanitize STREQUAL "thread")
  # TSan cannot be combined with ASan; it instruments every access, so keep some optimization.
  # -g1: line tables are what its reports print.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=thread)
elseif(g4_sanitize MATCHES "^(address|on|true|yes|1)$")
  add_compile_options(-fsanitize=address -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  set(G4_LIB_SANITIZE -fsanitize=undefined)
  set(G4_ASAN ON)
elseif(NOT g4_sanitize MATCHES "^(off|false|no|0|)$")
  message(FATAL_ERROR "G4_SANITIZE must be OFF, address or thread, not '${G4_SANITIZE}'")
endif()

# Test programs compile at -O1 in optimized builds: the work they time runs in the libraries
# (-O3), and -O1 takes a quarter less compile time than -O3 on gtest and json-heavy files.
set(G4_TEST_OPT "")
if(CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo|MinSizeRel)$")
  set(G4_TEST_OPT -O1)
endif()

# g4_lib_options(target): warnings and the library sanitizers of a target built from src/.
function(g4_lib_options target)
  target_compile_options(${target} PRIVATE ${G4_WARNINGS} ${G4_LIB_SANITIZE})
endfunction()

# g4_test_options(target): warnings and the test optimization level of a test program, which
# the target g4_test_programs builds (the sanitizer stages build that, not the g4 binary).
add_custom_target(g4_test_programs)
function(g4_test_options target)
  target_compile_options(${target} PRIVATE ${G4_WARNINGS} ${G4_TEST_OPT})
  add_dependencies(g4_test_programs ${target})
endfunction()

# g4_library(target dir): a static library of src/<dir>/*.cc (recursive: subfolders of a
# library folder, e.g. runtime/kv_cache, belong to it).
function(g4_library target dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${dir}/*.cc)
  if(NOT srcs)  # a folder still being written: keep the target so links resolve
    set(srcs ${PROJECT_SOURCE_DIR}/cmake/empty.cc)
  endif()
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  g4_lib_options(${target})
endfunction()

# g4_test_suite(dir libs...): one GoogleTest binary of tests/<dir>/*_test.cc, registered
# test by test with ctest. Tests run from the repo root so ../shared/golden resolves.
function(g4_test_suite dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${dir}/*.cc)
  # tests/kernels/cuda is its own binary (g4_cuda_tests, cmake/G4Cuda.cmake).
  list(FILTER srcs EXCLUDE REGEX "/tests/kernels/cuda/")
  # tests/model/gguf_model_test.cc needs the gguf_fixtures ctest fixture (CMakeLists.txt).
  list(FILTER srcs EXCLUDE REGEX "/tests/model/gguf_model_test.cc$")
  # tests/model/gemma3_real_test.cc needs the gemma3_reference ctest fixture (CMakeLists.txt).
  list(FILTER srcs EXCLUDE REGEX "/tests/model/gemma3_real_test.cc$")
  # tests/model/ct_w4a16_test.cc needs the ct_w4a16 ctest fixture (CMakeLists.txt).
  list(FILTER srcs EXCLUDE REGEX "/tests/model/ct_w4a16_test.cc$")
  if(NOT srcs)
    return()
  endif()
  set(target g4_${dir}_tests)
  add_executable(${target} ${srcs})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  g4_test_options(${target})
  target_link_libraries(${target} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${target} PRIVATE G4_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             G4_BINARY_DIR="${PROJECT_BINARY_DIR}")
  include(GoogleTest)
  # Labelled with the folder, so a stage can pick suites (scripts/test.sh: ctest -L).
  gtest_discover_tests(${target} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS ${dir})
endfunction()
