// bench helper: writes every object of a ki store as a `git fast-import`
// blob stream on standard output, so that git can store exactly the same
// bytes and bench/catalog/size_vs_git.sh can compare the two side by side.
#include <cstdio>
#include <iostream>

#include "ki/store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s STORE/.ki\n", argv[0]);
    return 2;
  }
  auto store = ki::Store::Open(argv[1], ki::OpenMode::kReadOnly);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  std::vector<ki::Digest> all;
  (void)(*store)->ForEachObject([&](const ki::ObjectInfo& info) {
    all.push_back(info.digest);
    return true;
  });
  for (const auto& d : all) {
    auto bytes = (*store)->Read(d);
    if (!bytes.ok()) {
      std::fprintf(stderr, "%s\n", bytes.status().message().c_str());
      return 1;
    }
    std::cout << "blob\ndata " << bytes->size() << "\n" << *bytes << "\n";
  }
  std::fprintf(stderr, "%zu objects\n", all.size());
  return 0;
}
