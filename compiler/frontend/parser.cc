// The only file that includes ANTLR or the generated parser (see STYLE.md:
// "Keep ANTLR and its exceptions inside one target"). It
//  1. validates size and UTF-8 and maps ANTLR's code-point indexes to bytes;
//  2. lexes everything and bounds the nesting depth before parsing, so the
//     recursive-descent parser cannot overflow the stack;
//  3. parses in two stages (fast SLL that bails at the first error, then full
//     LL with recovery that gives up after a capped number of errors);
//  4. builds the ANTLR-free AST of ast.h from the parser's rule events and
//     tokens while it parses (no parse tree is built).
#include "compiler/frontend/parser.h"

#include "compiler/common/display_text.h"
#include "compiler/common/hidden_characters.h"

#include <antlr4-runtime.h>

#include <algorithm>
#include <array>
#include <memory>
#include <memory_resource>
#include <cctype>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "CocoonLexer.h"
#include "CocoonParser.h"
#include "compiler/frontend/units.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::frontend {
namespace {

using grammar::CocoonLexer;
using grammar::CocoonParser;

// Thrown by our error listener once enough syntax errors were reported; it is
// not a RecognitionException, so the generated rule functions let it pass.
struct TooManyErrors {};

// Maps ANTLR's code-point indexes to byte offsets in the Source text.
class OffsetMap {
 public:
  OffsetMap(std::string_view text, uint32_t base) : base_(base) {
    bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; });
    if (ascii) return;
    for (uint32_t i = 0; i < text.size(); ++i) {
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts_.push_back(i);
    }
    starts_.push_back(static_cast<uint32_t>(text.size()));
  }
  uint32_t Byte(size_t code_point) const {
    if (starts_.empty()) return base_ + static_cast<uint32_t>(code_point);
    if (code_point >= starts_.size()) return base_ + starts_.back();
    return base_ + starts_[code_point];
  }

 private:
  uint32_t base_;
  std::vector<uint32_t> starts_;  // empty when the text is pure ASCII
};

// Offset of the first invalid UTF-8 sequence, or npos. Rejects what the ANTLR
// runtime's converter rejects: overlong forms, surrogates, > U+10FFFF.
size_t FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return i;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string TokenName(size_t type, const antlr4::dfa::Vocabulary& vocabulary) {
  switch (type) {
    case antlr4::Token::EOF: return "end of file";
    case CocoonParser::IDENT: return "a name";
    case CocoonParser::STRING: return "a \"string\"";
    case CocoonParser::PATH: return "a path";
    case CocoonParser::NUMBER: return "a number";
    case CocoonParser::QUANTITY: return "a quantity (5s, 128MiB, 95%)";
    case CocoonParser::HOSTPORT: return "host:port";
    case CocoonParser::GROUP: return "an @group";
    case CocoonParser::ARG: return "arg0..arg5";
    default: return vocabulary.getLiteralName(type);  // 'readonly', '{', ...
  }
}

std::string Describe(const antlr4::Token* token) {
  if (token == nullptr || token->getType() == antlr4::Token::EOF) return "end of file";
  std::string text = token->getText();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (token->getType() == CocoonLexer::UNTERMINATED_STRING) return "'" + text + "' (unterminated string?)";
  return "'" + text + "'";
}

class ErrorListener : public antlr4::BaseErrorListener {
 public:
  ErrorListener(SourcePtr source, const OffsetMap& offsets, size_t cap, Diagnostics& diagnostics)
      : source_(std::move(source)), offsets_(offsets), cap_(cap), diagnostics_(diagnostics) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* token, size_t, size_t,
                   const std::string& antlr_message, std::exception_ptr) override {
    // Recovery may report a second error at the token it just reported
    // (`(arg0 & X != 0`: once in the condition, once more as the next
    // statement): the same mistake, said once.
    if (token != nullptr && last_token_ && *last_token_ == token->getTokenIndex()) return;
    // After a '#' that swallowed the rest of a line (CheckCommentsAfterPaths
    // reported it), what the parser says follows from it.
    if (quiet_from_ && (token == nullptr || token->getType() == antlr4::Token::EOF ||
                        offsets_.Byte(token->getStartIndex()) >= *quiet_from_)) {
      return;
    }
    if (token != nullptr) last_token_ = token->getTokenIndex();
    ++count_;
    std::string message = "unexpected " + Describe(token);
    std::string hint;
    if (auto* parser = dynamic_cast<antlr4::Parser*>(recognizer)) {
      Expectation(parser, token, message, hint);
    } else {
      message = antlr_message;  // lexer errors (the grammar's ERROR_CHAR makes these rare)
    }
    const size_t index = diagnostics_.all().size();
    diagnostics_.Error(source_, SpanOf(token), message, hint);
    if (count_ == 1 && token != nullptr && diagnostics_.all().size() > index) {
      first_ = FirstError{index, token->getTokenIndex(), token->getType() == antlr4::Token::EOF};
    }
    if (count_ >= cap_) throw TooManyErrors{};
  }

  size_t count() const { return count_; }
  // Syntax errors at or after byte `offset` are not reported (nor counted).
  void QuietFrom(uint32_t offset) { quiet_from_ = offset; }

  // The first syntax error the parser reported: where it is among the
  // diagnostics (to attach a note to it) and among the tokens.
  struct FirstError {
    size_t diagnostic = 0;
    size_t token = 0;
    bool at_end = false;
  };
  const std::optional<FirstError>& first() const { return first_; }

 private:
  void Expectation(antlr4::Parser* parser, antlr4::Token* token, std::string& message,
                   std::string& hint) {
    antlr4::misc::IntervalSet expected;
    try {
      expected = parser->getExpectedTokens();
    } catch (...) {
      return;
    }
    std::vector<std::string> names;
    std::vector<std::string> keywords;
    for (size_t type : expected.toList()) {
      std::string name = TokenName(type, parser->getVocabulary());
      if (name.empty()) continue;
      names.push_back(name);
      if (name.size() > 2 && name.front() == '\'') keywords.push_back(name.substr(1, name.size() - 2));
    }
    if (names.empty()) return;
    message += "; expected ";
    if (names.size() > 1) message += names.size() > 8 ? "one of " : "";
    size_t shown = std::min<size_t>(names.size(), 8);
    for (size_t i = 0; i < shown; ++i) {
      if (i > 0) message += (i + 1 == shown && shown == names.size()) ? " or " : ", ";
      message += names[i];
    }
    if (shown < names.size()) message += ", ...";
    if (token != nullptr && token->getText() == "=") {
      // No '=' in the language: after an argument it is a comparison
      // misspelt (the nearest keyword would be '(', which misleads),
      // elsewhere a setting written as an assignment (memory = 1GiB).
      // Read from the text: the parser may have taken the argument into
      // its recovery already.
      const std::string& text = source_->text();
      size_t at = offsets_.Byte(token->getStartIndex());
      while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
      size_t word = at;
      while (word > 0 && std::isalnum(static_cast<unsigned char>(text[word - 1]))) --word;
      const bool after_argument =
          (at > 0 && text[at - 1] == ')') || std::string_view(text).substr(word, at - word).rfind("arg", 0) == 0;
      if (after_argument) {
        message = "'=' is not an operator; a comparison is written '=='";
        hint = "the comparisons are ==, !=, <, <=, >, >= (and `in { ... }`)";
      } else {
        hint = "there is no '=' in the language: a setting is its name, then its value (memory 1GiB)";
      }
      return;
    }
    if (token != nullptr && token->getType() == CocoonLexer::BAD_NAME && token->getText().size() > 1 &&
        std::isdigit(static_cast<unsigned char>(token->getText()[1]))) {
      // `processes -5`, `size -5MiB`: the language has no negative values.
      message = "unexpected " + Describe(token) + ": a negative number, and no value in a policy is negative";
      hint = "sizes, counts, durations and ids are 0 or more; for no limit at all, write `unlimited`";
      return;
    }
    if (token != nullptr && PreviousTokenType(parser, token) == CocoonParser::USER) {
      // `user root`, `user nobody`: only numbers.
      message = "unexpected " + Describe(token) + "; `user` takes numeric ids, uid:gid, each 0..65534";
      hint = "names are not looked up: the sandbox has its own user namespace, whose ids the host's /etc/passwd "
             "does not name. Write `user 0:0` for root (check warns: a weakening), or keep the default "
             "65534:65534 (nobody)";
      return;
    }
    if (token != nullptr && InUnclosedMask(parser, token)) {
      // `(arg0 & CLONE_NEWUSER != 0`: the parser, unable to tell a masked
      // operand from a parenthesized condition, would list what may start one.
      message = "unexpected " + Describe(token) + "; expected ')'";
      hint = "close the mask before comparing: (arg0 & MASK) " + token->getText() + " VALUE";
      return;
    }
    if (token != nullptr && token->getType() != antlr4::Token::EOF) {
      std::string suggestion = DidYouMean(token->getText(), keywords);
      if (!suggestion.empty()) hint = "did you mean '" + suggestion + "'?";
    }
  }

  // The type of the on-channel token before `token`, or EOF when none.
  static size_t PreviousTokenType(antlr4::Parser* parser, antlr4::Token* token) {
    antlr4::TokenStream* tokens = parser->getTokenStream();
    if (tokens == nullptr || token->getType() == antlr4::Token::EOF) return antlr4::Token::EOF;
    for (size_t i = token->getTokenIndex(); i > 0;) {
      --i;
      if (tokens->get(i)->getChannel() == antlr4::Token::DEFAULT_CHANNEL) return tokens->get(i)->getType();
    }
    return antlr4::Token::EOF;
  }

  // True when `token` comes right after `( argN & VALUE [| VALUE]...`, a
  // masked operand whose ')' is missing.
  static bool InUnclosedMask(antlr4::Parser* parser, antlr4::Token* token) {
    antlr4::TokenStream* tokens = parser->getTokenStream();
    if (tokens == nullptr || token->getType() == antlr4::Token::EOF) return false;
    size_t i = token->getTokenIndex();
    auto type_at = [&](size_t at) { return tokens->get(at)->getType(); };
    auto previous = [&]() {  // the on-channel token before i, or false
      while (i > 0) {
        --i;
        if (tokens->get(i)->getChannel() == antlr4::Token::DEFAULT_CHANNEL) return true;
      }
      return false;
    };
    // VALUE (| VALUE)*, read backwards
    for (;;) {
      if (!previous() || (type_at(i) != CocoonParser::IDENT && type_at(i) != CocoonParser::NUMBER)) return false;
      if (!previous()) return false;
      if (type_at(i) != CocoonParser::PIPE) break;
    }
    return type_at(i) == CocoonParser::AMP && previous() && type_at(i) == CocoonParser::ARG && previous() &&
           type_at(i) == CocoonParser::LPAREN;
  }

  Span SpanOf(antlr4::Token* token) const {
    const std::string& text = source_->text();
    if (token == nullptr || token->getType() == antlr4::Token::EOF) {
      // Point just after the last visible character, not at a trailing newline.
      uint32_t end = static_cast<uint32_t>(text.size());
      while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
      return Span{end, end};
    }
    return Span{offsets_.Byte(token->getStartIndex()), offsets_.Byte(token->getStopIndex() + 1)};
  }

  SourcePtr source_;
  const OffsetMap& offsets_;
  size_t cap_;
  Diagnostics& diagnostics_;
  size_t count_ = 0;
  std::optional<size_t> last_token_;  // the token of the last error reported
  std::optional<uint32_t> quiet_from_;
  std::optional<FirstError> first_;
};

