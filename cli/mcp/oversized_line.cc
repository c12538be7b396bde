#include "cli/mcp/oversized_line.h"

#include <nlohmann/json.hpp>

namespace cocoon::mcp {
namespace {

using nlohmann::json;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A kept token as JSON (discarded when it is not: cut short, or empty).
json Decode(const std::string& token) {
  if (token.empty()) return json(json::value_t::discarded);
  return json::parse(token, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

void OversizedLine::Feed(std::string_view bytes) {
  size_ += bytes.size();
  for (char c : bytes) {
    if (state_ == State::kUnreadable) return;
    Step(c);
  }
}

void OversizedLine::Step(char c) {
  switch (state_) {
    case State::kStart:
      if (c == '{') state_ = State::kFirstKey;
      else if (!IsSpace(c)) state_ = State::kUnreadable;
      return;
    case State::kFirstKey:
    case State::kKey:
      if (c == '"') {
        token_.assign(1, c);
        token_too_long_ = false;
        state_ = State::kKeyString;
      } else if (c == '}' && state_ == State::kFirstKey) {
        state_ = State::kEnd;
      } else if (!IsSpace(c)) {
        state_ = State::kUnreadable;
      }
      return;
    case State::kKeyString:
      Keep(c);
      if (StringEnds(c)) EndKey();
      return;
    case State::kColon:
      if (c == ':') state_ = State::kValue;
      else if (!IsSpace(c)) state_ = State::kUnreadable;
      return;
    case State::kValue:
      if (IsSpace(c)) return;
      token_.clear();
      token_too_long_ = false;
      if (c == '{' || c == '[') {
        nesting_ = 1;
        nested_in_string_ = false;
        token_too_long_ = true;  // an object or array is no id, method or version
        state_ = State::kNested;
        return;
      }
      Keep(c);
      state_ = c == '"' ? State::kString : State::kScalar;
      return;
    case State::kString:
      Keep(c);
      if (StringEnds(c)) {
        EndValue();
        state_ = State::kAfterValue;
      }
      return;
    case State::kScalar:
      if (c == ',' || c == '}' || IsSpace(c)) {
        EndValue();
        state_ = c == ',' ? State::kKey : c == '}' ? State::kEnd : State::kAfterValue;
      } else {
        Keep(c);
      }
      return;
    case State::kNested:
      if (nested_in_string_) {
        nested_in_string_ = !StringEnds(c);
      } else if (c == '"') {
        nested_in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++nesting_;
      } else if ((c == '}' || c == ']') && --nesting_ == 0) {
        EndValue();
        state_ = State::kAfterValue;
      }
      return;
    case State::kAfterValue:
      if (c == ',') state_ = State::kKey;
      else if (c == '}') state_ = State::kEnd;
      else if (!IsSpace(c)) state_ = State::kUnreadable;
      return;
    case State::kEnd:
      if (!IsSpace(c)) state_ = State::kUnreadable;
      return;
    case State::kUnreadable:
      return;
  }
}

bool OversizedLine::StringEnds(char c) {
  if (escaped_) {
    escaped_ = false;
    return false;
  }
  if (c == '\\') {
    escaped_ = true;
    return false;
  }
  return c == '"';
}

void OversizedLine::Keep(char c) {
  if (token_too_long_) return;
  if (token_.size() == kMaxToken) {
    token_too_long_ = true;
    return;
  }
  token_ += c;
}

void OversizedLine::EndKey() {
  // Decoded, as a parser reads it: "\u0069d" is "id".
  json key = token_too_long_ ? json() : Decode(token_);
  field_ = Field::kOther;
  if (key == "id") field_ = Field::kId;
  else if (key == "method") field_ = Field::kMethod;
  else if (key == "jsonrpc") field_ = Field::kJsonrpc;
  else if (key == "result" || key == "error") result_or_error_ = true;
  state_ = State::kColon;
}

void OversizedLine::EndValue() {
  Member* member = Kept();
  if (!member) return;
  // A repeated member: the last one counts, as in the parsed message.
  member->present = true;
  member->token = token_too_long_ ? std::string() : token_;
}

OversizedLine::Member* OversizedLine::Kept() {
  switch (field_) {
    case Field::kId: return &id_;
    case Field::kMethod: return &method_;
    case Field::kJsonrpc: return &jsonrpc_;
    case Field::kOther: return nullptr;
  }
  return nullptr;
}

Message OversizedLine::Refusal(std::string error_message) const {
  Message m;
  m.kind = MessageKind::kInvalid;
  m.error_code = kInvalidRequest;
  m.error_message = std::move(error_message);
  json id = Decode(id_.token);
  if (IsValidId(id)) m.id = RequestId(std::move(id), id_.token);
  json method = Decode(method_.token);
  if (method.is_string()) m.method = method.get<std::string>();
  // Never answered (JSON-RPC 2.0 section 4.1; and we send no requests that
  // a response could answer), as ParseMessage classifies them. A line read
  // to its end is one object, though its contents were not checked.
  if (state_ == State::kEnd && Decode(jsonrpc_.token) == "2.0") {
    const bool notification = method.is_string() && !id_.present;
    const bool response = !method_.present && result_or_error_;
    m.unanswerable = notification || response;
  }
  return m;
}

}  // namespace cocoon::mcp
