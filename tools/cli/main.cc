// g4: the Gemma 4 inference engine's command-line front end.
#include <cstdio>
#include <vector>

#include "arg_check.h"
#include "commands.h"
#include "version.h"

int main(int argc, char** argv) {
  CLI::App app{"g4: a Gemma 4 inference engine", "g4"};
  app.require_subcommand(1);
  app.set_version_flag("--version", g4::cli::VersionLine());
  // --help shows each option's default; subcommands inherit this when they are added.
  app.option_defaults()->always_capture_default();
  std::vector<std::pair<CLI::App*, g4::cli::RunFn>> commands;
  auto add = [&](g4::cli::RunFn (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    g4::cli::RunFn run = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(run));
  };
  add(g4::cli::AddLogitsCommand);
  add(g4::cli::AddMakeModelCommand);
  add(g4::cli::AddGenerateCommand);
  add(g4::cli::AddServeCommand);
  add(g4::cli::AddRunCommand);
  add(g4::cli::AddChatCommand);
  add(g4::cli::AddTokenizeCommand);
  add(g4::cli::AddDetokenizeCommand);
  add(g4::cli::AddBenchCommand);
  add(g4::cli::AddPerplexityCommand);
  add(g4::cli::AddPullCommand);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (auto unknown = g4::cli::FindUnknownArgument(app, args)) {
    std::fprintf(stderr, "%s\nRun with --help for more information.\n", unknown->c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  CLI11_PARSE(app, argc, argv);
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) return run();
  }
  return 1;
}
