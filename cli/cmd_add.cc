// ki add [--blob [--media-type T]] FILE... | -
// ki add --implementation FILE --operation REF [--symbol NAME] [--source FILE]... [-I DIR]...
#include <iostream>

#include "command.h"
#include "ki/env.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/run.h"

namespace ki::cli {
namespace {

// The first n bytes of `file` (fewer when it ends first).
Result<std::string> ReadUpTo(SequentialFile& file, size_t n) {
  KI_ASSIGN_OR_RETURN(FileStat st, file.Stat());
  if (st.directory) return Status::InvalidInput("standard input is a directory");
  std::string out(n, '\0');
  size_t used = 0;
  while (used < n) {
    KI_ASSIGN_OR_RETURN(size_t got, file.Read(out.data() + used, n - used));
    if (got == 0) break;
    used += got;
  }
  out.resize(used);
  return out;
}

struct AddOptions {
  std::vector<std::string> files;
  bool blob = false;
  std::string media_type;
  bool json = false;
  run::ImplementationOptions impl;  // --implementation (src/run)
};

// ki add --implementation: the source and an ImplementationRevision naming it.
Result<int> AddImplementation(const AddOptions& o, const GlobalOptions& g) {
  if (o.impl.operation.empty()) return Status::Usage("--implementation needs --operation REF");
  if (!o.files.empty() || o.blob) return Status::Usage("--implementation takes no other files (use --source)");
  KI_ASSIGN_OR_RETURN(auto store, OpenStore(g, OpenMode::kReadWrite));
  KI_ASSIGN_OR_RETURN(auto a, run::AddImplementation(*store, o.impl));
  for (const auto& u : a.unresolved)
    std::cerr << "ki: note: #include \"" << u << "\" not found here (not stored; the compiler must find it)\n";
  if (o.json) {
    PrintJson({{"digest", a.digest.str()}, {"kind", "ImplementationRevision"}, {"name", a.name},
               {"existed", a.existed}, {"source", a.source.str()}, {"language", a.language}});
    return 0;
  }
  std::cout << a.digest.str() << "\tImplementationRevision\t" << a.name << "\t" << (a.existed ? "existed" : "new")
            << "\n" << a.source.str() << "\tblob\t" << a.language << " source\n";
  return 0;
}

RunFn SetupAdd(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<AddOptions>();
  sub->add_option("files", o->files, "files to store; - reads standard input");
  sub->add_option("--implementation", o->impl.main, "store a kernel source (.cu, .cc) and its ImplementationRevision");
  sub->add_option("--operation", o->impl.operation, "with --implementation: the OperationSpec it implements (REF)");
  sub->add_option("--symbol", o->impl.symbol, "with --implementation: the kernel's name in its ki_kernel table");
  sub->add_option("--source", o->impl.extra_units, "with --implementation: a further translation unit");
  sub->add_option("-I,--include-dir", o->impl.include_dirs, "with --implementation: where quoted #includes are found");
  sub->add_option("--name", o->impl.name, "with --implementation: metadata.name of the revision");
  sub->add_option("--arch", o->impl.archs, "with --implementation: CUDA architectures, e.g. 90a (default 90a 100a)");
  sub->add_flag("--blob", o->blob, "store the files as blobs, even if they look like manifests");
  CLI::Option* media_type = sub->add_option("--media-type", o->media_type, "media type of blobs (default: from the extension)");
  sub->add_flag("--json", o->json, "print a JSON array of {digest, kind, name, existed}");
  return [o, g, media_type]() -> Result<int> {
    if (!o->impl.main.empty()) return AddImplementation(*o, *g);
    // Given but empty is not "not given": an empty type is refused as any
    // other malformed one is, not replaced by the extension's.
    if (media_type->count() > 0 && o->media_type.empty())
      return CheckMediaType(o->media_type, "--media-type");
    if (o->files.empty()) return Status::Usage("ki add: name files to store (or --implementation FILE)");
    if (!o->media_type.empty() && !o->blob) return Status::Usage("--media-type needs --blob");
    // Read everything first: a bad file means nothing is stored. Blobs
    // over kStreamAbove, or from a pipe, are only opened here (a missing
    // file is found now) and read as they are stored, a piece at a time, so
    // that their size is not bounded by memory.
    constexpr uint64_t kStreamAbove = 1 << 20;
    std::vector<AddInput> inputs;
    // The process's Env, which the store opened below uses too.
    Env* env = Env::Default();
    for (const auto& f : o->files) {
      AddInput in;
      in.source = f;
      in.type = o->blob ? InputType::kBlob : InputType::kDetect;
      in.media_type = o->media_type;
      std::unique_ptr<SequentialFile> file;
      if (f == "-") {
        file = env->StandardInput();
      } else {
        KI_ASSIGN_OR_RETURN(file, env->NewSequentialFile(f));
      }
      if (f == "-" && !IsBlobInput(in)) {
        // Read only to tell a manifest from a blob: a manifest is at most
        // the parser's limit, so one byte more says "blob", and that blob
        // is streamed (what was read, then the rest of the input) instead
        // of held whole.
        const size_t manifest_max = ParseLimits{}.max_bytes;
        KI_ASSIGN_OR_RETURN(std::string head, ReadUpTo(*file, manifest_max + 1));
        if (head.size() > manifest_max) {
          // Input that starts like a manifest is one too long, as a .json
          // file of that size is: refused, not stored as a blob the user
          // did not ask for (--blob says so).
          AddInput probe;
          probe.source = in.source;
          probe.bytes = std::move(head);
          const bool manifest_like = LooksLikeManifestInput(probe);
          head = std::move(probe.bytes);
          if (manifest_like) {
            return Status::InvalidInput("standard input: starts like a manifest but is longer than a manifest "
                                        "may be (1 MiB); nothing was stored (give --blob to store it as a blob)");
          }
          in.type = InputType::kBlob;
          in.stream = true;
          in.prefix = std::move(head);
        } else {
          in.bytes = std::move(head);
        }
        inputs.push_back(std::move(in));
        continue;
      }
      if (IsBlobInput(in)) {
        KI_ASSIGN_OR_RETURN(FileStat st, file->Stat());
        in.stream = st.regular ? st.size > kStreamAbove : !st.directory;
      }
      if (!in.stream) {
        // Manifests are capped at 1 MiB by the parser, with a clear message.
        KI_ASSIGN_OR_RETURN(in.bytes, ReadAll(*file, f == "-" ? "standard input" : f, StoreOptions{}.max_object_size));
      }
      inputs.push_back(std::move(in));
    }
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(auto added, AddInputs(*store, inputs));
    if (o->json) {
      Json arr = Json::array();
      for (const auto& a : added) {
        arr.push_back({{"digest", a.digest.str()}, {"kind", a.kind},
                       {"name", a.name.empty() ? Json(nullptr) : Json(a.name)}, {"existed", a.existed}});
      }
      PrintJson(arr);
      return 0;
    }
    std::string out;
    for (const auto& a : added) {
      out += a.digest.str() + "\t" + a.kind + "\t" + (a.name.empty() ? "-" : a.name) + "\t" +
             (a.existed ? "existed" : "new") + "\n";
    }
    std::cout << out;
    return 0;
  };
}

// A bulk add (thousands of files, all held in memory until the one commit)
// gets the huge-page heap; a few files do not pay for the re-exec.
KI_REGISTER_COMMAND(add, {"add", "Store manifests, bundles and blobs", SetupAdd, 20, /*big_heap_min_args=*/256});

}  // namespace
}  // namespace ki::cli
