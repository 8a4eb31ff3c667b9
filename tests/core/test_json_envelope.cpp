#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/json_envelope.hpp"
#include "core/json_limits.hpp"
#include "mutations.hpp"
#include "core/json_text.hpp"

using agentq::MessageEnvelope;
using agentq::scan_message_envelope;
using json = nlohmann::json;

namespace {

// Equal values of equal types (json's == takes 1 and 1u for equal).
bool same(const json& a, const json& b) { return a.type() == b.type() && a == b; }

// What the scan says of TEXT, against nlohmann's tree of it (as the bridge
// read it before): when the scan reads TEXT, the full parser reads it too,
// as an object with the same id, method and params.requestId, whose dump()
// is the scan's text.  Returns whether the scan read it.
bool expect_agrees(const std::string& text) {
  std::optional<MessageEnvelope> scan = scan_message_envelope(text);
  if (!scan) return false;
  std::optional<json> full = agentq::parse_json_bounded(text);
  EXPECT_TRUE(full && full->is_object()) << text;
  if (!full || !full->is_object()) return true;
  auto id = full->find("id");
  EXPECT_EQ(scan->has_id, id != full->end()) << text;
  if (scan->has_id && id != full->end()) {
    EXPECT_TRUE(same(scan->id, *id)) << text << "\n" << scan->id.dump() << " vs " << id->dump();
    EXPECT_EQ(scan->id_text, id->dump()) << text;
    EXPECT_EQ(scan->id_text, agentq::json_scalar_text(*id)) << text;
  }
  auto method = full->find("method");
  EXPECT_EQ(scan->has_method, method != full->end()) << text;
  if (scan->has_method && method != full->end()) {
    EXPECT_TRUE(method->is_string()) << text;
    if (method->is_string()) {
      EXPECT_EQ(scan->method, method->get<std::string>()) << text;
    }
  }
  auto params = full->find("params");
  const json* request = nullptr;
  if (params != full->end() && params->is_object())
    if (auto it = params->find("requestId"); it != params->end()) request = &*it;
  EXPECT_EQ(scan->has_request_id, request != nullptr) << text;
  if (scan->has_request_id && request) {
    EXPECT_TRUE(same(scan->request_id, *request)) << text;
    EXPECT_EQ(scan->request_id_text, request->dump()) << text;
  }
  return true;
}

MessageEnvelope scanned(const std::string& text) {
  std::optional<MessageEnvelope> scan = scan_message_envelope(text);
  EXPECT_TRUE(scan.has_value()) << text;
  expect_agrees(text);
  return scan.value_or(MessageEnvelope{});
}

// The messages the bridge relays almost always.
const std::vector<std::string> kUsual = {
    R"json({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json",
    R"json({"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"},"_meta":{"progressToken":3}},"jsonrpc":"2.0","id":3})json",
    R"({"jsonrpc":"2.0","id":"sly-agent-q-mcp-bridge-ping-12","result":{}})",
    R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"=> 3\n\u001b[0m \"é\" 😀 \ud83d\ude00"}],"isError":false}})",
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})",
    R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-1","reason":"user"}})",
    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5,"total":1}})",
    R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
    " {} ",
    "{\"id\":1}\r",
};

}  // namespace

TEST(JsonEnvelope, ReadsTheUsualMessagesAsNlohmannDoes) {
  for (const std::string& text : kUsual) {
    EXPECT_TRUE(scan_message_envelope(text).has_value()) << text;
    expect_agrees(text);
  }
  MessageEnvelope call = scanned(kUsual[0]);
  EXPECT_TRUE(call.has_id && call.has_method && !call.has_request_id);
  EXPECT_TRUE(call.id.is_number_unsigned());
  EXPECT_EQ(call.id_text, "1");
  EXPECT_EQ(call.method, "tools/call");
  MessageEnvelope cancel = scanned(kUsual[5]);
  EXPECT_FALSE(cancel.has_id);
  EXPECT_EQ(cancel.method, "notifications/cancelled");
  EXPECT_EQ(cancel.request_id, "a-1");
  EXPECT_EQ(cancel.request_id_text, "\"a-1\"");
}

