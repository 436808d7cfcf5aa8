// errors.h - C++ errors inside the library; api.cpp turns them into status codes.
#pragma once
#include <stdexcept>
#include <string>

#include "../../include/lc0rocm.h"
#include "../gpu_compat.h"

namespace lc0rocm {

// Every failure inside the library is thrown as an Error with the status the
// C ABI will report; nothing else crosses api.cpp.
class Error : public std::runtime_error {
 public:
  Error(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

[[noreturn]] inline void fail(int status, const std::string& message) {
  throw Error(status, message);
}

inline void check_gpu(hipError_t err, const char* what, const char* file, int line) {
  if (err == hipSuccess) return;
  int status = err == hipErrorMemoryAllocation ? LC0ROCM_OUT_OF_MEMORY : LC0ROCM_DEVICE_ERROR;
  fail(status, std::string(what) + " failed: " + hipGetErrorString(err) + " (" + file + ":" +
                   std::to_string(line) + ")");
}

}  // namespace lc0rocm

// Wrap every runtime call; after each kernel launch, GPU_CHECK_LAUNCH().
#define GPU_CHECK(expr) ::lc0rocm::check_gpu((expr), #expr, __FILE__, __LINE__)
#define GPU_CHECK_LAUNCH() ::lc0rocm::check_gpu(hipGetLastError(), "kernel launch", __FILE__, __LINE__)
