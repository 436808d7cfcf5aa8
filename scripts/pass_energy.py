#!/usr/bin/env python3
"""Energy per forward pass on an NVIDIA GPU, per batch size: positions/s,
mean board power, joules a pass, microjoules a position and the SM clock.

    python3 scripts/pass_energy.py -w t82.pb.gz -b cuda-fp16 --batches 64,256,512 --seconds 2

From batch ~64 on an H100 runs at its power cap (docs/history/
benchmarks-2026-11.md, "The GPU at its power cap"): there a change gains only through the energy it saves,
and joules a position judge it where the time alone moves with the clock.
Calls are made as `backendbench --packed` makes them (varied positions in
lc0's packed input, inputs and outputs in the backend's pinned memory);
positions/s and watts are over the whole timed window, the Python between
calls included; the energy is NVML's total energy counter (Volta on) read
around them, and the clock is sampled every 50 ms beside them. NVML (libnvidia-ml) only:
where it is missing the script says so and stops.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import threading
import time

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1


class NvmlError(RuntimeError):
    pass


class Nvml:
    """The few NVML calls used here, on one device (NVML's index)."""

    def __init__(self, index: int = 0, loader=None):
        try:
            self.lib = (loader or ctypes.CDLL)("libnvidia-ml.so.1")
        except OSError as e:
            raise NvmlError(f"NVML (libnvidia-ml.so.1) not found: {e}; energy needs an NVIDIA driver") from None
        self._call("nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(self.handle))

    def _call(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != NVML_SUCCESS:
            raise NvmlError(f"{name} failed with NVML status {status}")

    def energy_mj(self) -> int:
        """Total energy the device used since the driver loaded, millijoules."""
        value = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetTotalEnergyConsumption", self.handle, ctypes.byref(value))
        return value.value

    def sm_clock_mhz(self) -> int:
        value = ctypes.c_uint()
        self._call("nvmlDeviceGetClockInfo", self.handle, ctypes.c_uint(NVML_CLOCK_SM), ctypes.byref(value))
        return value.value


def summarize(batch: int, calls: int, seconds: float, millijoules: int, clocks: list[int]) -> dict:
    """One batch size's figures from `calls` forward calls in `seconds` that
    used `millijoules`, with the SM clock samples taken meanwhile."""
    joules = millijoules / 1000
    return {"batch": batch, "calls": calls, "nps": batch * calls / seconds, "watts": joules / seconds,
            "joules_per_pass": joules / calls, "uj_per_position": joules / calls / batch * 1e6,
            "sm_clock_mhz": int(statistics.median(clocks)) if clocks else 0}


def sample_clock(nvml: Nvml, stop: threading.Event, into: list[int], every: float = 0.05):
    while not stop.wait(every):
        into.append(nvml.sm_clock_mhz())


def measure(nvml: Nvml, forward_into, pool, batch: int, seconds: float, host_empty) -> dict:
    from lc0_rocm.backendbench import time_batch_size

    time_batch_size(forward_into, pool, batch, 0.2, host_empty=host_empty)   # warm-up and graph capture, untimed
    clocks: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_clock, args=(nvml, stop, clocks), daemon=True)
    sampler.start()
    e0, t0 = nvml.energy_mj(), time.perf_counter()
    times = time_batch_size(forward_into, pool, batch, seconds, host_empty=host_empty, warmup=0)
    elapsed, e1 = time.perf_counter() - t0, nvml.energy_mj()
    stop.set()
    sampler.join()
    return summarize(batch, len(times), elapsed, e1 - e0, clocks)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-w", "--weights", required=True)
    parser.add_argument("-b", "--backend", default="cuda-fp16")
    parser.add_argument("--batches", default="64,256,512")
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per batch size")
    parser.add_argument("--nvml-index", type=int, default=0,
                        help="the GPU in NVML's numbering (the backend's device 0 unless CUDA_VISIBLE_DEVICES says)")
    args = parser.parse_args(argv)
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches: comma-separated integers, got {args.batches!r}")
    try:
        nvml = Nvml(args.nvml_index)
    except NvmlError as e:
        print(f"pass_energy: {e}", file=sys.stderr)
        return 2
    from lc0_rocm import backends
    from lc0_rocm.backendbench import bench_positions, encode_pool
    from lc0_rocm.backends.base import BackendError
    from lc0_rocm.weights import WeightsError, load_weights

    try:
        weights = load_weights(args.weights)
        backend = backends.create(args.backend, weights, max_batch=max(batches))
    except (WeightsError, BackendError) as e:
        print(f"pass_energy: {e}", file=sys.stderr)
        return 2
    try:
        input_format = getattr(backend, "input_format", None) or weights.format.input
        pool = encode_pool(bench_positions(max(batches)), input_format, packed=True)
        print(f"{'batch':>6} {'pos/s':>10} {'W':>6} {'J/pass':>8} {'uJ/pos':>8} {'SM MHz':>7}")
        for batch in batches:
            r = measure(nvml, backend.forward_packed_into, pool, batch, args.seconds, backend.host_empty)
            print(f"{batch:>6} {r['nps']:>10,.0f} {r['watts']:>6.0f} {r['joules_per_pass']:>8.3f} "
                  f"{r['uj_per_position']:>8,.0f} {r['sm_clock_mhz']:>7}", flush=True)
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