TEST(JsonEnvelope, TheMembersOfNestedObjectsAreNotTheMessages) {
  // "id" and "method" inside params, result, error or strings.
  MessageEnvelope answer = scanned(
      R"({"result":{"id":5,"method":"x","params":{"requestId":9}},"error":{"id":6},"jsonrpc":"2.0","id":"a"})");
  EXPECT_TRUE(answer.has_id);
  EXPECT_EQ(answer.id, "a");
  EXPECT_FALSE(answer.has_method);
  EXPECT_FALSE(answer.has_request_id);
  MessageEnvelope notification =
      scanned(R"({"params":{"id":1,"method":"m","data":{"requestId":2},"requestId":3},"jsonrpc":"2.0"})");
  EXPECT_FALSE(notification.has_id);
  EXPECT_FALSE(notification.has_method);
  EXPECT_TRUE(notification.has_request_id);
  EXPECT_EQ(notification.request_id_text, "3");
  MessageEnvelope quoted = scanned(R"({"x":"\"id\":1,\"method\":\"m\"","y":["id",{"method":"z"}]})");
  EXPECT_FALSE(quoted.has_id || quoted.has_method);
  // params not an object: no requestId of its own.
  EXPECT_FALSE(scanned(R"({"method":"m","params":[{"requestId":1}]})").has_request_id);
  EXPECT_FALSE(scanned(R"({"method":"m","params":"requestId"})").has_request_id);
}

TEST(JsonEnvelope, MethodBeforeOrAfterTheId) {
  MessageEnvelope before = scanned(R"({"method":"ping","id":"p"})");
  MessageEnvelope after = scanned(R"({"id":"p","method":"ping"})");
  for (const MessageEnvelope& envelope : {before, after}) {
    EXPECT_TRUE(envelope.has_id && envelope.has_method);
    EXPECT_EQ(envelope.method, "ping");
    EXPECT_EQ(envelope.id_text, "\"p\"");
  }
}

TEST(JsonEnvelope, IdsAreKeyedAsDumpWritesThem) {
  // Strings with escapes: the text dump() writes, not the text sent.
  EXPECT_EQ(scanned(R"({"id":"a\/b"})").id_text, R"("a/b")");
  EXPECT_EQ(scanned(R"({"id":"a\"b\\c"})").id_text, R"("a\"b\\c")");
  EXPECT_EQ(scanned(R"({"id":"\t\n\b\f\r"})").id_text, R"("\t\n\b\f\r")");
  EXPECT_EQ(scanned(R"({"id":"\/"})").id, "/");
  EXPECT_EQ(scanned("{\"id\":\"\xc3\xa9\x7f\"}").id_text, "\"\xc3\xa9\x7f\"");
  // Numbers: unsigned unless negative; -0 is 0.
  EXPECT_TRUE(scanned(R"({"id":0})").id.is_number_unsigned());
  EXPECT_TRUE(scanned(R"({"id":-3})").id.is_number_integer());
  EXPECT_EQ(scanned(R"({"id":-0})").id_text, "0");
  EXPECT_EQ(scanned(R"({"id":999999999999999999})").id_text, "999999999999999999");
  EXPECT_EQ(scanned(R"({"id":-999999999999999999 })").id_text, "-999999999999999999");
  EXPECT_TRUE(scanned(R"({"id":null})").id.is_null());
  EXPECT_EQ(scanned(R"({"id" : null , "method" : "x"})").id_text, "null");
  // The bridge's pings.
  MessageEnvelope ping = scanned(R"({"jsonrpc":"2.0","id":"sly-agent-q-mcp-bridge-ping-7","result":{}})");
  EXPECT_TRUE(ping.id.get_ref<const std::string&>().starts_with("sly-agent-q-mcp-bridge-ping-"));
}

