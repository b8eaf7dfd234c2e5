// The arithmetic of N MXU matmuls (8 rows x 128 x 128, bf16 inputs, f32
// accumulation rounded after every multiply and add, sequential over k, then
// added into an f32 result slot) as a plain optimized host loop: the yardstick
// for tpusim's functional mode (scripts/bench_sim.sh). Usage: hostloop MATMULS
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  long matmuls = argc > 1 ? std::atol(argv[1]) : 10000;
  const int R = 8, K = 128, N = 128;
  std::vector<float> w(K * N), a(R * K), out(R * N), slot(R * N, 0.0f);
  // bf16 values (upper halves of f32) as the MXU holds them.
  uint32_t x = 12345;
  auto bf16 = [&]() {
    x = x * 1664525u + 1013904223u;
    uint32_t bits = (0x3F800000u | (x >> 9)) & 0xFFFF0000u;
    float f;
    std::memcpy(&f, &bits, 4);
    return f - 1.5f;
  };
  for (float& v : w) v = bf16();
  for (float& v : a) v = bf16();
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  for (long m = 0; m < matmuls; ++m) {
    a[m % (R * K)] = bf16();  // different LHS each time, as in the loop
    for (int j = 0; j < R; ++j) {
      float* o = &out[j * N];
      for (int n = 0; n < N; ++n) o[n] = 0.0f;
      for (int k = 0; k < K; ++k) {
        float av = a[j * K + k];
        const float* wr = &w[k * N];
        for (int n = 0; n < N; ++n) o[n] = o[n] + av * wr[n];
      }
      for (int n = 0; n < N; ++n) slot[j * N + n] = slot[j * N + n] + o[n];
    }
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpuSeconds = double(std::clock() - cpu) / CLOCKS_PER_SEC;
  float check = 0;
  for (float v : slot) check += v;
  std::printf(
      "hostloop: %ld matmuls of 8x128x128 in %.3f s wall, %.3f s CPU (%.2f GMAC/s CPU) "
      "checksum %g\n",
      matmuls, wall, cpuSeconds, double(matmuls) * R * K * N / cpuSeconds / 1e9, check);
  return 0;
}
