// errors.cpp - the thread-local last error and argument checks.
#include "errors.h"

#include <cstring>

namespace lc0core {

namespace {
// Fixed size: setting an error never allocates (it may follow a bad_alloc).
thread_local char last_error[512] = "";
}  // namespace

void set_last_error(const char* message) {
  std::strncpy(last_error, message ? message : "", sizeof(last_error) - 1);
  last_error[sizeof(last_error) - 1] = '\0';
}

void clear_last_error() { last_error[0] = '\0'; }

std::string bounded_string(const char* text, std::size_t max_length, const char* what) {
  require(text, what);
  const void* end = std::memchr(text, '\0', max_length + 1);
  if (end == nullptr) {
    throw Error(LC0CORE_INVALID_ARGUMENT,
                std::string(what) + " is longer than " + std::to_string(max_length) + " bytes");
  }
  return std::string(text, static_cast<const char*>(end) - text);
}

void require(const void* pointer, const char* what) {
  if (pointer == nullptr) throw Error(LC0CORE_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

}  // namespace lc0core

LC0CORE_EXPORT int lc0core_abi_version(void) { return LC0CORE_ABI_VERSION; }

LC0CORE_EXPORT const char* lc0core_last_error(void) { return lc0core::last_error; }
