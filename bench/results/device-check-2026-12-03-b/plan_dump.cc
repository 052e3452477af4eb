// One-off (kernel branch, 2026-12-03): the fast kernel's plan for the
// definition's 48 workload shapes and a grid of synthetic ones, under the
// automatic tuning and some forced ones, on this machine's GPU. Built twice:
// against fast.cu before the planner moved to plan.cc and after; the two
// outputs must be identical. With -DKI_PLAN_DUMP_LIMITS (the new build) it
// also prints what the planner read of the device (plan.h DeviceLimits).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gqa_paged_decode/launch.h"
#ifdef KI_PLAN_DUMP_LIMITS
#include "gqa_paged_decode/plan.h"
#endif

using namespace ki::gqa;

int main() {
#ifdef KI_PLAN_DUMP_LIMITS
  DeviceLimits l;
  if (ReadDeviceLimits(&l) != KI_OK) std::printf("limits: unreadable\n");
  else std::printf("limits: num_sms %d cc_major %d\n", l.num_sms, l.cc_major);
  for (int m = 1; m <= 3; ++m) std::printf("limits: blocks_per_sm[%d] = {%d, %d, %d}  (stages 2, 3, 4)\n", m, l.blocks_per_sm[m][2], l.blocks_per_sm[m][3], l.blocks_per_sm[m][4]);
  std::printf("limits: max_cluster = {%d, %d, %d}\n", l.max_cluster[2], l.max_cluster[3], l.max_cluster[4]);
  for (int s = 2; s <= 4; ++s) {
    std::printf("limits: active_clusters[%d] = {", s);
    for (int c = 0; c <= 16; ++c) std::printf("%s%d", c ? ", " : "", l.active_clusters[s][c]);
    std::printf("}\n");
  }
#endif
  const long long wl[][2] = {
      {1, 7}, {1, 9}, {1, 11}, {1, 14}, {1, 2}, {1, 141}, {1, 252}, {1, 362}, {1, 436}, {1, 40}, {1, 546}, {1, 50},
      {1, 64}, {1, 72}, {1, 87}, {1, 102}, {16, 1020}, {16, 2108}, {16, 15463}, {16, 16551}, {16, 17639},
      {16, 18727}, {16, 19815}, {16, 20903}, {16, 21991}, {16, 23079}, {16, 3196}, {16, 4284}, {16, 5372},
      {16, 6460}, {16, 7548}, {16, 8636}, {64, 28815}, {64, 30991}, {64, 33167}, {64, 35343}, {64, 37519},
      {64, 39695}, {64, 41871}, {64, 44047}, {64, 46287}, {64, 48463}, {64, 50639}, {64, 52815}, {64, 54991},
      {64, 57167}, {64, 59343}, {64, 61519}};
  std::vector<std::pair<long long, long long>> shapes;
  for (auto& w : wl) shapes.push_back({w[0], w[1]});
  for (long long t : {1, 16, 17, 64, 65, 2048, 2049, 4096}) shapes.push_back({1, t});
  const long long syn[][2] = {{12, 2048}, {12, 4096}, {12, 8192}, {13, 4096}, {8, 8192}, {16, 4096}, {32, 1024},
                              {48, 8192}, {64, 2048}, {64, 8192}, {100, 4000}, {127, 1000}, {128, 1000}, {200, 500}};
  for (auto& s : syn) shapes.push_back({s[0], s[0] * s[1]});
  struct Named { const char* name; FastTuning t; };
  std::vector<Named> tunings(1, {"auto", FastTuning{}});
  auto add = [&](const char* name, auto set) { FastTuning t; set(t); tunings.push_back({name, t}); };
  add("mode=1", [](FastTuning& t) { t.mode = 1; });
  add("mode=2", [](FastTuning& t) { t.mode = 2; });
  add("mode=3", [](FastTuning& t) { t.mode = 3; });
  add("mode=3,cluster=4", [](FastTuning& t) { t.mode = 3; t.cluster = 4; });
  add("stages=4", [](FastTuning& t) { t.stages = 4; });
  add("chunk=256", [](FastTuning& t) { t.chunk_tokens = 256; });
  add("waves=2", [](FastTuning& t) { t.waves = 2; });
  add("per_sm=2", [](FastTuning& t) { t.per_sm = 2; });
  add("predict=2", [](FastTuning& t) { t.predict = 2; });
  add("miss_waves=2", [](FastTuning& t) { t.miss_waves = 2; });
  add("lean=1,pdl=2,evict_first=2", [](FastTuning& t) { t.lean = 1; t.pdl = 2; t.evict_first = 2; });
  for (const Named& n : tunings) {
    SetFastTuning(n.t);
    for (auto [b, tok] : shapes) {
      Args a;
      a.batch = b;
      a.num_kv_indices = tok;
      FastPlan p;
      const int32_t rc = PlanFast(a, &p);
      std::printf("%s %lldx%lld: rc %d mode %d cluster %d predict %d evict_first %d pdl %d lean %d chunk %d chunk_any %d "
                  "max_work %d stages %d num_sms %d blocks_per_sm %d workspace %llu\n",
                  n.name, b, tok, rc, p.mode, p.cluster, p.predict, p.evict_first, p.pdl, p.lean, p.chunk, p.chunk_any,
                  p.max_work, p.stages, p.num_sms, p.blocks_per_sm, static_cast<unsigned long long>(p.workspace_bytes));
    }
  }
  return 0;
}
