// Subcommands of the `g4` binary. Each registers its options on the CLI11 app and returns the
// exit code of its run; the library underneath reports errors as Status, printed here.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace g4::cli {

// A registered subcommand: run() is called when it was selected on the command line.
using RunFn = std::function<int()>;

RunFn AddLogitsCommand(CLI::App& app);
RunFn AddMakeModelCommand(CLI::App& app);
RunFn AddGenerateCommand(CLI::App& app);
RunFn AddServeCommand(CLI::App& app);
RunFn AddRunCommand(CLI::App& app);
RunFn AddChatCommand(CLI::App& app);
RunFn AddTokenizeCommand(CLI::App& app);
RunFn AddDetokenizeCommand(CLI::App& app);
RunFn AddBenchCommand(CLI::App& app);
RunFn AddPerplexityCommand(CLI::App& app);
RunFn AddPullCommand(CLI::App& app);

}  // namespace g4::cli
