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

// Switches read by more than one body.
// The value head's last layer and output in one launch (value_head_tail.hip)
// where it applies; LC0ROCM_VALUE_TAIL=0: a product, its bias and
// value_output, as before.
inline bool value_tail_wanted() { return env_switch("LC0ROCM_VALUE_TAIL", true); }

}  // namespace lc0rocm
