# Every dependency is a Debian 12 package (scripts/setup.sh installs them); nothing is fetched.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(hwy REQUIRED)
# Debian's cpp-httplib ships a compiled library with a pkg-config file, no CMake config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# libcurl4-openssl-dev: g4 pull's HTTPS client (CMake's own FindCURL module).
find_package(CURL REQUIRED)
find_package(CLI11 QUIET CONFIG)
if(NOT TARGET CLI11::CLI11)
  # Debian's libcli11-dev is header-only; make an interface target if no config was found.
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
if(G4_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(G4_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
