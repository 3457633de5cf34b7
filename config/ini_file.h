// An INI file as DPDK's librte_cfgfile reads it ("[section]" lines, "key = value" lines, ';'
// comments), held as plain strings so that nothing outside ini_file.cpp sees a DPDK header.
//
// Every key must be taken by the schema that reads the file (settings_parser.cpp): take() marks a
// key as read, and unread() names the first section or key nobody took, so an unknown or
// misspelt one is an error instead of being ignored.
//
// Thread contract: an IniFile is used by one thread at a time; load() may run on any thread (no
// DPDK EAL is needed).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fastcm::config {

// One problem with a file: the section and key it concerns (empty when it concerns the file or the
// section as a whole) and what is wrong, in words.
struct IniError {
  std::string section;
  std::string key;
  std::string message;
};

class IniFile {
 public:
  // Reads `path`. Errors (nullopt, `error` set, section and key empty): the file cannot be opened
  // (the OS's reason), librte_cfgfile cannot parse it (a line that is neither a section, a
  // "key = value" pair nor a comment, a name longer than 63 or a value longer than 255
  // characters; librte_cfgfile tells no line number), a key before the first section, a section
  // or a key given twice. Blocks on the file system.
  [[nodiscard]] static std::optional<IniFile> load(const std::string& path, IniError& error);

  [[nodiscard]] bool has_section(std::string_view section) const noexcept;
  // The value of `key` in `section` (whitespace around it removed by librte_cfgfile), marking the
  // key read; nullopt when the file does not have it.
  [[nodiscard]] std::optional<std::string_view> take(std::string_view section, std::string_view key) noexcept;
  // Marks every key of `section` read (for a section a caller chose to ignore as a whole).
  void take_section(std::string_view section) noexcept;
  // The first section (key empty) or key that no take() read, in file order; nullopt when every
  // key was read. A section with no key counts as unread unless has_section() asked for it.
  [[nodiscard]] std::optional<IniError> unread() const;

 private:
  struct Entry {
    std::string key;
    std::string value;
    bool read = false;
  };
  struct Section {
    std::string name;
    std::vector<Entry> entries;
    mutable bool asked = false;
  };

  [[nodiscard]] const Section* find(std::string_view name) const noexcept;

  std::vector<Section> sections_;
};

}  // namespace fastcm::config
