// env_switch.h - the library's LC0ROCM_* environment switches, read the
// same way everywhere (when a network or stream is created, never per pass).
#pragma once
#include <cstdlib>
#include <cstring>

namespace lc0rocm {

// A switch: unset or empty gives `unset`; "0" is off, any other value on.
inline bool env_switch(const char* name, bool unset) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return unset;
  return std::strcmp(v, "0") != 0;
}

// A number: unset or empty gives `unset`; otherwise the value as atoi reads
// it (text that is no number reads 0).
inline int env_int(const char* name, int unset) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return unset;
  return std::atoi(v);
}

}  // namespace lc0rocm
