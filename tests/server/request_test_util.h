// Shared fixtures of the request-parser tests: the server defaults of a Gemma 4 E2B deployment,
// helpers that unwrap a ParseResult with a readable failure message, and the table row of the
// parameterized rejection tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "server/openai/request.h"

namespace g4::openai::testing {

inline ServerDefaults GemmaDefaults() {
  ServerDefaults d;
  d.model_name = "gemma-4-e2b";
  d.max_model_len = 8192;
  d.sampling.temperature = 1.0f;  // generation_config.json of the released checkpoints
  d.sampling.top_k = 64;
  d.sampling.top_p = 0.95f;
  d.stop_token_ids = {1, 106, 50};
  return d;
}

// The error of a parse that must fail (a failed expectation, and a default error, otherwise).
inline ApiError ErrorOf(const ParseResult& result, const std::string& body) {
  EXPECT_FALSE(result.ok()) << "accepted: " << body;
  return result.ok() ? ApiError{} : result.error();
}

// The request of a parse that must succeed.
inline ParsedRequest RequestOf(const ParseResult& result, const std::string& body) {
  EXPECT_TRUE(result.ok()) << "rejected: " << body << "\n  -> " << result.error().status << " "
                           << result.error().message;
  return result.ok() ? result.value() : ParsedRequest{};
}

// A body a parser must refuse, and what it must answer.
struct RejectCase {
  const char* name;
  std::string body;  // a whole body
  int status;
  const char* param;    // "" = null
  const char* message;  // a substring of the message
};

inline std::ostream& operator<<(std::ostream& os, const RejectCase& c) { return os << c.name; }

// Checks a parse of `c.body` failed with c's status, param and message, and the error type
// that goes with the status.
inline void ExpectRejected(const ParseResult& result, const RejectCase& c) {
  const ApiError e = ErrorOf(result, c.body);
  EXPECT_EQ(e.status, c.status) << e.message;
  EXPECT_EQ(e.param, c.param) << e.message;
  EXPECT_THAT(e.message, ::testing::HasSubstr(c.message));
  EXPECT_EQ(e.type, c.status == 404 ? "NotFoundError" : "BadRequestError");
}

// The request of a chat / completion body that must parse under GemmaDefaults().
inline ParsedRequest ChatRequestOf(const std::string& body) {
  return RequestOf(ParseChatRequest(body, GemmaDefaults()), body);
}
inline ParsedRequest CompletionRequestOf(const std::string& body) {
  return RequestOf(ParseCompletionRequest(body, GemmaDefaults()), body);
}

// A chat body with one user message and the given extra fields ("" for none).
inline std::string ChatBody(const std::string& extra) {
  std::string body = R"({"model":"gemma-4-e2b","messages":[{"role":"user","content":"Hi"}])";
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

// A completion body with a text prompt and the given extra fields ("" for none).
inline std::string CompletionBody(const std::string& extra) {
  std::string body = R"({"model":"gemma-4-e2b","prompt":"Once upon a time")";
  if (!extra.empty()) body += "," + extra;
  return body + "}";
}

}  // namespace g4::openai::testing
