// `emo serve [--config FILE] [--status]`: the clock service (runtime/clock_service.h;
// docs/runtime.md, "The clock service"), run as root, e.g. by packaging/emo-serve.service.
// --status asks a running service for its leases instead. Bad input: one line, exit 2.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "runtime/clock_client.h"
#include "runtime/clock_service.h"

namespace emo::cli {
namespace {

constexpr const char* kDefaultConfig = "/etc/emo/serve.conf";

struct ServeOptions {
  std::string config = kDefaultConfig;
  bool status = false;
};

int run_serve(const ServeOptions& o, bool config_given) {
  auto config = runtime::load_clock_service_config(o.config, config_given);
  if (o.status) {
    runtime::ClockServiceClient client(config.socket);
    const auto leases = client.status();
    fmt::print("{}: {} lease{}\n", config.socket, leases.size(), leases.size() == 1 ? "" : "s");
    for (const auto& l : leases) fmt::print("{}\n", l);
    return 0;
  }
  runtime::ClockService service(std::move(config), runtime::Nvml::open());
  return service.run();
}

}  // namespace

Action add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Run the clock service (as root): users' jobs lock clocks through it");
  CLI::Option* config = cmd->add_option("--config", o->config, "Config file (default /etc/emo/serve.conf; absent = defaults)");
  cmd->add_flag("--status", o->status, "List the running service's leases and exit");
  return [cmd, o, config]() -> int {
    if (!cmd->parsed()) return -1;
    return run_serve(*o, config->count() > 0);
  };
}

void add_via_service_flag(CLI::App* cmd) {
  cmd->add_flag_callback(
      "--via-service", [] { ::setenv("EMO_CLOCK_SERVICE", "always", 1); },
      "Change clocks through the clock service (emo serve) even with permission to do it directly");
}

}  // namespace emo::cli