// ANTLR 4.9 decodes its whole input to UTF-32 with std::wstring_convert
// (antlrcpp::utf8_to_utf32), ~6% of checking a 1 MiB policy. Policies are
// almost always ASCII, whose UTF-32 form is each byte widened: this stream
// does that, and hands any other input to ANTLR's own decoder unchanged
// (so a non-ASCII file, BOM handling included, goes exactly as before).
class PolicyInputStream : public antlr4::ANTLRInputStream {
 public:
  explicit PolicyInputStream(std::string_view text) {
    const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; });
    if (!ascii) {
      load(std::string(text));
      return;
    }
    _data.assign(text.begin(), text.end());
    p = 0;
  }
  // The code points of [begin, end).
  std::u32string_view Slice(size_t begin, size_t end) const {
    return std::u32string_view(_data).substr(begin, end - begin);
  }
};

// The keyword token types by spelling. They come from the grammar: the
// literal names ('readonly') of the rules of grammar/CocoonKeywords.g4.
class KeywordTable {
 public:
  explicit KeywordTable(const antlr4::dfa::Vocabulary& vocabulary) {
    for (size_t type = 1; type <= vocabulary.getMaxTokenType(); ++type) {
      std::string literal = vocabulary.getLiteralName(type);  // "'readonly'", "'{'", or ""
      if (literal.size() < 3 || literal.size() - 2 > kMaxLength) continue;
      std::string word = literal.substr(1, literal.size() - 2);
      if (!std::isalpha(static_cast<unsigned char>(word[0]))) continue;
      by_length_[word.size()].push_back(Keyword{std::move(word), type});
    }
  }

  // The keyword type of an IDENT spelled `word`, or IDENT.
  size_t TypeOf(std::u32string_view word) const {
    if (word.size() > kMaxLength) return CocoonLexer::IDENT;
    for (const Keyword& keyword : by_length_[word.size()]) {
      if (std::equal(word.begin(), word.end(), keyword.word.begin())) return keyword.type;
    }
    return CocoonLexer::IDENT;
  }

 private:
  static constexpr size_t kMaxLength = 15;  // 'best_effort' is the longest
  struct Keyword {
    std::string word;
    size_t type;
  };
  std::array<std::vector<Keyword>, kMaxLength + 1> by_length_;
};

// Each parse owns its ANTLR DFAs (lexer and parser). The generated
// recognizers keep theirs in statics shared by every parse in the process:
// a cache across calls, which made the in-process benchmarks measure a warm
// DFA while each `cocoon check` process starts cold (build.cocoon: 1.3 ms
// in-process vs ~6 ms of CPU more than `cocoon --version` in a fresh
// process). With a DFA per parse, every parse does the cold work a fresh
// process does, and nothing one input taught ANTLR carries over to the next.
class PerParseDfa {
 public:
  explicit PerParseDfa(const antlr4::atn::ATN& atn) {
    for (size_t i = 0; i < atn.getNumberOfDecisions(); ++i) dfa_.emplace_back(atn.getDecisionState(i), i);
  }
  std::vector<antlr4::dfa::DFA>& dfa() { return dfa_; }
  antlr4::atn::PredictionContextCache& contexts() { return contexts_; }

 private:
  std::vector<antlr4::dfa::DFA> dfa_;
  antlr4::atn::PredictionContextCache contexts_;
};

// DfaReuse::kProcessWide: one DFA set per recognizer for the process
// (never freed, like the generated statics it stands in for). ANTLR's DFA
// is built for sharing: its edge and state maps are guarded by ANTLR's locks.
PerParseDfa& ProcessWideLexerDfa(const antlr4::atn::ATN& atn) {
  static PerParseDfa* const dfa = new PerParseDfa(atn);
  return *dfa;
}
PerParseDfa& ProcessWideParserDfa(const antlr4::atn::ATN& atn) {
  static PerParseDfa* const dfa = new PerParseDfa(atn);
  return *dfa;
}

// A set of ASCII characters (the only ones ANTLR 4.9 keeps lexer DFA edges
// for: LexerATNSimulator::MAX_DFA_EDGE is 127).
class AsciiSet {
 public:
  static constexpr size_t kSize = 128;
  static AsciiSet All() { return AsciiSet(~uint64_t{0}, ~uint64_t{0}); }
  AsciiSet() = default;

  // Adds [first, last] (inclusive, as ANTLR's intervals), clipped to ASCII.
  void Add(ssize_t first, ssize_t last) {
    for (size_t word = 0; word < 2; ++word) {
      const ssize_t low = std::max<ssize_t>(first, 64 * word), high = std::min<ssize_t>(last, 64 * word + 63);
      if (low > high) continue;
      const size_t width = static_cast<size_t>(high - low + 1);
      const uint64_t ones = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
      bits_[word] |= ones << (low - 64 * static_cast<ssize_t>(word));
    }
  }
  bool Has(size_t c) const { return (bits_[c / 64] >> (c % 64)) & 1; }
  AsciiSet operator~() const { return AsciiSet(~bits_[0], ~bits_[1]); }
  AsciiSet& operator&=(const AsciiSet& other) {
    bits_[0] &= other.bits_[0];
    bits_[1] &= other.bits_[1];
    return *this;
  }

 private:
  AsciiSet(uint64_t low, uint64_t high) : bits_{low, high} {}
  uint64_t bits_[2] = {0, 0};
};

// The ASCII characters an ATN transition consumes (what its matches() says
// yes to): its label set, the complement of it for a negated set (~["\\]),
// everything for `.`, nothing for an epsilon, rule, action or predicate edge.
AsciiSet AsciiMatches(const antlr4::atn::Transition& transition) {
  using Type = antlr4::atn::Transition::SerializationType;
  AsciiSet set;
  const Type type = transition.getSerializationType();
  if (type == Type::WILDCARD) return AsciiSet::All();
  if (type != Type::ATOM && type != Type::RANGE && type != Type::SET && type != Type::NOT_SET) return set;
  const antlr4::misc::IntervalSet label = transition.label();  // by value: keep it alive while iterating
  for (const antlr4::misc::Interval& interval : label.getIntervals()) set.Add(interval.a, interval.b);
  return type == Type::NOT_SET ? ~set : set;
}

// ANTLR 4.9's lexer simulator finds each character's DFA edge in a
// std::unordered_map, under a process-wide reader lock
// (LexerATNSimulator::getExistingTargetState, ATNSimulator::_edgeLock): that
// lookup was a third of lexing time on a 1 MiB policy. The token rules stay
// ANTLR's, and so does computing every edge; this only remembers, in a dense
// table per DFA state, the ASCII edges already looked up. The table dies
// with the lexer. Anything it does not hold (a miss, a non-ASCII symbol, an
// unnumbered state) goes to the runtime.
//
// A cold DFA computes an edge for each state and character it meets, each a
// closure over the state's ATN configurations: most of the time of checking
// a small file. But from a DFA state, an edge depends on the character only
// through which of its configurations' transitions match it, so when ANTLR
// computes the edge on `t`, the table records the same target for every
// ASCII character that those transitions cannot tell from `t` (alphabet
// compression, per state): in a comment, every character but a newline; in
// a name, every name character. Only an edge ANTLR itself cached is spread:
// ANTLR caches an edge only when it depends on nothing but the state and the
// character (no semantic predicate).
class DenseEdgeLexerSimulator : public antlr4::atn::LexerATNSimulator {
 public:
  DenseEdgeLexerSimulator(antlr4::Lexer* lexer, PerParseDfa& dfa)
      : LexerATNSimulator(lexer, lexer->getATN(), dfa.dfa(), dfa.contexts()),
        matches_(lexer->getATN().states.size()) {}

