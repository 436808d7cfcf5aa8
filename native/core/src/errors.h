// errors.h - the native core's error handling at the C boundary: a
// thread-local last error, an exception carrying a status code, and the
// catch-all wrapper every entry point runs its body in.
#pragma once
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

#include "../include/lc0core_base.h"

// Entry points are the only symbols the library exports (-fvisibility=hidden).
#define LC0CORE_EXPORT extern "C" __attribute__((visibility("default")))

namespace lc0core {

// Thrown inside the core to fail an entry point with `status` and a message.
class Error : public std::runtime_error {
 public:
  Error(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

void set_last_error(const char* message);
void clear_last_error();

// Runs `body` (returning a status) so that nothing escapes: an Error gives
// its status and message, bad_alloc LC0CORE_OUT_OF_MEMORY, anything else
// LC0CORE_INTERNAL_ERROR. The last error is cleared first.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    clear_last_error();
    return body();
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return LC0CORE_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error((std::string("internal error: ") + e.what()).c_str());
    return LC0CORE_INTERNAL_ERROR;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return LC0CORE_INTERNAL_ERROR;
  }
}

// A C string from the caller, read no further than `max_length` bytes:
// NULL, or no terminator within the limit, is LC0CORE_INVALID_ARGUMENT
// naming `what`.
std::string bounded_string(const char* text, std::size_t max_length, const char* what);

// Throws LC0CORE_INVALID_ARGUMENT "<what> is NULL" when `pointer` is NULL.
void require(const void* pointer, const char* what);

}  // namespace lc0core