TEST(JsonEnvelope, TheUnusualIsLeftToTheFullParser) {
  for (const char* text : {
           // Not one object.
           R"([{"id":1,"method":"ping"}])", R"("id")", "1", "null", "", " ", "\xef\xbb\xbf{}",
           // Ids and requestIds of other kinds, or with \u escapes.
           R"({"id":1.5})", R"({"id":1e2})", R"({"id":true})", R"({"id":{}})", R"({"id":[1]})",
           R"({"id":1234567890123456789})", R"({"id":"\u0041"})", R"({"method":"m","params":{"requestId":{}}})",
           R"({"params":{"requestId":2.5}})", R"({"params":{"requestId":"\u00e9"}})",
           // A method that is no string, or with a \u escape.
           R"({"method":1})", R"({"method":null})", R"({"method":"\u0070ing"})",
           // Duplicates of what is read (nlohmann takes the last).
           R"({"id":1,"id":2})", R"({"method":"a","method":"b"})", R"({"params":{},"params":{"requestId":1}})",
           R"({"params":{"requestId":1,"requestId":2}})",
           // Keys with \u escapes where the members are read: "\u0069d" is "id".
           R"({"\u0069d":1})", R"({"params":{"requestI\u0064":1}})",
           // Numbers with an exponent, or too long to be sure of.
           R"({"result":1e400})", R"({"result":[1E2]})",
       }) {
    EXPECT_FALSE(scan_message_envelope(text).has_value()) << text;
  }
  std::string long_number = R"({"result":)" + std::string(301, '9') + "}";
  EXPECT_FALSE(scan_message_envelope(long_number).has_value());
  // Short escapes in keys are read: "\/id" is "/id", not "id"; "i\"d" neither.
  EXPECT_FALSE(scanned(R"({"\/id":1,"i\"d":2,"method\t":3})").has_id);
  EXPECT_FALSE(scanned(R"({"i\/d":1,"\/":2})").has_id);
  // \u escapes elsewhere are checked, not left.
  EXPECT_TRUE(scan_message_envelope(R"({"id":1,"result":{"\u0069d":"\ud83d\ude00\u0000"}})").has_value());
  expect_agrees(R"({"id":1,"result":{"\u0069d":"\ud83d\ude00\u0000"}})");
}

TEST(JsonEnvelope, InvalidTextIsNeverRead) {
  for (std::string text : {
           "{", "}", R"({"id":1,})", R"({"id":1 "method":"x"})", R"({id:1})", R"({"id":01})", R"({"id":-})",
           R"({"id":1x})", R"({"id":1.})", R"({"result":.5})", R"({"result":1.})", R"({"result":-})",
           R"({"result":01})", R"({"result":[1,]})", R"({"result":[,1]})", R"({"result":{"a":1,}})",
           R"({"result":tru})", R"({"result":truex})", R"({"result":nul})", R"({"id":"a)", R"({"id":"a\x"})",
           R"({"id":1}{})", R"({"id":1} x)", R"({"result":"\ud800"})", R"({"result":"\udc00"})",
           R"({"result":"\ud800\u0041"})", R"({"result":"\ud800\\"})", R"({"result":"\u12"})",
           R"({"result":"\u12G4"})", "{\"result\":\"\x01\"}", "{\"result\":\"\xff\"}", "{\"result\":\"\xc0\xaf\"}",
           "{\"result\":\"\xed\xa0\x80\"}", "{\"id\":\"\xe2\x82\"}", "{\"result\":[1\t2]}", "/* c */{}",
       }) {
    EXPECT_FALSE(scan_message_envelope(text).has_value()) << text;
    EXPECT_FALSE(agentq::parse_json_bounded(text).has_value()) << text;  // the test's own check
  }
  std::string nul("{\"id\":\"a\0b\"}", 12);
  EXPECT_FALSE(scan_message_envelope(nul).has_value());
  std::string outside("{\"id\":1}\0", 9);
  EXPECT_FALSE(scan_message_envelope(outside).has_value());
}

