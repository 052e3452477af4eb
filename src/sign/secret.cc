// Secret memory, base64, and passphrases.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ki/sign.h"
#include "sign/internal.h"

namespace ki {

namespace sign_internal {

void EnsureSodium() {
  // sodium_init is thread-safe and idempotent; it fails only when the system
  // random source cannot be opened, and then no key can be made safely.
  static const bool ok = sodium_init() >= 0;
  if (!ok) std::abort();
}

}  // namespace sign_internal

using sign_internal::EnsureSodium;

SecretBytes::SecretBytes(size_t n) {
  EnsureSodium();
  if (n == 0) return;
  p_ = static_cast<uint8_t*>(sodium_malloc(n));
  if (!p_) throw std::bad_alloc();
  n_ = n;
}

SecretBytes::~SecretBytes() {
  // sodium_free wipes the region before unmapping it; the explicit wipe
  // keeps that guarantee visible here and covers a truncated tail.
  if (p_) {
    sodium_memzero(p_, n_);
    sodium_free(p_);
  }
}

SecretBytes::SecretBytes(SecretBytes&& o) noexcept : p_(o.p_), n_(o.n_) {
  o.p_ = nullptr;
  o.n_ = 0;
}

SecretBytes& SecretBytes::operator=(SecretBytes&& o) noexcept {
  if (this != &o) {
    this->~SecretBytes();
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

void SecretBytes::Truncate(size_t n) {
  if (n >= n_) return;
  sodium_memzero(p_ + n, n_ - n);
  n_ = n;
}

std::string Base64Encode(std::string_view bytes) {
  EnsureSodium();
  size_t len = sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  std::string out(len, '\0');
  sodium_bin2base64(out.data(), len, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(len - 1);  // the encoded length counts the terminating NUL
  return out;
}

namespace sign_internal {

// Decodes into `out` (capacity out_cap); the whole input must be consumed.
bool DecodeBase64Into(std::string_view text, uint8_t* out, size_t out_cap, size_t* out_len) {
  EnsureSodium();
  for (int variant : {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_URLSAFE}) {
    size_t n = 0;
    // b64_end == nullptr: libsodium fails unless every character is used,
    // so trailing garbage and truncated padding are errors, not ignored.
    if (sodium_base642bin(out, out_cap, text.data(), text.size(), nullptr, &n, nullptr, variant) == 0) {
      *out_len = n;
      return true;
    }
  }
  return false;
}

}  // namespace sign_internal

Result<std::string> Base64Decode(std::string_view text, std::string_view what) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  size_t n = 0;
  if (!sign_internal::DecodeBase64Into(text, reinterpret_cast<uint8_t*>(out.data()), out.size(), &n)) {
    return Status::InvalidInput(std::string(what) + " is not well-formed base64 (standard or URL-safe, padded)");
  }
  out.resize(n);
  return out;
}

namespace {

constexpr size_t kMaxPassphrase = 1024;

// Echo off on the terminal for as long as it lives, and back on however
// the prompt ends: on return, and on the signals that end a process at a
// prompt (Ctrl-C, Ctrl-\, kill, a closed terminal). Without the handlers a
// Ctrl-C at the passphrase prompt left the user's shell typing blind.
// Only one prompt is open at a time in a process (ki asks sequentially);
// the saved state lives in statics because a signal handler can reach
// nothing else.
constexpr int kRestoreSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
volatile sig_atomic_t g_echo_fd = -1;
// Set before ki turns echo off and cleared once a handler has turned it on
// again: a stop in the background after the terminal was already given back
// (Ctrl-Z, then bg) leaves it alone, the shell's line editor's settings and
// the line being typed included.
volatile sig_atomic_t g_echo_may_be_off = 0;
termios g_saved_termios{};
struct sigaction g_previous[std::size(kRestoreSignals)];
// The signals that stop a process at a prompt: Ctrl-Z, and a read from the
// terminal (SIGTTIN) or a change to it (SIGTTOU) while ki is in the
// background (started with &, or put there at the prompt: stopped, then
// bg). Each stops ki with echo on, as Ctrl-Z does.
constexpr int kStopSignals[] = {SIGTSTP, SIGTTIN, SIGTTOU};
struct sigaction g_previous_stop[std::size(kStopSignals)];
// The prompt, written again when ki resumes after a stop.
const char* g_prompt = nullptr;
size_t g_prompt_size = 0;

// What the handlers block while they run: the ending signals and the
// stopping ones, so that a stop never interleaves with a restore (a Ctrl-Z
// inside the restore handler would turn echo off again before the process
// ends). SIGTTOU blocked also lets a handler (and ~EchoOff) set the
// terminal from the background, where it would otherwise be stopped before
// echo is on again.
sigset_t PromptSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kRestoreSignals) sigaddset(&set, s);
  for (int s : kStopSignals) sigaddset(&set, s);
  return set;
}

void EchoOffNow(int fd) {
  g_echo_may_be_off = 1;
  termios quiet = g_saved_termios;
  quiet.c_lflag &= ~tcflag_t(ECHO);
  quiet.c_lflag |= ECHONL;
  ::tcsetattr(fd, TCSAFLUSH, &quiet);
}

void RestoreTerminalAndReraise(int sig) {
  // Async-signal-safe only: tcsetattr, sigaction, raise.
  const int saved_errno = errno;
  if (g_echo_fd >= 0 && g_echo_may_be_off) {
    ::tcsetattr(g_echo_fd, TCSANOW, &g_saved_termios);
    (void)!::write(g_echo_fd, "\n", 1);  // the prompt line stays unfinished otherwise
  }
  for (size_t i = 0; i < std::size(kRestoreSignals); ++i) {
    if (kRestoreSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  }
  // Delivered, now with the previous disposition, as soon as this handler
  // returns: the process ends by the signal, as the shell expects.
  ::raise(sig);
  errno = saved_errno;
}

// Ctrl-Z at the prompt, or the prompt in the background (SIGTTIN,
// SIGTTOU): the shell gets its terminal back with echo on while ki is
// stopped, as it does after any other program; when ki is continued in
// the foreground, echo goes off again, the prompt is written again and the
// read goes on. Continued in the background (bg), ki leaves the terminal
// alone: the read, retried, stops it again (SIGTTIN) until it is brought
// to the foreground. Without this, a ki reading in the background (stopped
// by kill -STOP at the prompt, then bg) was stopped by SIGTTIN with echo
// off.
void StopWithEchoOn(int sig) {
  // Async-signal-safe only: tcgetattr, tcsetattr, tcgetpgrp, getpgrp,
  // write, sigaction, pthread_sigmask, raise.
  const int saved_errno = errno;
  const int fd = g_echo_fd;
  if (fd >= 0 && g_echo_may_be_off) {
    ::tcsetattr(fd, TCSANOW, &g_saved_termios);  // in the background too: SIGTTOU is blocked here
    (void)!::write(fd, "\n", 1);
    g_echo_may_be_off = 0;
  }
  // Stop by the signal itself, with its previous (default) action, so the
  // shell sees the stop it expects (Ctrl-Z, tty input, tty output). An
  // orphaned process group is not stopped by the kernel (no one could
  // continue it): then this simply goes on.
  size_t which = 0;
  while (which + 1 < std::size(kStopSignals) && kStopSignals[which] != sig) ++which;
  struct sigaction self{};
  ::sigaction(sig, &g_previous_stop[which], &self);
  sigset_t just{};
  sigemptyset(&just);
  sigaddset(&just, sig);
  ::raise(sig);
  ::pthread_sigmask(SIG_UNBLOCK, &just, nullptr);  // the stop happens here
  // Continued (fg, bg, SIGCONT). Block it again before the handler is back,
  // so a second Ctrl-Z waits until this one is done.
  ::pthread_sigmask(SIG_BLOCK, &just, nullptr);
  ::sigaction(sig, &self, nullptr);
  if (fd >= 0 && ::tcgetpgrp(fd) == ::getpgrp()) {
    // The terminal as the shell left it is what the prompt restores at the
    // end. Only in the foreground: in the background the shell owns the
    // terminal (its line editor's settings are not ki's to keep or change).
    ::tcgetattr(fd, &g_saved_termios);
    EchoOffNow(fd);
    if (g_prompt) (void)!::write(fd, g_prompt, g_prompt_size);
  }
  errno = saved_errno;
}

class EchoOff {
 public:
  // `prompt` must outlive this: it is written again after a Ctrl-Z.
  EchoOff(int fd, std::string_view prompt) {
    termios old{};
    if (::tcgetattr(fd, &old) != 0) return;  // not a terminal: nothing to restore
    g_saved_termios = old;
    g_prompt = prompt.data();
    g_prompt_size = prompt.size();
    g_echo_fd = fd;
    // Handlers first, then echo off: no moment with echo off and no handler.
    struct sigaction sa{};
    sa.sa_handler = RestoreTerminalAndReraise;
    sa.sa_mask = PromptSignals();  // one restore at a time
    for (size_t i = 0; i < std::size(kRestoreSignals); ++i) {
      ::sigaction(kRestoreSignals[i], nullptr, &g_previous[i]);
      // An ignored signal (nohup's SIGHUP) stays ignored: it ends nothing.
      if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kRestoreSignals[i], &sa, nullptr);
    }
    // No SA_RESTART: the read returns EINTR and is retried with echo off.
    sa.sa_handler = StopWithEchoOn;
    for (size_t i = 0; i < std::size(kStopSignals); ++i) {
      ::sigaction(kStopSignals[i], nullptr, &g_previous_stop[i]);
      // Ignored (a shell without job control): it stops nothing.
      if (g_previous_stop[i].sa_handler != SIG_IGN) ::sigaction(kStopSignals[i], &sa, nullptr);
    }
    // Started in the background: this stops ki (SIGTTOU, handled above)
    // until it is brought to the foreground, where the handler turns echo
    // off and asks again.
    EchoOffNow(fd);
    fd_ = fd;
  }
  ~EchoOff() {
    if (fd_ < 0) return;
    // Held back until the handlers are gone: a Ctrl-Z between echo on and
    // g_echo_fd = -1 would turn echo off again on resume, for good. Then
    // what is pending acts as it would have without a prompt. (SIGTTOU held
    // back too: echo comes back on even from the background.)
    const sigset_t held = PromptSignals();
    sigset_t before{};
    ::pthread_sigmask(SIG_BLOCK, &held, &before);
    ::tcsetattr(fd_, TCSAFLUSH, &g_saved_termios);
    g_echo_fd = -1;
    for (size_t i = 0; i < std::size(kRestoreSignals); ++i) {
      if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kRestoreSignals[i], &g_previous[i], nullptr);
    }
    for (size_t i = 0; i < std::size(kStopSignals); ++i) {
      if (g_previous_stop[i].sa_handler != SIG_IGN) ::sigaction(kStopSignals[i], &g_previous_stop[i], nullptr);
    }
    g_prompt = nullptr;
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;

 private:
  int fd_ = -1;
};

// Reads one line from the terminal with echo off, into secret memory.
Result<SecretBytes> ReadTerminalLine(int fd, std::string_view prompt) {
  std::string p(prompt);
  (void)!::write(fd, p.data(), p.size());
  SecretBytes buf(kMaxPassphrase);
  size_t n = 0;
  bool too_long = false;
  {
    EchoOff quiet(fd, p);
    for (;;) {
      char c;
      ssize_t r = ::read(fd, &c, 1);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0 || c == '\n' || c == '\r') break;
      if (n < buf.size()) buf.data()[n++] = uint8_t(c);
      else too_long = true;
      c = 0;
    }
  }
  if (too_long) return Status::InvalidInput("passphrase longer than 1024 bytes");
  buf.Truncate(n);
  return buf;
}

}  // namespace

Result<SecretBytes> DefaultPassphrase(std::string_view prompt, bool confirm) {
  if (const char* env = std::getenv("KI_PASSPHRASE"); env != nullptr) {
    size_t n = std::strlen(env);
    if (n > kMaxPassphrase) return Status::InvalidInput("KI_PASSPHRASE is longer than 1024 bytes");
    SecretBytes out(n == 0 ? 1 : n);
    std::memcpy(out.data(), env, n);
    out.Truncate(n);
    return out;
  }
  int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    return Status::InvalidInput(
        "a passphrase is needed and there is no terminal to ask on: set KI_PASSPHRASE");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  KI_ASSIGN_OR_RETURN(SecretBytes first, ReadTerminalLine(fd, std::string(prompt) + ": "));
  if (!confirm) return first;
  KI_ASSIGN_OR_RETURN(SecretBytes second, ReadTerminalLine(fd, "again: "));
  if (first.size() != second.size() ||
      (first.size() > 0 && sodium_memcmp(first.data(), second.data(), first.size()) != 0)) {
    return Status::InvalidInput("the two passphrases differ");
  }
  return first;
}

}  // namespace ki
