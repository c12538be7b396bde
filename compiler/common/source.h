// Source owns the text of one policy file and its display name. Spans are
// byte offsets into that text; they become line:col only when printed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cocoon {

// Half-open byte range [begin, end) in a Source's text.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;

  uint32_t size() const { return end > begin ? end - begin : 0; }
  bool operator==(const Span&) const = default;
};

// 1-based line and column. Columns count bytes, as compilers such as clang do
// for non-ASCII text; the caret under an echoed line is placed by display
// width instead (RenderDiagnostic, display_text.h).
struct LineCol {
  uint32_t line = 1;
  uint32_t column = 1;
};

class Source {
 public:
  Source(std::string name, std::string text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  LineCol Locate(uint32_t offset) const;
  // The text of a 1-based line, without its newline.
  std::string_view Line(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

using SourcePtr = std::shared_ptr<const Source>;

}  // namespace cocoon
