// g4: the Gemma 4 inference engine's command-line front end.
#include <cstdio>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"g4: a Gemma 4 inference engine"};
  app.require_subcommand(1);
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
  CLI11_PARSE(app, argc, argv);
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) return run();
  }
  return 1;
}
