// Helpers shared by the stats tests: a private directory per test for segment files.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "control/cli/options.hpp"

namespace ws::stats::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wsstats-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    path_ = made != nullptr ? made : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// wirespeed-control's options parsed from the words after the program name.
inline cli::ParseResult parse_args(std::vector<std::string> args) {
  args.insert(args.begin(), "wirespeed-control");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::parse_options(static_cast<int>(argv.size()), argv.data());
}

}  // namespace ws::stats::test
