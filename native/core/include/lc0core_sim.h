/* lc0core_sim.h - a simulated GPU for studying and testing the search
 * without one.
 *
 * A device answers forward calls with lc0's random network (the outputs of
 * lc0core_random_forward) but delivers them as a GPU would: its passes run
 * one at a time in arrival order, whichever slot sends them, and a pass of
 * n positions takes pass_us + position_us * n microseconds (a line fitted to
 * a real GPU's backendbench curve). A caller sleeps while its pass waits
 * and runs, so the host's threads are free as they are with a real GPU.
 * The device logs each pass (when it ran, how many positions).
 */
#ifndef LC0CORE_SIM_H
#define LC0CORE_SIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef struct lc0core_sim_device lc0core_sim_device;

/* One pass on the device's timeline: milliseconds since the log started. */
typedef struct {
  float begin_ms;
  float end_ms;
  int32_t positions;
  int32_t stream;            /* always 0: the device does not tell slots apart */
} lc0core_sim_pass;

int lc0core_sim_create(int64_t seed, int32_t uniform, double pass_us, double position_us,
                       lc0core_sim_device** device);
void lc0core_sim_destroy(lc0core_sim_device* device);
/* An lc0core_forward_fn with a device as ctx; any number of callers. */
int lc0core_sim_forward(void* device, int n, const uint64_t* masks, const float* values,
                        float* policy, float* wdl, float* moves_left);
/* The device logs every pass from its creation; start clears the log and
 * restarts its clock. read copies up to capacity passes, oldest first, and
 * sets *count to how many there are. */
int lc0core_sim_log_start(lc0core_sim_device* device);
int lc0core_sim_log_read(lc0core_sim_device* device, lc0core_sim_pass* out, int capacity, int* count);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
