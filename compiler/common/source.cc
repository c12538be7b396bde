#include "compiler/common/source.h"

#include <algorithm>

namespace cocoon {

Source::Source(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

LineCol Source::Locate(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line_index = static_cast<uint32_t>(it - line_starts_.begin()) - 1;
  return LineCol{line_index + 1, offset - line_starts_[line_index] + 1};
}

std::string_view Source::Line(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  uint32_t begin = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] - 1 : static_cast<uint32_t>(text_.size());
  std::string_view view(text_);
  view = view.substr(begin, end - begin);
  if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
  return view;
}

}  // namespace cocoon
