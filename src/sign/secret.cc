// Secret memory, base64, and passphrases.
#include <fcntl.h>
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
termios g_saved_termios{};
struct sigaction g_previous[std::size(kRestoreSignals)];

void RestoreTerminalAndReraise(int sig) {
  // Async-signal-safe only: tcsetattr, sigaction, raise.
  const int saved_errno = errno;
  if (g_echo_fd >= 0) {
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

class EchoOff {
 public:
  explicit EchoOff(int fd) {
    termios old{};
    if (::tcgetattr(fd, &old) != 0) return;  // not a terminal: nothing to restore
    g_saved_termios = old;
    g_echo_fd = fd;
    // Handlers first, then echo off: no moment with echo off and no handler.
    struct sigaction sa{};
    sa.sa_handler = RestoreTerminalAndReraise;
    sigemptyset(&sa.sa_mask);
    for (int s : kRestoreSignals) sigaddset(&sa.sa_mask, s);  // one restore at a time
    for (size_t i = 0; i < std::size(kRestoreSignals); ++i) {
      ::sigaction(kRestoreSignals[i], nullptr, &g_previous[i]);
      // An ignored signal (nohup's SIGHUP) stays ignored: it ends nothing.
      if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kRestoreSignals[i], &sa, nullptr);
    }
    termios quiet = old;
    quiet.c_lflag &= ~tcflag_t(ECHO);
    quiet.c_lflag |= ECHONL;
    ::tcsetattr(fd, TCSAFLUSH, &quiet);
    fd_ = fd;
  }
  ~EchoOff() {
    if (fd_ < 0) return;
    ::tcsetattr(fd_, TCSAFLUSH, &g_saved_termios);
    // Echo is on again before the handlers go, so a signal in between still
    // finds a terminal as the user had it.
    g_echo_fd = -1;
    for (size_t i = 0; i < std::size(kRestoreSignals); ++i) {
      if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kRestoreSignals[i], &g_previous[i], nullptr);
    }
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
    EchoOff quiet(fd);
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
