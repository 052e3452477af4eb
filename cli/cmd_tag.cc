// ki tag NAME REF | -l | -d NAME: local names for objects (ki/tag.h).
#include <algorithm>
#include <iostream>

#include "command.h"
#include "ki/tag.h"

namespace ki::cli {
namespace {

std::string What(Store& store, const Digest& d) {
  auto info = store.Stat(d);
  if (!info.ok() || !*info) return "absent";
  if ((*info)->type == ObjectType::kBlob) return "blob " + (*info)->media_type;
  auto names = store.NamesOf(d);
  return names.ok() && !names->empty() ? names->front() : std::string(KindName(*(*info)->kind));
}

RunFn SetupTag(CLI::App* sub, GlobalOptions* g) {
  struct TagOptions {
    std::string name, ref;
    bool list = false, force = false, json = false;
    std::string remove;
  };
  auto o = std::make_shared<TagOptions>();
  sub->add_option("name", o->name, "the tag's name (docs/format.md, \"Tags\": letters, digits, . _ + @ / -)");
  sub->add_option("ref", o->ref, "the object it names: digest, prefix, KIND/NAME, name or tag:NAME");
  sub->add_flag("-l,--list", o->list, "list the tags");
  sub->add_option("-d,--delete", o->remove, "remove the tag NAME");
  sub->add_flag("-f,--force", o->force, "replace a tag that names another object");
  sub->add_flag("--json", o->json, "print JSON");
  return [o, g]() -> Result<int> {
    const int modes = int(o->list) + int(!o->remove.empty()) + int(!o->name.empty());
    if (modes != 1) return Status::Usage("ki tag takes NAME REF, -l or -d NAME (one of them)");
    if (!o->name.empty() && o->ref.empty()) return Status::Usage("ki tag NAME needs the REF to tag (ki tag NAME REF)");
    if (o->name.empty() && !o->ref.empty()) return Status::Usage("ki tag takes REF only after a NAME");
    if (o->list) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
      KI_ASSIGN_OR_RETURN(auto tags, ListTags(*store));
      if (o->json) {
        Json j = Json::array();
        for (const auto& [name, d] : tags) j.push_back({{"tag", name}, {"digest", d.str()}, {"what", What(*store, d)}});
        PrintJson(j);
      } else {
        size_t width = 0;
        for (const auto& t : tags) width = std::max(width, t.first.size());
        for (const auto& [name, d] : tags) {
          std::cout << name << std::string(width - name.size() + 2, ' ') << d.str() << "  " << What(*store, d)
                    << "\n";
        }
      }
      return 0;
    }
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    if (!o->remove.empty()) {
      KI_ASSIGN_OR_RETURN(Digest was, DeleteTag(*store, o->remove));
      if (o->json) PrintJson({{"deleted", o->remove}, {"digest", was.str()}});
      else std::cout << "deleted tag " << o->remove << " (was " << was.str() << ")\n";
      return 0;
    }
    // The name first: a bad name is the error, whatever REF names.
    KI_RETURN_IF_ERROR(CheckTagName(o->name));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(o->ref));
    KI_ASSIGN_OR_RETURN(auto before, SetTag(*store, o->name, d, o->force ? TagReplace::kYes : TagReplace::kNo));
    if (o->json) {
      Json j = {{"tag", o->name}, {"digest", d.str()}, {"previous", nullptr}};
      if (before) j["previous"] = before->str();
      PrintJson(j);
    } else {
      std::cout << "tag " << o->name << " -> " << d.str() << "  " << What(*store, d);
      if (before && *before != d) std::cout << " (was " << before->str() << ")";
      std::cout << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(tag, {"tag", "Name an object with a local tag, list or remove tags", SetupTag, 55});

}  // namespace
}  // namespace ki::cli