TEST(JsonEnvelope, NestingUpToTheLimitOfTheBoundedParser) {
  // The message is 1 deep, its result 2 deep, …
  auto nested = [](int depth) {
    return R"({"id":1,"result":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_TRUE(scan_message_envelope(nested(agentq::kMaxJsonDepth)).has_value());
  EXPECT_TRUE(agentq::parse_json_bounded(nested(agentq::kMaxJsonDepth)).has_value());
  EXPECT_FALSE(scan_message_envelope(nested(agentq::kMaxJsonDepth + 1)).has_value());
  EXPECT_FALSE(agentq::parse_json_bounded(nested(agentq::kMaxJsonDepth + 1)).has_value());
}

// Long strings are stepped over eight bytes at a time: whatever ends or
// breaks the plain run, at whatever offset, is seen.
TEST(JsonEnvelope, LongStringsAreCheckedAtEveryOffset) {
  const std::vector<std::string> specials = {"\"", "\\\"", "\\n", "\\u0041", "\\ud800", "\x01", "\x1f", "\x7f",
                                             " ", "~", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x80", "\xff", "\xc3", "\\"};
  for (const std::string& special : specials) {
    for (std::size_t at = 0; at < 24; ++at) {
      std::string body = std::string(at, 'a') + special + std::string(24 - at, 'b');
      for (const std::string& text : {R"({"id":1,"result":")" + body + "\"}", R"({"id":")" + body + "\"}",
                                      R"({")" + body + R"(":1,"id":2})"})
        expect_agrees(text);
    }
  }
}

namespace {

// Random JSON-RPC messages as text, the usual with the hostile: members in
// any order, any whitespace, "id" and "method" nested, escapes, numbers
// of every form, duplicates, batches, and some invalid text.
class MessageMaker {
 public:
  explicit MessageMaker(unsigned seed) : random_(seed) {}

  std::string message() {
    if (chance(5)) return "[" + object(true) + (chance(50) ? "," + object(true) : "") + "]";
    return space() + object(true) + space();
  }

