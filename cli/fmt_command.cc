// `cocoon fmt FILE [--check] [--write]`: prints the canonical formatting of a
// policy, keeping its comments. Formatting twice gives the same text.
#include <iostream>

#include "cli/command_registry.h"
#include "compiler/common/file_replace.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/loader.h"

namespace cocoon::cli {
namespace {

struct FmtOptions {
  std::vector<std::string> files;
  bool check = false;
  bool write = false;
};

// Before each file's text on stdout when there are several, as head(1)
// does: without it, `cocoon fmt a b` printed the two policies run together.
enum class FileHeader { kNone, kFirst, kNext };

int FormatOne(const std::string& file, const FmtOptions& options, FileHeader header) {
  std::string text, error;
  if (!frontend::ReadPolicyFile(file, 4 << 20, text, error)) {
    std::cerr << "ERROR: " << error << "\n";
    return 1;
  }
  Diagnostics diagnostics;
  std::optional<std::string> formatted = frontend::FormatPolicy(file, text, diagnostics);
  std::cerr << diagnostics.Render();
  if (!formatted) return 1;
  if (options.check) {
    if (*formatted == text) return 0;
    std::cerr << file << ": not canonically formatted (run: cocoon fmt --write " << file << ")\n";
    return 1;
  }
  if (options.write) {
    if (*formatted == text) return 0;
    if (Status written = ReplaceFileContents(file, *formatted); !written.ok()) {
      std::cerr << "ERROR: cannot write " << file << ": " << written.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (header == FileHeader::kNext) std::cout << "\n";
  if (header != FileHeader::kNone) std::cout << "==> " << file << " <==\n";
  std::cout << *formatted;
  return 0;
}

void SetUpFmtCommand(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<FmtOptions>();
  CLI::App* cmd = app.add_subcommand("fmt", "Print policies in canonical formatting (comments kept)");
  cmd->footer(
      "Canonical form: two-space indentation, one statement per line, blocks opened\n"
      "on their statement's line, single blank lines kept, comments kept in place.\n"
      "Formatting is idempotent.\n\n"
      "With several FILEs (and neither --check nor --write), each file's text is\n"
      "preceded by a line '==> FILE <==', and a blank line separates the files,\n"
      "as head(1) prints them. One FILE is printed alone.\n\n"
      "--write replaces each file atomically (a temporary beside it, then a rename),\n"
      "keeping its permissions; a symlink is followed and its target rewritten. A\n"
      "hard link to the file keeps the old text (the name gets a new inode).\n\n"
      "Exit status: 0 ok (with --check: already canonical), 1 parse error or not\n"
      "canonical, 2 usage error.\n\n"
      "Examples:\n"
      "  cocoon fmt policies/strict.cocoon\n"
      "  cocoon fmt --check policies/*.cocoon      # in CI");
  cmd->add_option("FILE", options->files, "Policy files (.cocoon)")->required()->check(CLI::ExistingFile);
  auto* check = cmd->add_flag("--check", options->check, "Write nothing; exit 1 naming each file that is not canonical");
  cmd->add_flag("-w,--write", options->write, "Rewrite the files in place")->excludes(check);
  cmd->callback([options, &result] {
    int code = 0;
    bool first = true;
    for (const std::string& file : options->files) {
      FileHeader header = options->files.size() < 2 ? FileHeader::kNone : first ? FileHeader::kFirst : FileHeader::kNext;
      first = false;
      code = std::max(code, FormatOne(file, *options, header));
    }
    result.exit_code = code;
  });
}

}  // namespace

COCOON_REGISTER_COMMAND(fmt, SetUpFmtCommand);

}  // namespace cocoon::cli