  // LexerATNSimulator::match (ANTLR 4.9) without its per-token
  // std::function (a `finally` that releases the input's mark: a no-op for
  // an ANTLRInputStream, which holds the whole text), 3% of a 1 MiB check.
  // The runtime's SimState::reset is private to it, so the previous token's
  // accept state is cleared through the public reset(), keeping the position.
  size_t match(antlr4::CharStream* input, size_t mode) override {
    const size_t line = _line, column = _charPositionInLine;
    LexerATNSimulator::reset();
    _line = line;
    _charPositionInLine = column;
    _mode = mode;
    _startIndex = input->index();
    antlr4::dfa::DFA& dfa = _decisionToDFA[mode];
    return dfa.s0 == nullptr ? matchATN(input) : execATN(input, dfa.s0);
  }

 protected:
  antlr4::dfa::DFAState* getExistingTargetState(antlr4::dfa::DFAState* s, size_t t) override {
    Row* row = RowOf(s, t);
    if (row == nullptr) return LexerATNSimulator::getExistingTargetState(s, t);
    antlr4::dfa::DFAState*& slot = row->next[t];
    if (slot == nullptr) slot = LexerATNSimulator::getExistingTargetState(s, t);  // null: not computed yet
    return slot;
  }

  antlr4::dfa::DFAState* computeTargetState(antlr4::CharStream* input, antlr4::dfa::DFAState* s,
                                            size_t t) override {
    antlr4::dfa::DFAState* target = LexerATNSimulator::computeTargetState(input, s, t);
    Row* row = RowOf(s, t);
    if (row == nullptr || LexerATNSimulator::getExistingTargetState(s, t) != target) return target;
    AsciiSet same = AsciiSet::All();  // the characters no transition out of `s` tells from `t`
    for (const auto& config : s->configs->configs) {
      for (const AsciiSet& matches : MatchesOf(config->state)) same &= matches.Has(t) ? matches : ~matches;
    }
    for (size_t c = 0; c < AsciiSet::kSize; ++c) {
      if (same.Has(c)) row->next[c] = target;
    }
    return target;
  }

 private:
  struct Row {
    antlr4::dfa::DFAState* state = nullptr;
    std::array<antlr4::dfa::DFAState*, MAX_DFA_EDGE + 1> next{};
  };
  static_assert(MAX_DFA_EDGE + 1 == AsciiSet::kSize);

  // The table row of `s`, or null when the edge on `t` is not in the table.
  // Rows are allocated as states are met: with a process-wide DFA (the
  // fuzzers') state numbers run into the thousands, and a table sized by
  // them would be megabytes to zero for every parse.
  Row* RowOf(antlr4::dfa::DFAState* s, size_t t) {
    if (t > MAX_DFA_EDGE || s->stateNumber < 0) return nullptr;
    const size_t n = static_cast<size_t>(s->stateNumber);
    if (n >= rows_.size()) rows_.resize(n + 1);
    std::unique_ptr<Row>& row = rows_[n];
    if (row == nullptr) row = std::make_unique<Row>();
    if (row->state != s) *row = Row{s, {}};  // numbers are unique per DFA; be safe anyway
    return row.get();
  }

  // What each transition out of `state` matches (worked out on first use).
  const std::vector<AsciiSet>& MatchesOf(const antlr4::atn::ATNState* state) {
    Matches& entry = matches_[state->stateNumber];
    if (!entry.known) {
      for (const antlr4::atn::Transition* transition : state->transitions) {
        entry.sets.push_back(AsciiMatches(*transition));
      }
      entry.known = true;
    }
    return entry.sets;
  }

  struct Matches {
    bool known = false;
    std::vector<AsciiSet> sets;
  };
  std::vector<Matches> matches_;  // by ATN state number
  std::vector<std::unique_ptr<Row>> rows_;
};

// A token whose memory comes from its parse's arena (a
// std::pmr::monotonic_buffer_resource that outlives every token) instead of
// one malloc and free per token: a 1 MiB policy is ~145,000 tokens, and the
// allocator's time was a quarter of checking it. The token stream owns and
// deletes tokens as usual; delete only runs the destructor, and the arena
// frees all their memory at once when the parse ends.
class PolicyToken : public antlr4::CommonToken {
 public:
  using CommonToken::CommonToken;
  static void* operator new(size_t size, std::pmr::memory_resource& arena) {
    return arena.allocate(size, alignof(PolicyToken));
  }
  static void operator delete(void*, std::pmr::memory_resource&) {}  // a throwing constructor's
  static void operator delete(void*) {}
};

// The generated lexer, with keywords typed on the way out: the grammar lexes
// them as IDENT (see the note at the top of grammar/CocoonLexer.g4), and an
// IDENT whose whole text is a keyword is that keyword's token. Whitespace
// (WS) is dropped here too, making no token, where `-> skip` would run a
// lexer action: ANTLR 4.9 runs each through a std::function and a few
// dynamic_casts, 8% of checking a 1 MiB policy.
class PolicyLexer : public CocoonLexer {
 public:
  // Tokens are made in `arena`, which must outlive them.
  PolicyLexer(PolicyInputStream* input, std::pmr::memory_resource& arena)
      : CocoonLexer(input), input_(*input), arena_(arena), keywords_(getVocabulary()) {}

  // Lexes with `dfa` (built after the lexer, whose constructor deserializes
  // the ATN: grammar/lazy_atn_init.cmake).
  void UseDfa(PerParseDfa& dfa) {
    simulator_ = new DenseEdgeLexerSimulator(this, dfa);
    setInterpreter(simulator_);  // deletes the generated one
  }

  // Lexer::nextToken's loop (ANTLR 4.9) around the same LexerATNSimulator
  // match, with two differences: the simulator is called directly (the
  // runtime dynamic_casts its interpreter three times per token), and WS
  // loops like a skipped token. The runtime's input mark/release pair is
  // left out: it only matters for unbuffered streams, and ours holds the
  // whole text. Matching, token types and errors stay ANTLR's.
  std::unique_ptr<antlr4::Token> nextToken() override {
    while (simulator_ == nullptr) {  // not reached: UseDfa comes first
      std::unique_ptr<antlr4::Token> next = CocoonLexer::nextToken();
      if (next->getType() != WS) return next;
    }
    for (;;) {
      if (hitEOF) {
        emitEOF();
        return std::move(token);
      }
      token.reset();
      channel = antlr4::Token::DEFAULT_CHANNEL;
      tokenStartCharIndex = _input->index();
      tokenStartCharPositionInLine = simulator_->getCharPositionInLine();
      tokenStartLine = simulator_->getLine();
      _text.clear();
      do {
        type = antlr4::Token::INVALID_TYPE;
        size_t matched;
        try {
          matched = simulator_->match(_input, mode);
        } catch (antlr4::LexerNoViableAltException& e) {
          notifyListeners(e);  // report the error
          recover(e);
          matched = SKIP;
        }
        if (_input->LA(1) == antlr4::Token::EOF) hitEOF = true;
        if (type == antlr4::Token::INVALID_TYPE) type = matched;
      } while (type == MORE);
      if (type == SKIP || type == WS) continue;
      if (token == nullptr) emit();
      return std::move(token);
    }
  }

  antlr4::Token* emit() override {
    if (type == IDENT) type = keywords_.TypeOf(input_.Slice(tokenStartCharIndex, getCharIndex()));
    // What Lexer::emit's CommonTokenFactory makes (no text copy), in the arena.
    std::unique_ptr<antlr4::Token> made(new (arena_) PolicyToken(
        std::pair<antlr4::TokenSource*, antlr4::CharStream*>(this, _input), type, channel, tokenStartCharIndex,
        getCharIndex() - 1));
    auto* common = static_cast<PolicyToken*>(made.get());
    common->setLine(tokenStartLine);
    common->setCharPositionInLine(tokenStartCharPositionInLine);
    Lexer::emit(std::move(made));
    return token.get();
  }

  // Every token asks for its line and column (CommonToken's constructor),
  // and Lexer's versions dynamic_cast the interpreter on each call.
  size_t getLine() const override { return simulator_ ? simulator_->getLine() : CocoonLexer::getLine(); }
  size_t getCharPositionInLine() override {
    return simulator_ ? simulator_->getCharPositionInLine() : CocoonLexer::getCharPositionInLine();
  }

 private:
  const PolicyInputStream& input_;
  std::pmr::memory_resource& arena_;
  KeywordTable keywords_;
  DenseEdgeLexerSimulator* simulator_ = nullptr;  // owned by the Lexer base
};

// BufferedTokenStream::fetch (ANTLR 4.9) numbering each token without the
// runtime's dynamic_cast to WritableToken per token (2.5% of a 1 MiB
// check): every token here is a CommonToken, made by the lexer's
// CommonTokenFactory.
class PolicyTokenStream : public antlr4::CommonTokenStream {
 public:
  explicit PolicyTokenStream(PolicyLexer* lexer) : CommonTokenStream(lexer) {}

 protected:
  size_t fetch(size_t n) override {
    if (_fetchedEOF) return 0;
    for (size_t i = 0; i < n; ++i) {
      std::unique_ptr<antlr4::Token> token = _tokenSource->nextToken();
      static_cast<antlr4::CommonToken*>(token.get())->setTokenIndex(_tokens.size());
      const bool eof = token->getType() == antlr4::Token::EOF;
      _tokens.push_back(std::move(token));
      if (eof) {
        _fetchedEOF = true;
        return i + 1;
      }
    }
    return n;
  }
};

