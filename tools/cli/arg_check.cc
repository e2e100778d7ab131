#include "arg_check.h"

#include <algorithm>
#include <cctype>

namespace g4::cli {
namespace {

// "-5", "-0.5", "-": values, not flags (e.g. `--seed -1`, a file named "-").
bool LooksLikeValue(const std::string& arg) {
  return arg.size() < 2 || std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.';
}

// Every spelling of `app`'s options: "--prompt", "-h", ...
std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string Suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::optional<std::string> best = ClosestMatch(word, candidates);
  return best ? "; did you mean '" + *best + "'?" : "";
}

}  // namespace

int EditDistance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> ClosestMatch(const std::string& word,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  int best_distance = 0;
  for (const std::string& c : candidates) {
    const int d = EditDistance(word, c);
    if (!best || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A third of the word, at least 2 edits: "sevre" -> "serve", "--promt" -> "--prompt", but
  // "--foo" suggests nothing.
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  if (!best || best_distance > limit) return std::nullopt;
  return best;
}

std::optional<std::string> FindUnknownArgument(const CLI::App& app,
                                               const std::vector<std::string>& args) {
  const CLI::App* scope = &app;
  std::string where = app.get_name();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // everything after is positional
    if (arg.size() > 1 && arg[0] == '-' && !LooksLikeValue(arg)) {
      // "--name=value" and "-n" (CLI11 also accepts "-nVALUE": check the first letter only).
      std::string name = arg.substr(0, arg.find('='));
      if (name[1] != '-') name = name.substr(0, 2);
      const std::vector<std::string> known = FlagNames(*scope);
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        return where + ": unknown flag '" + name + "'" + Suggestion(name, known);
      }
      continue;
    }
    // The first bare word must be a command; later ones are values or positionals.
    if (scope == &app) {
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
      const CLI::App* sub = nullptr;
      for (const CLI::App* s : app.get_subcommands({})) {
        if (s->check_name(arg)) sub = s;
      }
      if (!sub) {
        std::string list;
        for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
        return where + ": unknown command '" + arg + "'" + Suggestion(arg, commands) +
               " (commands: " + list + ")";
      }
      scope = sub;
      where = app.get_name() + " " + sub->get_name();
    }
  }
  return std::nullopt;
}

}  // namespace g4::cli
