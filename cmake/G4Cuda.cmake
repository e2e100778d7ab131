# The CUDA backend (src/kernels/cuda, issue #7). G4_CUDA defaults to ON when nvcc is found
# (/usr/local/cuda/bin/nvcc on every g4 machine, CI included); OFF builds exactly as before.
#
# Two libraries:
#   g4_kernels_cuda_host: the pure C++ part (device policy, tile choice), built with or without
#     CUDA so its tests run everywhere, GPU or not.
#   g4_kernels_cuda: the kernels (*.cu, one nvcc unit per op so a 2-core machine builds them in
#     parallel) and the cudart-facing .cc files; only with G4_CUDA.
# The host files are listed by name in G4_CUDA_HOST_SOURCES; every other *.cc / *.cu under
# src/kernels/cuda is device code and is picked up by glob.
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
   AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
endif()
include(CheckLanguage)
check_language(CUDA)
set(G4_CUDA_DEFAULT OFF)
if(CMAKE_CUDA_COMPILER)
  set(G4_CUDA_DEFAULT ON)
endif()
option(G4_CUDA "Build the CUDA backend (needs nvcc; GPU tests skip without a device)"
       ${G4_CUDA_DEFAULT})

set(G4_CUDA_HOST_NAMES policy.cc tiles.cc)
set(G4_CUDA_HOST_SOURCES)
foreach(name ${G4_CUDA_HOST_NAMES})
  if(EXISTS ${PROJECT_SOURCE_DIR}/src/kernels/cuda/${name})
    list(APPEND G4_CUDA_HOST_SOURCES ${PROJECT_SOURCE_DIR}/src/kernels/cuda/${name})
  endif()
endforeach()
add_library(g4_kernels_cuda_host STATIC ${G4_CUDA_HOST_SOURCES})
target_include_directories(g4_kernels_cuda_host PUBLIC ${PROJECT_SOURCE_DIR}/src)
g4_lib_options(g4_kernels_cuda_host)
target_link_libraries(g4_kernels_cuda_host PUBLIC g4_core)

set(G4_CUDA_LIBS)
if(G4_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "G4_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
  # Turing, Ampere (A100, A10/3090), Ada (L4) and Hopper (H100/H200); override with
  # -DCMAKE_CUDA_ARCHITECTURES=90 for a one-machine build.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75;80;86;89;90" CACHE STRING "CUDA architectures")
  endif()
  enable_language(CUDA)
  # CMake 3.25 knows no CUDA20 dialect for nvcc; the .cu files are C++17 (host code is C++20).
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)

  file(GLOB G4_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/cuda/*.cu
       ${PROJECT_SOURCE_DIR}/src/kernels/cuda/*.cc)
  if(G4_CUDA_HOST_SOURCES)
    list(REMOVE_ITEM G4_CUDA_SOURCES ${G4_CUDA_HOST_SOURCES})
  endif()
  add_library(g4_kernels_cuda STATIC ${G4_CUDA_SOURCES})
  target_include_directories(g4_kernels_cuda PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(g4_kernels_cuda PRIVATE
                         $<$<COMPILE_LANGUAGE:CXX>:${G4_WARNINGS}>
                         $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall>)
  # cudart only (no cuBLAS in this toolkit); static, so the binaries need no libcudart.so at
  # run time and start (and report "no device") on machines without a driver.
  target_link_libraries(g4_kernels_cuda PUBLIC g4_kernels_cuda_host g4_core
                        PRIVATE g4_kernels_cpu g4_kernels_ref CUDA::cudart_static)
  set(G4_CUDA_LIBS g4_kernels_cuda)
  if(G4_BUILD_BENCHMARKS)
    # HBM copy bandwidth, the decode roofline (scripts/device-check.sh).
    add_executable(g4_cuda_bandwidth ${PROJECT_SOURCE_DIR}/benchmarks/cuda/copy_bandwidth.cc)
    target_link_libraries(g4_cuda_bandwidth PRIVATE g4_kernels_cuda CUDA::cudart_static)
  endif()
  message(STATUS "g4: CUDA backend ON (archs ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "g4: CUDA backend OFF")
endif()

# g4_cuda_tests: tests/kernels/cuda. The host tests (policy, tiles) always build and run; the
# GPU tests build with G4_CUDA and skip at run time when no device is present.
function(g4_cuda_test_suite)
  set(host_tests)
  foreach(name policy_test.cc tiles_test.cc backend_test.cc)
    if(EXISTS ${PROJECT_SOURCE_DIR}/tests/kernels/cuda/${name})
      list(APPEND host_tests ${PROJECT_SOURCE_DIR}/tests/kernels/cuda/${name})
    endif()
  endforeach()
  if(G4_CUDA)
    # staged_ops.cc: the host-pointer adapter over the cuda::dev ops, for the per-op tests.
    file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/kernels/cuda/*_test.cc)
    list(APPEND srcs ${PROJECT_SOURCE_DIR}/tests/kernels/cuda/staged_ops.cc)
    set(libs g4_kernels_cuda g4_ops g4_kernels_ref g4_kernels_cpu CUDA::cudart_static)
  else()
    set(srcs ${host_tests})
    set(libs g4_kernels_cuda_host g4_ops)
  endif()
  if(NOT srcs)
    return()
  endif()
  add_executable(g4_cuda_tests ${srcs})
  target_include_directories(g4_cuda_tests PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/tests)
  g4_test_options(g4_cuda_tests)
  target_link_libraries(g4_cuda_tests PRIVATE ${libs} GTest::gtest GTest::gtest_main)
  if(G4_CUDA)
    target_compile_definitions(g4_cuda_tests PRIVATE G4_HAS_CUDA)
  endif()
  include(GoogleTest)
  gtest_discover_tests(g4_cuda_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                       TEST_PREFIX "cuda." DISCOVERY_TIMEOUT 60)
endfunction()
