// Shared by cmd_push.cc and cmd_pull.cc (transfer_args.h).
#include "transfer_args.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace ki::cli {

namespace {

// Progress on stderr: on a terminal a bar redrawn at most 10 times a
// second; otherwise (a log, CI) a line at most every 5 s, so that a long
// transfer is neither silent nor thousands of lines. Counts, bytes and the
// rate since the start; nothing at all for a transfer over in 5 s.
std::function<void(const TransferProgress&)> ProgressMeter(const char* verb) {
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now(), last{};
    bool drawn = false;
  };
  auto st = std::make_shared<State>();
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  return [verb, st, tty](const TransferProgress& p) {
    const auto now = Clock::now();
    const bool done = p.objects_done == p.objects_total;
    const double secs = std::chrono::duration<double>(now - st->start).count();
    if (tty) {
      if (!done && now - st->last < std::chrono::milliseconds(100)) return;
    } else {
      if (done || secs < 5 || (st->drawn && now - st->last < std::chrono::seconds(5))) return;
    }
    st->last = now;
    st->drawn = true;
    const double mb = double(p.bytes_done) / 1e6;
    const double rate = secs > 0 ? mb / secs : 0;
    if (tty) {
      constexpr int kWidth = 30;
      const int fill = p.objects_total ? int(kWidth * p.objects_done / p.objects_total) : kWidth;
      std::string bar(size_t(fill), '#');
      bar.append(size_t(kWidth - fill), '.');
      std::fprintf(stderr, "\r%s [%s] %llu/%llu objects, %.1f MB, %.1f MB/s%s", verb, bar.c_str(),
                   (unsigned long long)p.objects_done, (unsigned long long)p.objects_total, mb, rate, done ? "\n" : "");
    } else {
      std::fprintf(stderr, "ki: %s: %llu/%llu objects, %.1f MB, %.1f MB/s, %.0f s\n", verb,
                   (unsigned long long)p.objects_done, (unsigned long long)p.objects_total, mb, rate, secs);
    }
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
                  "seconds a request may take, plus 1 s per --min-rate bytes it has moved; 0: no deadline" +
                      dflt(t.deadline_s))
      ->check(CLI::Range(0L, 1L << 30));
  sub->add_option("--min-rate", t.min_rate, "bytes/s a request must average once its --timeout seconds are spent" + dflt(t.min_rate))
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub->add_option("--total-timeout", t.total_s,
                  "seconds the whole push or pull may take; 0: no such bound" + dflt(t.total_s))
      ->check(CLI::Range(0L, 1L << 30));
  sub->add_flag("--json", args->json, "print a JSON report");
  sub->add_flag("-v,--verbose", args->verbose, "a line per ref even where a summary stands for many");
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
