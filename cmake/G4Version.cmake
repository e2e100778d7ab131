# Run at build time (cmake -P): writes OUT, the definition of g4::cli::VersionLine() with the
# commit of SOURCE_DIR, only when it changed, so a commit relinks g4 and nothing else rebuilds.
# Inputs: SOURCE_DIR, OUT, VERSION.
find_package(Git QUIET)
set(commit "unknown")
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" describe --always --dirty
                  OUTPUT_VARIABLE described RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed AND described)
    set(commit "${described}")
  endif()
endif()
set(text "// Written by cmake/G4Version.cmake at build time.
#include \"version.h\"

namespace g4::cli {

std::string VersionLine() { return \"g4 ${VERSION} (commit ${commit})\"; }

}  // namespace g4::cli
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
