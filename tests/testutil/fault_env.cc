#include "testutil/fault_env.h"

namespace ki::test {
namespace {

class FaultFile final : public AtomicFile {
 public:
  FaultFile(FaultInjectionEnv* env, std::unique_ptr<AtomicFile> base, std::string path)
      : env_(env), base_(std::move(base)), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    KI_RETURN_IF_ERROR(env_->Charge(data.size(), path_));
    return base_->Append(data);
  }
  Status Commit(Durability d) override { return base_->Commit(d); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<AtomicFile> base_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<AtomicFile>> FaultInjectionEnv::NewAtomicFile(const std::string& path,
                                                                     const AtomicFileOptions& options) {
  KI_ASSIGN_OR_RETURN(auto f, base_->NewAtomicFile(path, options));
  return std::unique_ptr<AtomicFile>(new FaultFile(this, std::move(f), path));
}

}  // namespace ki::test
