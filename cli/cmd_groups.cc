// ki groups [PATTERN] [--operation X] [--hardware Y] [--kind kernel|serving] [--json]
#include <iostream>

#include "command.h"
#include "ki/catalog.h"

namespace ki::cli {
namespace {

struct GroupsOptions {
  catalog::GroupFilter filter;
  bool json = false;
};

std::string GroupValue(const catalog::RankEntry& e) {
  if (!e.value) return "-";
  if (e.unit == "ns") return FormatNs(*e.value);
  return FormatJcsNumber(*e.value) + (e.unit.empty() ? "" : " " + e.unit);
}

RunFn SetupGroups(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<GroupsOptions>();
  sub->add_option("pattern", o->filter.pattern, "operation or workload name (glob), or a group key prefix");
  sub->add_option("--operation", o->filter.operation, "operation name (substring or glob) or digest prefix");
  sub->add_option("--hardware", o->filter.hardware, "hardware product, any part of it (e.g. H200)");
  sub->add_option("--kind", o->filter.kind, "kernel or serving");
  sub->add_flag("--json", o->json, "print a JSON array");
  return [o, g]() -> Result<int> {
    if (!o->filter.kind.empty() && o->filter.kind != "kernel" && o->filter.kind != "serving") {
      return Status::Usage("--kind takes kernel or serving, not '" + o->filter.kind + "'");
    }
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(auto groups, catalog::ListGroups(*store, o->filter));
    if (o->json) {
      Json arr = Json::array();
      for (const auto& x : groups) {
        Json j = {{"cohort", x.cohort.str()},   {"kind", x.kind},         {"metric", x.metric},
                  {"operation", x.operation},   {"operationName", x.operation_name},
                  {"workload", x.workload},     {"workloadName", x.workload_name},
                  {"hardware", x.hardware},     {"runs", x.runs},         {"ranked", x.ranked},
                  {"first", nullptr}};
        if (x.first) {
          j["first"] = {{"run", x.first->run.str()},
                        {"name", x.first->name},
                        {"implementation", x.first->implementation},
                        {"value", x.first->value ? Json(*x.first->value) : Json(nullptr)},
                        {"unit", x.first->unit}};
        }
        arr.push_back(std::move(j));
      }
      PrintJson(arr);
      return 0;
    }
    std::string out;
    for (const auto& x : groups) {
      out += x.cohort.str().substr(0, 19) + "\t" + x.kind + "\t" +
             (x.operation_name.empty() ? x.operation.substr(0, 19) : x.operation_name) + "\t" +
             (x.workload_name.empty() ? x.workload.substr(0, 19) : x.workload_name) + "\t" +
             (x.hardware.empty() ? "-" : x.hardware) + "\t" + std::to_string(x.runs) + " runs\t";
      if (x.first) {
        out += "#1 " + GroupValue(*x.first) + " " +
               (x.first->implementation.empty() ? x.first->name : x.first->implementation);
      } else {
        out += "-";
      }
      out += "\n";
    }
    std::cout << out;
    if (groups.empty()) std::cerr << "ki: no comparison group matches\n";
    return groups.empty() ? 3 : 0;
  };
}

KI_REGISTER_COMMAND(groups, {"groups", "List comparison groups", SetupGroups, 47});

}  // namespace
}  // namespace ki::cli