 private:
  bool chance(int percent) { return static_cast<int>(random_() % 100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& from) {
    return from[random_() % from.size()];
  }

  std::string space() {
    static const std::vector<std::string> kSpaces = {"", "", "", "", " ", "\t", "\r\n", "  \n "};
    return pick(kSpaces);
  }

  std::string string() {
    static const std::vector<std::string> kPieces = {
        "a", "id", "method", "requestId", "sly-agent-q-mcp-bridge-ping-", "(+ 1 2)", "42", " ", "\\\"", "\\\\",
        "\\/", "\\n", "\\t", "\\b\\f\\r", "\\u0041", "\\u00e9", "\\u001b", "\\ud83d\\ude00", "\xc3\xa9",
        "\xf0\x9f\x98\x80", "\x7f", "{", "}", "[", ":", ","};
    static const std::vector<std::string> kInvalid = {"\\ud800", "\\udc00", "\\x", "\x01", "\xff", "\xc0\xaf", "\\u12"};
    std::string text = "\"";
    int pieces = static_cast<int>(random_() % 5);
    for (int i = 0; i < pieces; ++i) text += chance(2) ? pick(kInvalid) : pick(kPieces);
    return text + "\"";
  }

  std::string number() {
    static const std::vector<std::string> kNumbers = {
        "0", "-0", "7", "-12", "42", "123456789012345678", "-123456789012345678", "1234567890123456789",
        "18446744073709551616", "1.5", "-0.25", "0.000000000000000000000000001", "1e3", "1E-2", "2.5e+10", "1e400",
        std::string(40, '7'), std::string(310, '9'), "01", "1.", ".5", "-", "+1"};
    return pick(kNumbers);
  }

  std::string key() {
    static const std::vector<std::string> kKeys = {
        "\"id\"", "\"method\"", "\"params\"", "\"requestId\"", "\"result\"", "\"jsonrpc\"", "\"data\"",
        "\"progressToken\"", "\"\\u0069d\"", "\"i\\u0064\"", "\"\\/id\"", "\"name\"", "\"\""};
    return pick(kKeys);
  }

  std::string value(int depth) {
    switch (random_() % (depth > 4 ? 5 : 8)) {
      case 0: case 1: return string();
      case 2: return number();
      case 3: { static const std::vector<std::string> kLiterals = {"true", "false", "null"}; return pick(kLiterals); }
      case 4: return chance(50) ? "1" : "\"x\"";
      case 5: case 6: return object(false, depth + 1);
      default: {
        std::string text = "[" + space();
        int elements = static_cast<int>(random_() % 4);
        for (int i = 0; i < elements; ++i) text += (i ? "," + space() : "") + value(depth + 1) + space();
        return text + "]";
      }
    }
  }

  // An id's kind of value, mostly.
  std::string id() {
    switch (random_() % 6) {
      case 0: case 1: return string();
      case 2: case 3: return number();
      case 4: return "null";
      default: return value(3);
    }
  }

  std::string object(bool top, int depth = 1) {
    std::vector<std::string> members;
    auto member = [&](const std::string& key, const std::string& value) {
      members.push_back(key + space() + ":" + space() + value);
    };
    if (top) {
      static const std::vector<std::string> kMethods = {
          "\"tools/call\"", "\"ping\"", "\"initialize\"", "\"notifications/cancelled\"", "\"notifications/progress\"",
          "\"\\u0070ing\"", "\"p\\/q\""};
      if (chance(90)) member("\"jsonrpc\"", "\"2.0\"");
      if (chance(75)) member("\"id\"", id());
      if (chance(60)) member("\"method\"", chance(90) ? pick(kMethods) : value(2));
      if (chance(60)) member("\"params\"", chance(85) ? params() : value(2));
      if (chance(30)) member("\"result\"", value(2));
      if (chance(10)) member("\"error\"", object(false, 2));
      if (chance(5) && !members.empty()) members.push_back(members[random_() % members.size()]);
      if (chance(10)) member(key(), value(2));
    } else {
      int count = static_cast<int>(random_() % 4);
      for (int i = 0; i < count; ++i) member(key(), value(depth));
    }
    std::shuffle(members.begin(), members.end(), random_);
    std::string text = "{" + space();
    for (std::size_t i = 0; i < members.size(); ++i) text += (i ? "," + space() : "") + members[i] + space();
    return text + "}";
  }

  std::string params() {
    std::vector<std::string> members;
    if (chance(50)) members.push_back("\"requestId\":" + space() + id());
    if (chance(30)) members.push_back("\"name\":\"evaluate_lisp\"");
    if (chance(30)) members.push_back("\"arguments\":" + object(false, 3));
    if (chance(20)) members.push_back("\"id\":" + id());
    if (chance(20)) members.push_back("\"method\":" + string());
    if (chance(20)) members.push_back("\"_meta\":{\"progressToken\":" + id() + "}");
    if (chance(5) && !members.empty()) members.push_back(members[0]);
    std::shuffle(members.begin(), members.end(), random_);
    std::string text = "{";
    for (std::size_t i = 0; i < members.size(); ++i) text += (i ? "," : "") + space() + members[i];
    return text + space() + "}";
  }

  std::mt19937 random_;
};

}  // namespace

// Many generated messages: whatever the scan reads, nlohmann reads the
// same; and most valid ones, the scan reads.
TEST(JsonEnvelope, GeneratedMessagesAgreeWithNlohmann) {
  MessageMaker maker(4040);
  int valid = 0, read = 0;
  for (int round = 0; round < 40000; ++round) {
    std::string text = maker.message();
    bool parsed = agentq::parse_json_bounded(text).has_value();
    valid += parsed;
    read += expect_agrees(text);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(valid, 5000);
  EXPECT_GT(read, valid / 4) << "valid " << valid << ", read " << read;
}

// Mutations of the usual messages (bytes replaced, dropped, doubled, cut).
TEST(JsonEnvelope, MutatedMessagesAgreeWithNlohmann) {
  std::mt19937 random(4141);
  const std::string alphabet = "{}[]\":,\\/ \t\n-0123456789.eEtrufalsnidmu\x01\x7f\xc3\xa9\xff";
  for (int round = 0; round < 40000; ++round) {
    expect_agrees(agentq::testing::mutated(kUsual[random() % kUsual.size()], random, alphabet));
    if (::testing::Test::HasFailure()) break;
  }
}
