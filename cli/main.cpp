// dtsim: the command-line front end. Parses flags and hands over to one command (cli/cmd_*.cpp).
// Bad input exits 2 with one line naming the flag or file and the rule; nothing is written on failure.
#include <cstdio>
#include <string>

#include "cli/command.hpp"
#include "core/error.hpp"

using namespace dtsim;

static int run(int argc, char** argv) {
  CLI::App app{"dtsim: predicts the iteration time and scaling of data-parallel neural-network training on GPU clusters"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  const std::string commit = DTSIM_GIT_COMMIT;
  app.set_version_flag("--version", std::string("dtsim ") + DTSIM_VERSION + (commit.empty() ? "" : " (commit " + commit + ")"));
  auto commands = cli::all_commands();
  std::vector<CLI::App*> subs;
  std::string names;
  for (auto& c : commands) {
    subs.push_back(c->add(app));
    names += (names.empty() ? "" : ", ") + subs.back()->get_name();
  }
  if (argc > 1 && argv[1][0] != '-') {
    std::string cmd = argv[1];
    bool known = false;
    for (auto* s : subs) known |= s->get_name() == cmd;
    if (!known) throw InputError("", "unknown command '" + cmd + "' (" + names + "; see dtsim --help)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    std::fprintf(stderr, "dtsim: error: %s (see dtsim --help)\n", msg.c_str());
    return 2;
  }
  for (size_t i = 0; i < subs.size(); ++i)
    if (subs[i]->parsed()) return commands[i]->run();
  return 2;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "dtsim: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim: internal error: %s\n", e.what());
    return 1;
  }
}
