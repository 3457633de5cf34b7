// fastcm-bench --config FILE: a settings file (fastcm/settings.h, configs/README.md) as the
// defaults of the command line. A key the file gives sets the option it matches unless the
// command line gives that option too; keys without an option of their own (auto-MRA, idle spins,
// the listen's backlog policy, ...) go into the engines' configuration. fastcm-bench sizes the
// endpoint tables, MAD pools, inboxes, receive queues and the backlog for its run: a size the
// file gives is kept when it is larger.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "bench/fastcm_bench/options.h"

namespace fastcm::bench {

// Reads `options.config_path` into `options`, the options `app` parsed winning. Returns the
// problem in one line (the file's, naming its section and key, or a setting fastcm-bench cannot
// follow), empty on success. Thread contract: main thread, during option parsing.
[[nodiscard]] std::string apply_config_file(const CLI::App& app, Options& options);

}  // namespace fastcm::bench
