#include "config/ini_file.h"

#include <rte_cfgfile.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace fastcm::config {

namespace {

// librte_cfgfile's name for keys found before any "[section]" (CFG_FLAG_GLOBAL_SECTION).
constexpr std::string_view kGlobalSection = "GLOBAL";

struct CfgfileCloser {
  void operator()(rte_cfgfile* cfg) const noexcept { rte_cfgfile_close(cfg); }
};

std::optional<IniFile> fail(IniError& error, std::string section, std::string key, std::string message) {
  error = IniError{std::move(section), std::move(key), std::move(message)};
  return std::nullopt;
}

}  // namespace

std::optional<IniFile> IniFile::load(const std::string& path, IniError& error) {
  // librte_cfgfile says only that it failed; opening first gives the OS's reason.
  if (std::FILE* probe = std::fopen(path.c_str(), "r"); probe == nullptr) {
    return fail(error, {}, {}, std::string("cannot open: ") + std::strerror(errno));
  } else {
    std::fclose(probe);
  }
  // Empty values and keys before the first section are read, so that they can be named in an
  // error; without these flags librte_cfgfile refuses the whole file without saying where.
  const std::unique_ptr<rte_cfgfile, CfgfileCloser> cfg(
      rte_cfgfile_load(path.c_str(), CFG_FLAG_GLOBAL_SECTION | CFG_FLAG_EMPTY_VALUES));
  if (!cfg) {
    return fail(error, {}, {},
                "not an INI file librte_cfgfile can read (each line must be a [section], a "
                "key = value pair or a ';' comment; names up to 63, values up to 255 characters)");
  }
  IniFile file;
  const int sections = rte_cfgfile_num_sections(cfg.get(), nullptr, 0);
  for (int s = 0; s < sections; ++s) {
    char name[CFG_NAME_LEN];
    const int entries = rte_cfgfile_section_num_entries_by_index(cfg.get(), name, s);
    if (entries < 0) return fail(error, {}, {}, "librte_cfgfile lost a section while reading it");
    std::vector<rte_cfgfile_entry> raw(static_cast<std::size_t>(entries));
    if (rte_cfgfile_section_entries_by_index(cfg.get(), s, name, raw.data(), entries) != entries) {
      return fail(error, name, {}, "librte_cfgfile lost the section's keys while reading them");
    }
    if (name == kGlobalSection && entries > 0) {
      return fail(error, {}, raw.front().name, "comes before the first [section]");
    }
    if (file.find(name) != nullptr) return fail(error, name, {}, "the section is given twice");
    Section section{name, {}, false};
    for (const rte_cfgfile_entry& entry : raw) {
      for (const Entry& seen : section.entries) {
        if (seen.key == entry.name) return fail(error, name, entry.name, "is given twice");
      }
      section.entries.push_back(Entry{entry.name, entry.value, false});
    }
    if (name != kGlobalSection) file.sections_.push_back(std::move(section));
  }
  return file;
}

const IniFile::Section* IniFile::find(std::string_view name) const noexcept {
  for (const Section& section : sections_) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

bool IniFile::has_section(std::string_view section) const noexcept {
  const Section* found = find(section);
  if (found != nullptr) found->asked = true;
  return found != nullptr;
}

std::optional<std::string_view> IniFile::take(std::string_view section, std::string_view key) noexcept {
  for (Section& s : sections_) {
    if (s.name != section) continue;
    s.asked = true;
    for (Entry& entry : s.entries) {
      if (entry.key == key) {
        entry.read = true;
        return entry.value;
      }
    }
  }
  return std::nullopt;
}

void IniFile::take_section(std::string_view section) noexcept {
  for (Section& s : sections_) {
    if (s.name != section) continue;
    s.asked = true;
    for (Entry& entry : s.entries) entry.read = true;
  }
}

std::optional<IniError> IniFile::unread() const {
  for (const Section& section : sections_) {
    if (!section.asked) return IniError{section.name, {}, "unknown section"};
    for (const Entry& entry : section.entries) {
      if (!entry.read) return IniError{section.name, entry.key, "unknown key"};
    }
  }
  return std::nullopt;
}

}  // namespace fastcm::config