// Reports the first bracket nested deeper than the limit (unbalanced brackets
// are left to the parser, which explains them better).
bool CheckNesting(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                  size_t max_nesting, Diagnostics& diagnostics) {
  size_t depth = 0;
  for (antlr4::Token* token : tokens.getTokens()) {
    size_t type = token->getType();
    if (type == CocoonLexer::LBRACE || type == CocoonLexer::LPAREN) {
      if (++depth > max_nesting) {
        Span span{offsets.Byte(token->getStartIndex()), offsets.Byte(token->getStopIndex() + 1)};
        diagnostics.Error(source, span,
                          "nesting is deeper than the limit of " + std::to_string(max_nesting));
        return false;
      }
    } else if ((type == CocoonLexer::RBRACE || type == CocoonLexer::RPAREN) && depth > 0) {
      --depth;
    }
  }
  return true;
}

// The file's braces, matched before parsing (indexes into the token
// stream). The parser notices a stray `}` only at the token after it (the
// `}` ended the profile, and the next statement stood outside any), and an
// unclosed `{` only where the file ends or the next block's keyword stands:
// the scan says where each one is.
struct BraceScan {
  struct Pair {
    size_t open = 0;
    size_t close = 0;
    bool top_level = false;  // not inside another block
  };
  std::vector<Pair> pairs;                // in the order they close
  std::optional<size_t> unmatched_close;  // the first `}` with no block open
  std::vector<size_t> open_at_end;        // `{` still open where the file ends, outermost first
};

