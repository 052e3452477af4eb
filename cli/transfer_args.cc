// Shared by cmd_push.cc and cmd_pull.cc (transfer_args.h).
#include "transfer_args.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace ki::cli {

namespace {

// A one-line progress meter on a terminal, nothing otherwise.
std::function<void(const TransferProgress&)> ProgressMeter(const char* verb) {
  if (::isatty(STDERR_FILENO) != 1) return nullptr;
  return [verb](const TransferProgress& p) {
    if (p.objects_done != p.objects_total && p.objects_done % 16 != 0) return;
    std::fprintf(stderr, "\r%s: %llu/%llu objects, %.1f MB%s", verb, (unsigned long long)p.objects_done,
                 (unsigned long long)p.objects_total, double(p.bytes_done) / 1e6,
                 p.objects_done == p.objects_total ? "\n" : "");
  };
}

}  // namespace

void AddTransferArgs(CLI::App* sub, TransferArgs* args, const char* refs_help, int jobs, const char* jobs_help,
                     uint64_t buffer_bytes, const char* buffer_help) {
  args->jobs = jobs;
  args->buffer_mib = buffer_bytes >> 20;
  sub->add_option("remote", args->remote, "remote name, or a URL (oci://HOST/REPO, oci-layout:DIR)")->required();
  // Required unless the command offers another way to name them (push --all).
  args->refs_option = sub->add_option("refs", args->refs, refs_help)->required();
  sub->add_flag("--insecure", args->insecure, "plain http (loopback registries only)");
  sub->add_option("-j,--jobs", args->jobs, std::string(jobs_help) + " (default " + std::to_string(jobs) + ")")
      ->check(CLI::Range(1, 64));
  sub->add_option("--buffer-mib", args->buffer_mib,
                  std::string(buffer_help) + " (default " + std::to_string(args->buffer_mib) + ")")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  TransferTimeouts& t = args->timeouts;
  auto dflt = [](auto v) { return " (default " + std::to_string(v) + ")"; };
  sub->add_option("--connect-timeout", t.connect_s, "seconds to wait for a connection" + dflt(t.connect_s))
      ->check(CLI::Range(1L, 3600L));
  sub->add_option("--low-speed-limit", t.low_speed_bytes,
                  "bytes/s: a request slower than this for --low-speed-time seconds is aborted" + dflt(t.low_speed_bytes))
      ->check(CLI::Range(1L, 1L << 30));
  sub->add_option("--low-speed-time", t.low_speed_time_s,
                  "seconds below --low-speed-limit before a request is aborted" + dflt(t.low_speed_time_s))
      ->check(CLI::Range(1L, 86400L));
  sub->add_option("--timeout", t.deadline_s,
                  "seconds a request may take, plus 1 s per --min-rate bytes it carries; 0: no deadline" +
                      dflt(t.deadline_s))
      ->check(CLI::Range(0L, 1L << 30));
  sub->add_option("--min-rate", t.min_rate, "bytes/s that --timeout's deadline allows for a request's body" + dflt(t.min_rate))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub->add_flag("--json", args->json, "print a JSON report");
}

Result<TransferSetup> OpenTransfer(const GlobalOptions& g, const TransferArgs& args, const char* verb,
                                   StoreAccess access) {
  TransferSetup s;
  auto store = OpenStore(g, OpenMode::kReadWrite);
  // A store that is not writable is an IOError; so are a missing store and
  // others, which the read-only open meets again and reports the same.
  if (!store.ok() && store.status().IsIOError() && access == StoreAccess::kWriteIfPossible) {
    auto read_only = OpenStore(g, OpenMode::kReadOnly);
    if (read_only.ok()) store = std::move(read_only);
  }
  if (!store.ok()) return store.status();
  s.store = std::move(store).value();
  KI_ASSIGN_OR_RETURN(s.url, LookupRemote(*s.store, args.remote, args.insecure));
  s.opts.progress = ProgressMeter(verb);
  s.opts.timeouts = args.timeouts;
  return s;
}

}  // namespace ki::cli
