// What `g4 --version` prints: the version and the commit the binary was built from.
#pragma once

#include <string>

namespace g4::cli {

// "g4 0.1.0 (commit 88fcf4a)"; "-dirty" marks uncommitted changes, "unknown" a build outside
// git. Defined in the version.cc the build writes (cmake/G4Version.cmake).
std::string VersionLine();

}  // namespace g4::cli