BraceScan ScanBraces(const std::vector<antlr4::Token*>& all) {
  BraceScan scan;
  std::vector<size_t> open;
  for (size_t i = 0; i < all.size(); ++i) {
    const size_t type = all[i]->getType();
    if (all[i]->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    if (type == CocoonLexer::LBRACE) {
      open.push_back(i);
    } else if (type == CocoonLexer::RBRACE) {
      if (open.empty()) {
        if (!scan.unmatched_close) scan.unmatched_close = i;
        continue;
      }
      scan.pairs.push_back({open.back(), i, open.size() == 1});
      open.pop_back();
    }
  }
  scan.open_at_end = std::move(open);
  return scan;
}

// The `{` innermost open at token `at` (not counting `at` itself), if any.
std::optional<size_t> InnermostOpenAt(const std::vector<antlr4::Token*>& all, size_t at) {
  std::vector<size_t> open;
  for (size_t i = 0; i < at && i < all.size(); ++i) {
    if (all[i]->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    if (all[i]->getType() == CocoonLexer::LBRACE) open.push_back(i);
    if (all[i]->getType() == CocoonLexer::RBRACE && !open.empty()) open.pop_back();
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

class BraceReporter {
 public:
  BraceReporter(const std::vector<antlr4::Token*>& all, const SourcePtr& source, const OffsetMap& offsets)
      : all_(all), source_(source), offsets_(offsets) {}

  Span SpanAt(size_t index) const {
    const antlr4::Token* token = all_[index];
    return Span{offsets_.Byte(token->getStartIndex()), offsets_.Byte(token->getStopIndex() + 1)};
  }
  uint32_t LineAt(size_t index) const { return source_->Locate(SpanAt(index).begin).line; }

  // The indentation of the line token `index` is on, in bytes.
  size_t IndentOf(size_t index) const {
    const std::string_view line = source_->Line(LineAt(index));
    return std::min(line.find_first_not_of(" \t"), line.size());
  }
  // True when only blanks come before token `index` on its line.
  bool FirstOnLine(size_t index) const { return source_->Locate(SpanAt(index).begin).column == IndentOf(index) + 1; }

  // A `}` on a line of its own, indented unlike the line of its `{`.
  bool MisIndented(const BraceScan::Pair& pair) const {
    return LineAt(pair.open) != LineAt(pair.close) && FirstOnLine(pair.close) &&
           IndentOf(pair.close) != IndentOf(pair.open);
  }

  // A `}` closed before `before` that likely ends its block too soon: the
  // last one indented unlike the line of its `{` (on a line of its own),
  // else the last one that ended a top-level block with more words after it.
  std::optional<BraceScan::Pair> SuspectClose(const BraceScan& scan, size_t before) const {
    std::optional<BraceScan::Pair> top_level;
    for (auto it = scan.pairs.rbegin(); it != scan.pairs.rend(); ++it) {
      if (it->close >= before) continue;
      if (MisIndented(*it)) return *it;
      if (!top_level && it->top_level) top_level = *it;
    }
    if (!top_level) return std::nullopt;
    for (size_t i = top_level->close + 1; i < before; ++i) {
      if (all_[i]->getChannel() == antlr4::Token::DEFAULT_CHANNEL) return top_level;
    }
    return std::nullopt;
  }

 private:
  const std::vector<antlr4::Token*>& all_;
  const SourcePtr& source_;
  const OffsetMap& offsets_;
};

// A `}` with no block open is reported where it is, with the `}` before it
// that likely ended a block too soon; the file is not parsed further (what
// the parser would say follows from it). Returns false on that error. An
// unterminated string may have swallowed a brace: the parser reports it.
bool CheckUnmatchedBraces(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                          Diagnostics& diagnostics) {
  const std::vector<antlr4::Token*> all = tokens.getTokens();
  for (const antlr4::Token* token : all) {
    if (token->getType() == CocoonLexer::UNTERMINATED_STRING) return true;
  }
  const BraceScan scan = ScanBraces(all);
  if (!scan.unmatched_close) return true;
  const BraceReporter braces(all, source, offsets);
  const size_t index = diagnostics.all().size();
  diagnostics.Error(source, braces.SpanAt(*scan.unmatched_close), "unmatched '}': no block is open here",
                    "remove it, or the '}' before it that ends a block too soon");
  if (diagnostics.all().size() == index) return false;  // over the cap
  if (std::optional<BraceScan::Pair> suspect = braces.SuspectClose(scan, *scan.unmatched_close)) {
    const bool indented = braces.MisIndented(*suspect);
    diagnostics.AttachNote(index, source, braces.SpanAt(suspect->close),
                           "this '}' ends the block opened at line " + std::to_string(braces.LineAt(suspect->open)) +
                               (indented ? ", but is indented unlike it" : "") + ": is it one too many?");
  }
  return false;
}

// After a syntax error in a file whose braces do not balance (a `{` is
// still open at its end): a note at the `{` of the block the error is in.
void NoteUnclosedBlock(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                       const ErrorListener::FirstError& error, Diagnostics& diagnostics) {
  const std::vector<antlr4::Token*> all = tokens.getTokens();
  if (ScanBraces(all).open_at_end.empty()) return;
  const std::optional<size_t> open = InnermostOpenAt(all, error.token);
  if (!open) return;
  const BraceReporter braces(all, source, offsets);
  diagnostics.AttachNote(error.diagnostic, source, braces.SpanAt(*open),
                         error.at_end ? "block opened here, and not closed" : "block opened here; is its '}' missing?");
}

// Reports, in every string, each backslash that is not one of the escapes
// the language has (docs/language.md: \" \\ \n \t), and a NUL byte.
// Unescape would drop the backslash, so "bad \q" would quietly mean "bad q"
// (and "C:\dir" would lose its separator); an error at the escape says so
// instead. No string can hold a NUL: an environment value, an argument and
// a path all end at the first one, so "a<NUL>b" would be enforced as "a"
// while `cocoon explain` showed all of it.
bool CheckStringContents(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                         Diagnostics& diagnostics) {
  bool ok = true;
  const std::string_view text = source->text();
  for (antlr4::Token* token : tokens.getTokens()) {
    if (token->getType() != CocoonLexer::STRING) continue;
    const uint32_t begin = offsets.Byte(token->getStartIndex());
    const uint32_t end = offsets.Byte(token->getStopIndex() + 1);
    if (text.substr(begin, end - begin).find('\0') != std::string_view::npos) {
      diagnostics.Error(source, Span{begin, end}, "NUL byte in a string",
                        "a string cannot hold a NUL (environment values, arguments and paths end at it): "
                        "remove it");
      ok = false;
    }
    for (uint32_t i = begin + 1; i + 1 < end; ++i) {
      if (text[i] != '\\') continue;
      const char escaped = text[++i];
      if (escaped == '"' || escaped == '\\' || escaped == 'n' || escaped == 't') continue;
      // The escaped character may be several bytes of UTF-8: quote all of them.
      uint32_t next = i + 1;
      while (next < end - 1 && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      diagnostics.Error(source, Span{i - 1, next},
                        "unknown escape '\\" + std::string(text.substr(i, next - i)) + "' in a string",
                        "the escapes are \\\" \\\\ \\n and \\t; write \\\\ for a backslash");
      ok = false;
      i = next - 1;
    }
  }
  return ok;
}

// Two slips that are easy to make and that the grammar alone reports badly:
// each is reported once, where it is, and the token stream is mended so that
// the parser does not report the statements after it as well (the file still
// has no AST).

// `memory 64 MiB`: the unit written apart from its number. `limitStmt :
// IDENT value` read `MiB wall_time` as one more limit, and reported the next
// line's valid `5s` instead ("unexpected '5'"). The unit is reported and
// moved off the parser's channel.
// The kind of value a setting takes, for the words that take a duration, a
// size or a percentage (limits, `tmpfs ... size`, `work ... quota`).
std::optional<UnitKind> KindOfSetting(const std::string& word) {
  if (word == "wall_time" || word == "cpu_time") return UnitKind::kTime;
  if (word == "cpu") return UnitKind::kPercent;
  if (word == "memory" || word == "file_size" || word == "disk" || word == "output" || word == "size" ||
      word == "quota") {
    return UnitKind::kSize;
  }
  return std::nullopt;
}

bool CheckUnitsWrittenApart(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                            Diagnostics& diagnostics, std::vector<Span>& reported) {
  bool ok = true;
  const std::string_view text = source->text();
  const std::vector<antlr4::Token*> all = tokens.getTokens();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    antlr4::Token* number = all[i];
    antlr4::Token* unit = all[i + 1];  // adjacent: no comment between them
    // A NUMBER, or a fraction (1.5 GiB), which lexes as a QUANTITY with no
    // unit, or a run of digits and points that is neither (1.2.3 GiB).
    const bool quantity = number->getType() == CocoonLexer::QUANTITY;
    const bool fraction = quantity && IsDecimalFraction(number->getText());
    const bool dotted = quantity && !fraction && IsDigitsAndPoints(number->getText());
    if (number->getType() != CocoonLexer::NUMBER && !fraction && !dotted) continue;
    if (unit->getType() != CocoonLexer::IDENT && unit->getType() != CocoonLexer::ERROR_CHAR) continue;  // '%'
    const uint32_t number_end = offsets.Byte(number->getStopIndex() + 1);
    const uint32_t unit_begin = offsets.Byte(unit->getStartIndex());
    const uint32_t unit_end = offsets.Byte(unit->getStopIndex() + 1);
    const std::string_view gap = text.substr(number_end, unit_begin - number_end);
    if (gap.find_first_not_of(" \t") != std::string_view::npos) continue;  // on the same line
    const std::string_view unit_text = text.substr(unit_begin, unit_end - unit_begin);
    const uint32_t number_begin = offsets.Byte(number->getStartIndex());
    const std::string_view number_text = text.substr(number_begin, number_end - number_begin);
    if (!IsUnitName(unit_text)) {
      // `wall_time 5 sec`: a misspelt unit, apart. Only after a setting whose
      // kind of value is known, and only a word that stands for a unit of
      // it: `processes 8 memory 1GiB` on one line is two limits.
      const std::optional<UnitKind> kind = i > 0 ? KindOfSetting(all[i - 1]->getText()) : std::nullopt;
      const std::string quantity = kind ? QuantityForUnitWord(number_text, unit_text, *kind) : std::string();
      if (quantity.empty()) continue;
      diagnostics.Error(source, Span{number_begin, unit_end},
                        "unknown unit '" + std::string(unit_text) + "', written apart from its number",
                        "write " + quantity);
      static_cast<antlr4::CommonToken*>(unit)->setChannel(antlr4::Token::HIDDEN_CHANNEL);
      reported.push_back(Span{number_begin, number_end});
      ok = false;
      continue;
    }
    // Not "write 0x40MiB": hexadecimal takes no unit (and 0x40B is another
    // number, 'B' being a hex digit).
    if (dotted) {
      // Reported at the number, which is the mistake; the unit is not made
      // into one more limit either.
      diagnostics.Error(source, Span{number_begin, number_end}, "'" + std::string(number_text) + "' is not a number",
                        "a number has at most one decimal point, and its unit follows with no space: such as 1.5" +
                            std::string(unit_text));
    } else if (number_text.size() > 1 && (number_text[1] == 'x' || number_text[1] == 'X')) {
      diagnostics.Error(source, Span{number_begin, unit_end}, "a hexadecimal number takes no unit",
                        HexWithUnitHint(number_text, unit_text));
    } else {
      const std::string written = std::string(number_text) + std::string(unit_text);
      diagnostics.Error(source, Span{number_begin, unit_end}, "a space between a number and its unit",
                        "write " + written + ", without a space");
    }
    static_cast<antlr4::CommonToken*>(unit)->setChannel(antlr4::Token::HIDDEN_CHANNEL);
    reported.push_back(Span{number_begin, number_end});
    ok = false;
  }
  return ok;
}

// Slips inside a bare path, which the lexer takes as part of it
// (grammar/CocoonLexer.g4 allows [+@%=,~:] in a PATH): `hide /etc/shadow,
// /etc/gshadow` hid a file named "shadow," and left /etc/shadow visible.
//  - ',' is never read as a separator, and a list separated by commas is the
//    likely intent: an error at the comma.
//  - ':/' is a PATH-style list (/usr/bin:/bin). A ':' alone stays allowed:
//    /sys/devices/pci0000:00 and /dev/disk/by-path/...:0 are real paths.
//  - '@' (getty@tty1.service), '=', '%', '+' and '~' occur in real file
//    names and stay allowed.
// A quoted path is free-form: it is how to write a name that holds any of them.
// Returns false on an error.
bool CheckBarePaths(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                    Diagnostics& diagnostics) {
  bool ok = true;
  const std::string_view text = source->text();
  for (antlr4::Token* token : tokens.getTokens()) {
    if (token->getType() != CocoonLexer::PATH) continue;
    const uint32_t begin = offsets.Byte(token->getStartIndex());
    const uint32_t end = offsets.Byte(token->getStopIndex() + 1);
    const std::string_view path = text.substr(begin, end - begin);
    const size_t comma = path.find(',');
    const size_t colon = path.find(":/");
    if (comma == std::string_view::npos && colon == std::string_view::npos) continue;
    const bool is_comma = comma < colon;
    const uint32_t at = begin + static_cast<uint32_t>(is_comma ? comma : colon);
    diagnostics.Error(source, Span{at, at + 1},
                      is_comma ? "',' is not part of a path; list items are separated by spaces"
                               : "':' is not a path separator; list items are separated by spaces",
                      "if the '" + std::string(is_comma ? "," : ":") +
                          "' belongs to the file name, quote the path: \"" + std::string(path) + "\"");
    ok = false;
  }
  return ok;
}

// `hide /etc/shadow#x }`: a '#' right after a bare path starts a comment, so
// the rest of the line (here the `}`) is not read, and the parser would
// report whatever comes after it. Reported at the '#'; returns where the
// first one is: the parser's errors from there on follow from it, and are
// not reported.
std::optional<uint32_t> CheckCommentsAfterPaths(antlr4::CommonTokenStream& tokens, const SourcePtr& source,
                                                const OffsetMap& offsets, Diagnostics& diagnostics) {
  std::optional<uint32_t> first;
  const std::vector<antlr4::Token*> all = tokens.getTokens();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    if (all[i]->getType() != CocoonLexer::PATH || all[i + 1]->getType() != CocoonLexer::COMMENT) continue;
    const uint32_t path_end = offsets.Byte(all[i]->getStopIndex() + 1);
    if (offsets.Byte(all[i + 1]->getStartIndex()) != path_end) continue;  // a space between: a comment
    const uint32_t path_begin = offsets.Byte(all[i]->getStartIndex());
    const std::string path(source->text().substr(path_begin, path_end - path_begin));
    diagnostics.Error(source, Span{path_end, path_end + 1},
                      "'#' right after the path '" + path + "' starts a comment: the rest of the line is not read",
                      "put a space before a comment; if the '#' belongs to the file name, quote the whole path");
    if (!first) first = path_end;
  }
  return first;
}

// `allow kill`: a syscall whose name is a keyword, unquoted, right after a
// rule's verb (where no keyword can stand). The parser took `kill` for the
// next rule's verb and reported the valid line after it. The name is reported
// with the fix, and read as a name.
//
// `deny ptrace kill mount`: `kill` further on in a rule's list of syscalls,
// on the same line, silently became a second rule, `kill mount` (and
// `deny tkill kill }` a syntax error at the `}`). On the same line it is a
// slip too: a rule that kills starts on a line of its own, or after a rule
// that ends in `if ...` or `errno ...`.
bool CheckKeywordSyscallNames(antlr4::CommonTokenStream& tokens, const SourcePtr& source, const OffsetMap& offsets,
                              Diagnostics& diagnostics) {
  auto is_verb = [](size_t type) {
    return type == CocoonLexer::ALLOW || type == CocoonLexer::DENY || type == CocoonLexer::KILL ||
           type == CocoonLexer::LOG || type == CocoonLexer::NOTIFY || type == CocoonLexer::TRAP;
  };
  auto is_target = [](size_t type) {
    return type == CocoonLexer::IDENT || type == CocoonLexer::STRING || type == CocoonLexer::GROUP;
  };
  const auto& syscalls = syscalls::KnownSyscallNames();
  auto report = [&](antlr4::Token* token, const std::string& hint) {
    const std::string name = token->getText();
    diagnostics.Error(source, Span{offsets.Byte(token->getStartIndex()), offsets.Byte(token->getStopIndex() + 1)},
                      "the syscall '" + name + "' is spelt like a keyword of the language",
                      "write its name as a string: \"" + name + "\"" + hint);
    static_cast<antlr4::CommonToken*>(token)->setType(CocoonLexer::IDENT);
  };
  bool ok = true;
  size_t before_verb = antlr4::Token::EOF;  // the on-channel token before the previous one
  size_t previous = antlr4::Token::EOF;
  size_t previous_line = 0;
  bool in_list = false;  // after a rule's verb and at least one of its syscalls
  for (antlr4::Token* token : tokens.getTokens()) {
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    const size_t type = token->getType();
    const bool is_syscall = std::find(syscalls.begin(), syscalls.end(), token->getText()) != syscalls.end();
    // After `default`, a verb is the default action, and a rule may follow.
    const bool after_verb = is_verb(previous) && before_verb != CocoonLexer::DEFAULT;
    if (after_verb && !is_target(type) && is_syscall) {
      report(token, "");
      ok = false;
    } else if (in_list && type == CocoonLexer::KILL && token->getLine() == previous_line && is_syscall) {
      report(token, "; a rule that kills starts on a line of its own");
      ok = false;
    }
    in_list = (after_verb || in_list) && (is_target(token->getType()));
    before_verb = previous;
    previous = token->getType();
    previous_line = token->getLine();
  }
  return ok;
}

// ------------------------------------------------- parse events -> AST
// The AST is built while the parser runs, from its rule entry and exit
// events and the tokens it consumes; the parser keeps no parse tree
// (setBuildParseTree(false)). Building the tree, walking it and freeing it
// again (a node and a child vector per token and per rule) was a third of
// checking a 1 MiB policy.
//
// Each open rule has a frame saying where its tokens go (its sink): rules
// that only group tokens (name, pathArg, value, action...) pass theirs on to
// the enclosing statement, as the grammar's words in source order. The
// AST's shape is the one the grammar gives: a statement rule is a Statement,
// whose first token is its keyword; `condition` (an `or` of `and` groups) and
// `predicate` are Condition nodes; `valueExpr` is a ValueExpr.
//
// Only an error-free parse's AST is used. On a parse with syntax errors
// (error recovery consumes and skips tokens) the events still pair up, and
// every step below is bounds-checked, so the throwaway AST is merely wrong.
class AstListener : public antlr4::tree::ParseTreeListener {
 public:
  AstListener(const OffsetMap& offsets, std::string_view text) : offsets_(offsets), text_(text) {}

  // Before a second parse of the same tokens.
  void Reset() {
    file_ = ast::File{};
    frames_.clear();
    statements_.clear();
    conditions_.clear();
    values_.clear();
  }
  ast::File Take() { return std::move(file_); }

  void enterEveryRule(antlr4::ParserRuleContext* ctx) override {
    const size_t rule = ctx->getRuleIndex();
    const Sink parent = frames_.empty() ? Sink::kNone : frames_.back().sink;
    Sink sink = parent;  // a grouping rule: its tokens are its parent's
    switch (rule) {
      case CocoonParser::RuleFile:
      case CocoonParser::RuleTopItem:
        sink = Sink::kNone;
        break;
      case CocoonParser::RuleDirective:
        file_.directives.emplace_back();
        sink = Sink::kDirective;
        break;
      case CocoonParser::RuleProfile:
        file_.profiles.emplace_back();
        sink = Sink::kNone;  // PROFILE, EXTENDS and the braces
        break;
      case CocoonParser::RuleName:
        if (!frames_.empty() && frames_.back().rule == CocoonParser::RuleProfile) sink = Sink::kProfileName;
        break;
      case CocoonParser::RuleCondition:
        if (parent == Sink::kStatement && !statements_.empty()) {
          statements_.back().condition_index = statements_.back().args.size();  // the words before `if`
        }
        conditions_.emplace_back().kind = ast::Condition::Kind::kOr;
        conditions_.emplace_back().kind = ast::Condition::Kind::kAnd;  // its first `and` group
        sink = Sink::kCondition;
        break;
      case CocoonParser::RulePredicate:
        conditions_.emplace_back().kind = ast::Condition::Kind::kCompare;
        sink = Sink::kCondition;
        break;
      case CocoonParser::RuleOperand: sink = Sink::kOperand; break;
      case CocoonParser::RuleValueExpr:
        values_.emplace_back();
        sink = Sink::kValue;
        break;
      default:
        if (IsStatement(rule)) {
          statements_.emplace_back();
          sink = Sink::kStatement;
        }
        break;
    }
    frames_.push_back(Frame{rule, sink});
  }

  void exitEveryRule(antlr4::ParserRuleContext* ctx) override {
    // ANTLR exits every rule also while an exception unwinds the parse
    // (stage 1 bailing out, too many errors): that AST is thrown away (and
    // Reset), and nothing may throw from inside the unwinding.
    if (std::uncaught_exceptions() > 0 || frames_.empty()) return;
    const size_t rule = frames_.back().rule;
    frames_.pop_back();
    if (IsStatement(rule)) return ExitStatement(rule, ctx);
    switch (rule) {
      case CocoonParser::RuleDirective:
        if (!file_.directives.empty()) file_.directives.back().span = SpanOf(ctx);
        break;
      case CocoonParser::RuleProfile:
        if (!file_.profiles.empty()) file_.profiles.back().span = SpanOf(ctx);
        break;
      case CocoonParser::RuleCondition:
      case CocoonParser::RulePredicate:
        ExitCondition(rule, ctx);
        break;
      case CocoonParser::RuleValueExpr:
        ExitValue(ctx);
        break;
      default:
        break;
    }
  }

  // Every token the parser consumes, in order (PolicyParser::consume).
  void Consumed(antlr4::Token* token) {
    if (frames_.empty()) return;
    switch (frames_.back().sink) {
      case Sink::kNone: break;
      case Sink::kDirective: return DirectiveToken(token);
      case Sink::kProfileName: return ProfileNameToken(token);
      case Sink::kStatement: return StatementToken(token);
      case Sink::kCondition: return ConditionToken(token);
      case Sink::kOperand: return OperandToken(token);
      case Sink::kValue:
        if (!values_.empty() && token->getType() != CocoonParser::PIPE) values_.back().terms.push_back(WordOf(token));
        break;
    }
  }

  // Tokens come through Consumed(): the parser makes no terminal nodes.
  void visitTerminal(antlr4::tree::TerminalNode*) override {}
  void visitErrorNode(antlr4::tree::ErrorNode*) override {}

 private:
  enum class Sink : uint8_t { kNone, kDirective, kProfileName, kStatement, kCondition, kOperand, kValue };
  struct Frame {
    size_t rule;
    Sink sink;
  };

  static bool IsStatement(size_t rule) {
    return rule == CocoonParser::RuleProfileStmt || rule == CocoonParser::RuleFsStmt ||
           rule == CocoonParser::RuleLimitStmt || rule == CocoonParser::RuleSyscallStmt ||
           rule == CocoonParser::RuleEnvStmt || rule == CocoonParser::RuleRuntimeStmt ||
           rule == CocoonParser::RuleDeviceStmt || rule == CocoonParser::RuleAnyStmt ||
           rule == CocoonParser::RuleEndpoint;  // an endpoint is a one-word statement in its block
  }

  void DirectiveToken(antlr4::Token* token) {  // (INCLUDE | IMPORT) STRING
    if (file_.directives.empty()) return;
    ast::Directive& d = file_.directives.back();
    (d.keyword.span.size() == 0 ? d.keyword : d.target) = WordOf(token);
  }

  void ProfileNameToken(antlr4::Token* token) {  // PROFILE name (EXTENDS name)?
    if (file_.profiles.empty()) return;
    ast::Profile& p = file_.profiles.back();
    if (p.name.span.size() == 0) {
      p.name = WordOf(token);
    } else {
      p.parent = WordOf(token);
      p.has_parent = true;
    }
  }

  // The first word of a statement is its keyword; braces mark its block.
  void StatementToken(antlr4::Token* token) {
    if (statements_.empty()) return;
    ast::Statement& s = statements_.back();
    const size_t type = token->getType();
    if (type == CocoonParser::LBRACE) {
      s.has_block = true;
      s.block_open = TokenSpan(token);
    } else if (type == CocoonParser::IF && frames_.back().rule == CocoonParser::RuleSyscallStmt) {
      // The `if` of a rule's condition, which the formatter writes back
      // itself. Elsewhere `if` is a word like any keyword: a runtime or
      // profile name, the head of an unknown statement (once dropped here,
      // so `cocoon fmt` lost it; found by parse_fuzzer).
    } else if (type != CocoonParser::RBRACE) {
      if (s.keyword.span.size() == 0) {
        s.keyword = WordOf(token);
      } else {
        s.args.push_back(WordOf(token));
      }
    }
  }

  void ExitStatement(size_t rule, antlr4::ParserRuleContext* ctx) {
    if (statements_.empty()) return;
    ast::Statement s = std::move(statements_.back());
    statements_.pop_back();
    s.span = rule == CocoonParser::RuleEndpoint ? s.keyword.span : SpanOf(ctx);
    if (!statements_.empty()) {
      statements_.back().block.push_back(std::move(s));
    } else if (!file_.profiles.empty()) {
      file_.profiles.back().body.push_back(std::move(s));
    }
  }

  // predicate : operand (EQ | NE | LT | LE | GT | GE) valueExpr
  //           | operand IN '{' valueExpr (',' valueExpr)* ','? '}'
  //           | '(' condition ')'
  // condition : predicate ((AND | OR) predicate)*   -- OR ends an `and` group.
  void ConditionToken(antlr4::Token* token) {
    if (frames_.back().rule == CocoonParser::RuleCondition) {
      if (token->getType() == CocoonParser::OR && CloseGroup()) {
        conditions_.emplace_back().kind = ast::Condition::Kind::kAnd;
      }
      return;
    }
    if (conditions_.empty() || frames_.back().rule != CocoonParser::RulePredicate) return;
    ast::Condition& c = conditions_.back();
    switch (token->getType()) {
      case CocoonParser::IN: c.kind = ast::Condition::Kind::kIn; break;
      case CocoonParser::LPAREN: c.parenthesized = true; break;  // replaced by the inner condition
      case CocoonParser::EQ:
      case CocoonParser::NE:
      case CocoonParser::LT:
      case CocoonParser::LE:
      case CocoonParser::GT:
      case CocoonParser::GE: {
        const Span span = TokenSpan(token);
        c.op = std::string(text_.substr(span.begin, span.size()));
        break;
      }
      default: break;  // ')', '{', ',', '}'
    }
  }

  // operand : ARG | '(' ARG '&' valueExpr ')'
  void OperandToken(antlr4::Token* token) {
    if (conditions_.empty()) return;
    const size_t type = token->getType();
    if (type == CocoonParser::ARG) conditions_.back().arg = WordOf(token);
    if (type == CocoonParser::LPAREN) conditions_.back().masked = true;
  }

  // Ends the open `and` group of a condition, which spans its predicates,
  // and adds it to the condition's `or`. A group of one is that predicate.
  bool CloseGroup() {
    if (conditions_.size() < 2) return false;
    ast::Condition group = std::move(conditions_.back());
    conditions_.pop_back();
    if (!group.children.empty()) group.span = Span{group.children.front().span.begin, group.children.back().span.end};
    if (group.children.size() == 1) {
      ast::Condition only = std::move(group.children[0]);  // not `group = move(group.children[0])`: that frees its source
      group = std::move(only);
    }
    conditions_.back().children.push_back(std::move(group));
    return true;
  }

  // A condition of one group is that group; a parenthesized condition is
  // its predicate, spanning the parentheses.
  void ExitCondition(size_t rule, antlr4::ParserRuleContext* ctx) {
    if (rule == CocoonParser::RuleCondition && !CloseGroup()) return;
    if (conditions_.empty()) return;
    ast::Condition c = std::move(conditions_.back());
    conditions_.pop_back();
    c.span = SpanOf(ctx);
    if (rule != CocoonParser::RulePredicate && c.children.size() == 1) {
      ast::Condition only = std::move(c.children[0]);  // not `c = move(c.children[0])`: that frees its source
      c = std::move(only);
    }
    if (rule == CocoonParser::RuleCondition) {
      if (!frames_.empty() && frames_.back().rule == CocoonParser::RulePredicate && !conditions_.empty()) {
        c.parenthesized = true;
        conditions_.back() = std::move(c);  // '(' condition ')': the predicate's span is set on its exit
      } else if (!statements_.empty()) {
        statements_.back().condition = std::make_shared<ast::Condition>(std::move(c));
      }
    } else if (!conditions_.empty()) {
      conditions_.back().children.push_back(std::move(c));
    }
  }

  // valueExpr : (NUMBER | IDENT) (PIPE (NUMBER | IDENT))*   -- a mask, or a compared value
  void ExitValue(antlr4::ParserRuleContext* ctx) {
    if (values_.empty()) return;
    ast::ValueExpr v = std::move(values_.back());
    values_.pop_back();
    v.span = SpanOf(ctx);
    if (conditions_.empty() || frames_.empty()) return;
    if (frames_.back().rule == CocoonParser::RuleOperand) {
      conditions_.back().mask = std::move(v);
    } else {
      conditions_.back().values.push_back(std::move(v));
    }
  }

  static std::string Unescape(std::string_view quoted) {
    std::string out;
    if (quoted.size() < 2) return out;
    quoted = quoted.substr(1, quoted.size() - 2);
    for (size_t i = 0; i < quoted.size(); ++i) {
      char c = quoted[i];
      if (c == '\\' && i + 1 < quoted.size()) {
        char n = quoted[++i];
        out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
      } else {
        out += c;
      }
    }
    return out;
  }

  ast::Word WordOf(antlr4::Token* token) const {
    ast::Word w;
    w.span = TokenSpan(token);
    // From our UTF-8 text: Token::getText() re-encodes from UTF-32 on every call.
    const std::string_view text = text_.substr(w.span.begin, w.span.size());
    switch (token->getType()) {
      case CocoonParser::IDENT: w.kind = ast::WordKind::kIdent; break;
      case CocoonParser::STRING: w.kind = ast::WordKind::kString; w.text = Unescape(text); return w;
      case CocoonParser::PATH: w.kind = ast::WordKind::kPath; break;
      case CocoonParser::NUMBER: w.kind = ast::WordKind::kNumber; break;
      case CocoonParser::QUANTITY: w.kind = ast::WordKind::kQuantity; break;
      case CocoonParser::HOSTPORT: w.kind = ast::WordKind::kHostPort; break;
      case CocoonParser::GROUP: w.kind = ast::WordKind::kGroup; break;
      case CocoonParser::ARG: w.kind = ast::WordKind::kArg; break;
      default: w.kind = ast::WordKind::kKeyword; break;
    }
    w.text = text;
    return w;
  }

  Span TokenSpan(antlr4::Token* token) const {
    return Span{offsets_.Byte(token->getStartIndex()), offsets_.Byte(token->getStopIndex() + 1)};
  }
  Span SpanOf(antlr4::ParserRuleContext* ctx) const {
    antlr4::Token* stop = ctx->stop ? ctx->stop : ctx->start;
    return Span{offsets_.Byte(ctx->start->getStartIndex()), offsets_.Byte(stop->getStopIndex() + 1)};
  }

  const OffsetMap& offsets_;
  std::string_view text_;  // the whole Source text (offsets are absolute)
  ast::File file_;
  std::vector<Frame> frames_;                // one per rule the parser is in
  std::vector<ast::Statement> statements_;   // open statements, outermost first
  std::vector<ast::Condition> conditions_;   // open condition, `and` group and predicate nodes
  std::vector<ast::ValueExpr> values_;       // open valueExprs
};

// The generated parser, building no parse tree: each rule's context is still
// made (the generated code does that), but consume() makes no terminal node
// and links nothing; it hands the token to the AST listener instead.
class PolicyParser : public CocoonParser {
 public:
  PolicyParser(antlr4::TokenStream* input, AstListener& listener) : CocoonParser(input), listener_(listener) {
    setBuildParseTree(false);
    addParseListener(&listener_);  // enterEveryRule / exitEveryRule
  }

  // Parser::consume (ANTLR 4.9) without the tree: it makes a node for every
  // token when a tree is built *or a listener is registered*.
  antlr4::Token* consume() override {
    antlr4::Token* token = getCurrentToken();
    if (token->getType() != antlr4::Token::EOF) _input->consume();
    listener_.Consumed(token);
    return token;
  }

 private:
  AstListener& listener_;
};

std::vector<ast::Comment> CollectComments(antlr4::CommonTokenStream& tokens, const OffsetMap& offsets) {
  std::vector<ast::Comment> comments;
  for (antlr4::Token* token : tokens.getTokens()) {
    if (token->getType() == CocoonLexer::COMMENT) {
      comments.push_back({Span{offsets.Byte(token->getStartIndex()), offsets.Byte(token->getStopIndex() + 1)}});
    }
  }
  return comments;
}

constexpr size_t kMaxControlErrors = 10;

// Whether the hidden character `c` is a presentation selector a policy may
// hold: U+FE0E (text style) or U+FE0F (emoji style), right after a visible
// character that is not a space nor itself hidden (so none stacked, none
// after whitespace, none at a line's start), in a comment or in the string
// of a `description` on its own line. Anywhere else it stays refused
// (docs/language.md, Lexical structure): in a name, a path or any other
// string its bytes reach a program or a file system, where "✅" and "✅️"
// differ though they look the same. A line is scanned like the lexer does
// (strings and comments never span lines; `"` opens and closes a string,
// `\` escapes inside it, `#` outside one starts a comment).
bool IsAllowedPresentationSelector(std::string_view text, const HiddenCharacter& c) {
  if (c.code_point != 0xFE0E && c.code_point != 0xFE0F) return false;
  size_t base = c.offset;
  if (base == 0) return false;
  do {
    --base;
  } while (base > 0 && (static_cast<unsigned char>(text[base]) & 0xC0) == 0x80);
  uint32_t cp = 0;
  if (DecodeUtf8(text, base, cp) != c.offset - base || !IsDrawnAsItself(cp)) return false;
  constexpr uint32_t kSpaces[] = {0x20, 0xA0, 0x1680, 0x202F, 0x205F, 0x3000};
  if (std::find(std::begin(kSpaces), std::end(kSpaces), cp) != std::end(kSpaces) || (cp >= 0x2000 && cp <= 0x200A)) {
    return false;
  }
  const size_t line = text.rfind('\n', c.offset) == std::string_view::npos ? 0 : text.rfind('\n', c.offset) + 1;
  bool in_string = false;
  size_t string_start = 0;
  for (size_t i = line; i < c.offset; ++i) {
    if (in_string && text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      in_string = !in_string;
      string_start = i;
    } else if (!in_string && text[i] == '#') {
      return true;  // in a comment
    }
  }
  if (!in_string) return false;
  // The string must follow `description` on the same line (the statement's
  // keyword, after the line's indentation or a `{`).
  std::string_view before = text.substr(line, string_start - line);
  while (!before.empty() && (before.back() == ' ' || before.back() == '\t')) before.remove_suffix(1);
  if (!before.ends_with("description")) return false;
  before.remove_suffix(std::string_view("description").size());
  return before.empty() || before.back() == ' ' || before.back() == '\t' || before.back() == '{';
}

bool CheckInput(const SourcePtr& source, const ParseOptions& options, Diagnostics& diagnostics) {
  const std::string& text = source->text();
  if (text.size() > options.max_file_bytes) {
    diagnostics.Error(source, Span{0, 0},
                      "file is " + std::to_string(text.size()) + " bytes; the limit is " +
                          std::to_string(options.max_file_bytes));
    return false;
  }
  size_t bad = FindInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    char hex[8];
    snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    uint32_t at = static_cast<uint32_t>(bad);
    diagnostics.Error(source, Span{at, at + 1}, std::string("invalid UTF-8 (byte ") + hex + ")");
    return false;
  }
  // ParseChecked strips one byte-order mark and ANTLR's decoder would strip a
  // second one unseen, shifting every position (and `cocoon fmt`'s output) by one.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.starts_with(kBom) && std::string_view(text).substr(kBom.size()).starts_with(kBom)) {
    diagnostics.Error(source, Span{0, 6}, "the file starts with two byte-order marks",
                      "remove the extra byte-order mark (U+FEFF)");
    return false;
  }
  // Invisible and direction-changing characters: every one is reported.
  std::vector<HiddenCharacter> hidden = FindHiddenCharacters(text);
  std::erase_if(hidden, [&text](const HiddenCharacter& c) { return IsAllowedPresentationSelector(text, c); });
  for (const HiddenCharacter& c : hidden) {
    char code[16];
    snprintf(code, sizeof code, "U+%04X", c.code_point);
    uint32_t at = static_cast<uint32_t>(c.offset);
    diagnostics.Error(source, Span{at, at + static_cast<uint32_t>(c.length)},
                      std::string("invisible character ") + code + " (" + std::string(c.name) +
                          "): what a reviewer reads would not be what runs",
                      "remove it; no policy needs invisible or direction-changing characters");
  }
  // Control characters: a terminal acts on them instead of drawing them (a
  // lone CR or an ESC [2K can make a line or a comment erase what precedes
  // it), so a policy shown on a screen would not be the policy that runs.
  // A file with old Mac line endings has a lone CR on every line: one error.
  // Random bytes hold one every few dozen: ten are reported, then a count.
  std::vector<HiddenCharacter> controls = FindControlCharacters(text);
  size_t lone_crs = 0, reported = 0;
  for (const HiddenCharacter& c : controls) {
    uint32_t at = static_cast<uint32_t>(c.offset);
    Span span{at, at + static_cast<uint32_t>(c.length)};
    if (c.code_point == '\r') {
      if (lone_crs++ == 0) {
        diagnostics.Error(source, span,
                          "lone carriage return: a terminal shows what follows it over what precedes it, "
                          "and lines would be numbered differently by different readers",
                          "use LF (or CRLF) line endings");
      }
      continue;
    }
    if (reported++ >= kMaxControlErrors) continue;
    char code[16];
    snprintf(code, sizeof code, "U+%04X", c.code_point);
    diagnostics.Error(source, span,
                      std::string("control character ") + code + " " + std::string(c.name) +
                          ": a terminal acts on it instead of showing it, so what a reviewer reads would not be "
                          "what runs",
                      "remove it; in a string, write what it stands for another way");
  }
  if (reported > kMaxControlErrors) {
    diagnostics.Note(nullptr, Span{}, source->name() + ": " + std::to_string(reported - kMaxControlErrors) +
                                          " more control characters are not shown");
  }
  return hidden.empty() && controls.empty();
}

// Drops from `statements` the statement a syntax error at byte `at` is in,
// or right after (`limits { memory }`: the statement recovery left short):
// the last one that starts at or before it. When recovery made the token in
// error a statement of its own (`network offf`, `cwd relative`: `offf` and
// `relative` read as unknown statements), the one before it goes too: it is
// the one left short. A block that holds the error keeps its other
// statements (`limits { memory 1GiB bogus }` keeps `memory 1GiB`).
// Conservative: a complete statement followed by a stray token goes too.
void PruneDamagedStatements(std::vector<ast::Statement>& statements, uint32_t at) {
  auto last = std::find_if(statements.rbegin(), statements.rend(),
                           [at](const ast::Statement& s) { return s.span.begin <= at; });
  if (last == statements.rend()) return;
  ast::Statement& s = *last;
  if (s.has_block && at > s.block_open.begin && at < s.span.end) return PruneDamagedStatements(s.block, at);
  auto first = std::next(last).base();  // as a forward iterator
  if (s.span.begin == at && first != statements.begin()) --first;
  statements.erase(first, std::next(last).base() + 1);
}

std::optional<ast::File> ParseChecked(const SourcePtr& source, const ParseOptions& options,
                                      Diagnostics& diagnostics) {
  // A UTF-8 byte-order mark is not part of the program.
  std::string_view text = source->text();
  uint32_t base = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  text.remove_prefix(base);
  OffsetMap offsets(text, base);

  PolicyInputStream input(text);
  // The DFAs outlive the recognizers, whose destructors delete the
  // simulators that use them; each is built after its recognizer, whose
  // constructor deserializes the ATN (lazily, grammar/lazy_atn_init.cmake).
  std::optional<PerParseDfa> lexer_dfa, parser_dfa;
  const bool shared = options.dfa_reuse == DfaReuse::kProcessWide;
  std::pmr::monotonic_buffer_resource token_arena;  // outlives the lexer and the token stream
  PolicyLexer lexer(&input, token_arena);
  lexer.UseDfa(shared ? ProcessWideLexerDfa(lexer.getATN()) : lexer_dfa.emplace(lexer.getATN()));
  ErrorListener listener(source, offsets, std::max<size_t>(1, options.max_syntax_errors), diagnostics);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);
  PolicyTokenStream tokens(&lexer);
  tokens.fill();
  if (listener.count() > 0) return std::nullopt;
  if (!CheckNesting(tokens, source, offsets, options.max_nesting, diagnostics)) return std::nullopt;
  const size_t diagnostics_before = diagnostics.all().size();
  // Reported with any syntax errors below; either way there is no AST.
  const bool strings_ok = CheckStringContents(tokens, source, offsets, diagnostics);
  std::vector<Span> units_reported;
  const size_t errors_before_units = diagnostics.error_count() + diagnostics.suppressed();
  const size_t units_from = diagnostics.all().size();
  const bool units_ok = CheckUnitsWrittenApart(tokens, source, offsets, diagnostics, units_reported);
  const size_t units_to = diagnostics.all().size();
  const size_t unit_errors = diagnostics.error_count() + diagnostics.suppressed() - errors_before_units;
  const bool names_ok = CheckKeywordSyscallNames(tokens, source, offsets, diagnostics);
  const bool paths_ok = CheckBarePaths(tokens, source, offsets, diagnostics);
  const std::optional<uint32_t> comment_slip = CheckCommentsAfterPaths(tokens, source, offsets, diagnostics);
  if (comment_slip) listener.QuietFrom(*comment_slip);
  // A '#' may have swallowed a brace: the brace scan would only report that.
  if (!comment_slip && !CheckUnmatchedBraces(tokens, source, offsets, diagnostics)) return std::nullopt;

  AstListener ast_listener(offsets, source->text());
  PolicyParser parser(&tokens, ast_listener);
  PerParseDfa& parser_dfas = shared ? ProcessWideParserDfa(parser.getATN()) : parser_dfa.emplace(parser.getATN());
  parser.setInterpreter(new antlr4::atn::ParserATNSimulator(&parser, parser.getATN(), parser_dfas.dfa(),
                                                            parser_dfas.contexts()));  // deletes the generated one
  parser.removeErrorListeners();
  // Stage 1: SLL prediction, bail at the first error. Almost every real file
  // parses here, and it is the fast path.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  try {
    parser.file();
  } catch (const antlr4::ParseCancellationException&) {
    // Stage 2: full LL with error recovery, to report good messages.
    tokens.seek(0);
    parser.reset();
    ast_listener.Reset();
    parser.addErrorListener(&listener);
    parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
    try {
      parser.file();
    } catch (const TooManyErrors&) {
      if (listener.first() && !comment_slip) NoteUnclosedBlock(tokens, source, offsets, *listener.first(), diagnostics);
      diagnostics.Note(nullptr, Span{}, source->name() + ": stopped parsing after " +
                                            std::to_string(listener.count()) + " syntax errors");
      return std::nullopt;
    }
    if (listener.first() && !comment_slip) NoteUnclosedBlock(tokens, source, offsets, *listener.first(), diagnostics);
  }
  // SLL can reject what full LL accepts; only LL's verdict counts.
  const bool syntax_ok = listener.count() == 0 && !comment_slip;
  const bool for_checking = options.slip_recovery == SlipRecovery::kAstForChecking;
  if (!for_checking && (!syntax_ok || !strings_ok || !names_ok || !paths_ok || !units_ok)) return std::nullopt;
  ast::File file = ast_listener.Take();
  file.reported = std::move(units_reported);
  file.slip_errors = unit_errors;
  if (!syntax_ok || !strings_ok || !names_ok || !paths_ok) {
    // For `check`: the profiles with an error inside are marked, and not
    // checked; the others are. An error outside every profile (a directive,
    // between profiles) leaves no AST: a missing import would make its
    // profiles' parents unknown, which is only noise.
    const std::vector<Diagnostic>& all = diagnostics.all();
    size_t errors = 0;
    for (size_t i = diagnostics_before; i < all.size(); ++i) {
      if (all[i].severity != Severity::kError || (i >= units_from && i < units_to)) continue;
      ++errors;
      const uint32_t at = all[i].span.begin;
      bool inside = false;
      for (ast::Profile& profile : file.profiles) {
        if (at >= profile.span.begin && at <= profile.span.end) {
          inside = profile.has_syntax_errors = true;
          profile.syntax_errors.push_back(at);
          PruneDamagedStatements(profile.body, at);
        }
      }
      if (!inside) return std::nullopt;
    }
    // Past a '#' that swallowed a line, the parse is recovery's guess: the
    // statements from there on are dropped.
    for (ast::Profile& profile : file.profiles) {
      if (!comment_slip || profile.span.end <= *comment_slip) continue;
      profile.has_syntax_errors = true;
      profile.syntax_errors.push_back(std::max(*comment_slip, profile.span.begin));
      std::erase_if(profile.body, [&](const ast::Statement& st) { return st.span.end > *comment_slip; });
    }
    file.slip_errors += errors;
  }
  file.source = source;
  file.comments = CollectComments(tokens, offsets);
  return file;
}

}  // namespace

std::optional<ast::File> ParsePolicy(const SourcePtr& source, const ParseOptions& options,
                                     Diagnostics& diagnostics) {
  if (!CheckInput(source, options, diagnostics)) return std::nullopt;
  try {
    return ParseChecked(source, options, diagnostics);
  } catch (const std::exception& e) {
    diagnostics.Error(source, Span{0, 0}, std::string("internal parser error: ") + e.what());
  } catch (...) {
    diagnostics.Error(source, Span{0, 0}, "internal parser error");
  }
  return std::nullopt;
}

}  // namespace cocoon::frontend
