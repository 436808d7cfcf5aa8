// Converts argv[1] (records: float lo, float hi, then 65536 uint16 steps)
// with linear16.h into argv[2] (float32 raw bits), for tests/test_linear16.py.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tensor/linear16.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::FILE* in = std::fopen(argv[1], "rb");
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!in || !out) return 3;
  std::vector<uint16_t> steps(1 << 16);
  std::vector<float> values(steps.size());
  float range[2];
  while (std::fread(range, sizeof(float), 2, in) == 2) {
    if (std::fread(steps.data(), sizeof(uint16_t), steps.size(), in) != steps.size()) return 4;
    lc0rocm::linear16_to_float(steps.data(), steps.size(), range[0], lc0rocm::linear16_span(range[0], range[1]),
                               values.data());
    if (std::fwrite(values.data(), sizeof(float), values.size(), out) != values.size()) return 5;
  }
  std::fclose(in);
  return std::fclose(out) == 0 ? 0 : 6;
}
