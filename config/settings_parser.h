// The settings file's schema (configs/README.md): reads an IniFile into fastcm::Settings, every
// value checked. load_settings (fastcm/settings.h) is this parser; fastcm-bench calls it directly
// to learn which keys the file gave, since its own defaults differ from the library's.
// Thread contract: any thread, concurrently.
#pragma once

#include <string>
#include <vector>

#include "fastcm/settings.h"

namespace fastcm::config {

// As load_settings; when `given` is not null it receives "section.key" for every key the file
// gave (only on success).
Status parse_settings(const std::string& path, Settings& out, std::vector<std::string>* given,
                      SettingsError* why);

}  // namespace fastcm::config
