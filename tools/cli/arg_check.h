// Unknown commands and flags, named with the closest known one, before CLI11 parses: CLI11
// reports a misspelt required flag as missing ("--prompt is required" for `--promt`) and an
// unknown command as "A subcommand is required", which hides the actual typo.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace g4::cli {

// Levenshtein distance between two ASCII strings.
int EditDistance(const std::string& a, const std::string& b);

// The candidate closest to `word`, if it is close enough to be a plausible typo.
std::optional<std::string> ClosestMatch(const std::string& word,
                                        const std::vector<std::string>& candidates);

// The error for the first unknown command or flag in `args` (argv without the program name), or
// nothing when every command and flag is known (values are not checked: CLI11 does that).
std::optional<std::string> FindUnknownArgument(const CLI::App& app,
                                               const std::vector<std::string>& args);

}  // namespace g4::cli
