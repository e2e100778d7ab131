// Status and StatusOr: the library's error channel. Nothing in src/ calls exit() or throws
// across a module boundary; every fallible function returns one of these.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace g4 {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user or a file
  kNotFound,         // a file or tensor that must exist does not
  kUnimplemented,    // a valid model feature g4 does not support yet (e.g. MoE)
  kDataLoss,         // truncated or corrupt file
  kInternal,
  kIo,
  kUnavailable,      // temporarily unable (a full queue, shutting down): retry later
  kCancelled,
  kFailedPrecondition,  // the call needs a state the system is not in (e.g. recording a CUDA
                        // graph over an op that runs on the host)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Prepends context ("while loading X: ") to the message; a no-op on OK.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIo, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {    // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace g4

#define G4_CONCAT_INNER_(a, b) a##b
#define G4_CONCAT_(a, b) G4_CONCAT_INNER_(a, b)

#define G4_RETURN_IF_ERROR(expr)          \
  do {                                    \
    ::g4::Status g4_status_ = (expr);     \
    if (!g4_status_.ok()) return g4_status_; \
  } while (0)

#define G4_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// G4_ASSIGN_OR_RETURN(auto x, FunctionReturningStatusOr());
#define G4_ASSIGN_OR_RETURN(lhs, expr) \
  G4_ASSIGN_OR_RETURN_IMPL_(G4_CONCAT_(g4_statusor_, __LINE__), lhs, expr)
