// host.h - the cores this process may run on: its affinity (a container's
// or taskset's share) where the system has one, else the host's count, as
// lc0_rocm/host.py counts them. What the task workers and the row pool are
// sized by, so that a process given 4 of 64 cores does not start threads
// for 64.
#pragma once
#include <thread>
#if defined(__linux__)
#include <sched.h>
#endif

namespace lc0core {

inline int usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

}  // namespace lc0core
