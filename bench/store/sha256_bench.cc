// Prints ki's SHA-256 throughput (GB/s) over a file read into memory,
// hashed `reps` times: the hasher alone, without I/O.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ki/digest.h"
#include "ki/env.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_sha256 FILE [REPS]\n");
    return 2;
  }
  int reps = argc > 2 ? std::atoi(argv[2]) : 4;
  auto data = ki::Env::Default()->ReadFile(argv[1], 8ull << 30);
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 5;
  }
  auto t0 = std::chrono::steady_clock::now();
  ki::Digest d;
  for (int i = 0; i < reps; ++i) d = ki::Sha256Of(*data);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.2f\n", double(data->size()) * reps / s / 1e9);
  std::fprintf(stderr, "%s\n", d.str().c_str());  // uses the result, so the hashing stays
  return 0;
}
