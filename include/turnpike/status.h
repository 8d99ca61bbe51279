// Status: the result of an operation that can fail, without exceptions.
//
// Config and control-thread code return Status (or StatusOr<T>) with a message that names
// the file, line and YAML path of the problem. Hot-path code returns small enums instead.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace turnpike {

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

// Holds either a value or a failed Status. REQUIRES: value() only when ok().
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}     // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace turnpike
