// A line longer than the message limit is neither kept nor parsed: it is
// read once, a piece at a time as it arrives, for the top-level members that
// decide how to refuse it (JSON-RPC 2.0 sections 4.1 and 5):
//  - its "id", to answer the request it is: a client matches answers by id,
//    and an error with id null leaves its call waiting until its own
//    timeout. The id may come anywhere (the TypeScript SDK writes it last,
//    after the params that made the line too long), so the whole line is read;
//  - whether it is a notification or a response, which are never answered
//    (the refusal goes to stderr instead).
// What cannot be told (a line that is not one JSON object, or an id too
// long to keep) is answered with id null, since it may be a request.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cli/mcp/json_rpc.h"

namespace cocoon::mcp {

class OversizedLine {
 public:
  // The line's next bytes (without its newline).
  void Feed(std::string_view bytes);
  size_t size() const { return size_; }
  // kInvalid with kInvalidRequest and `error_message`; its id (null when
  // the line showed no usable one) and method; `unanswerable` when the line
  // is a whole JSON-RPC notification or response.
  Message Refusal(std::string error_message) const;

 private:
  enum class State {
    kStart,       // before the top-level '{'
    kFirstKey,    // after '{': a key or '}'
    kKey,         // after ',': a key
    kKeyString,   // inside a key
    kColon,
    kValue,       // after ':'
    kString,      // inside a string value
    kScalar,      // inside a number, true, false or null
    kNested,      // inside an object or array value
    kAfterValue,  // ',' or '}'
    kEnd,         // after the top-level '}': only whitespace may follow
    kUnreadable,  // not one JSON object (or not one this reading follows)
  };
  // The members whose values are kept (bounded: kMaxToken bytes each).
  enum class Field { kOther, kId, kMethod, kJsonrpc };
  struct Member {
    bool present = false;
    std::string token;  // the value's JSON text; "" when too long or an object or array
  };
  static constexpr size_t kMaxToken = 1024;

  void Step(char c);
  // A character inside a string (after its opening quote); true at the
  // closing one.
  bool StringEnds(char c);
  void Keep(char c);
  void EndKey();
  void EndValue();
  Member* Kept();

  State state_ = State::kStart;
  size_t size_ = 0;
  bool escaped_ = false;
  bool nested_in_string_ = false;
  size_t nesting_ = 0;
  std::string token_;
  bool token_too_long_ = false;
  Field field_ = Field::kOther;
  Member id_, method_, jsonrpc_;
  bool result_or_error_ = false;
};

}  // namespace cocoon::mcp
