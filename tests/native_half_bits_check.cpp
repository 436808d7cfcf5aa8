// Converts the float32 values of argv[1] (raw bits) with half_bits.h into
// argv[2] (raw uint16 bits), for tests/test_half_bits.py.
#include <cstdio>
#include <vector>

#include "tensor/half_bits.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::FILE* in = std::fopen(argv[1], "rb");
  if (!in) return 3;
  std::vector<float> values;
  float chunk[4096];
  size_t got;
  while ((got = std::fread(chunk, sizeof(float), 4096, in)) > 0) values.insert(values.end(), chunk, chunk + got);
  std::fclose(in);
  std::vector<uint16_t> bits(values.size());
  lc0rocm::half_bits(values.data(), values.size(), bits.data());
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!out || std::fwrite(bits.data(), sizeof(uint16_t), bits.size(), out) != bits.size()) return 4;
  return std::fclose(out) == 0 ? 0 : 5;
}
