// libFuzzer target for the clock service's wire protocol (emo-clock/1, runtime/clock_client.h):
// the real service (runtime/clock_service.h) runs in a thread of this process, NVML being the
// recording stand-in with three GPUs. Each input is one client: unless its first byte is 0x01, the
// version line is sent first; then the input goes out in up to three pieces (cut where its second
// and third bytes say); then the client closes its end. A crash or sanitizer report is a bug, and
// so is, after each input, (a) the service not closing the connection within 2 s of the client's
// end-of-file, (b) a lease still held 1 s after that (the closed connection's GPUs not released),
// (c) a second, well-behaved client not served.
//
// Build and run: scripts/fuzz.sh --target clock [SECONDS] (clang, -fsanitize=fuzzer,address,undefined).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "runtime/clock_service.h"

namespace {

std::string g_socket;
int g_monitor = -1;

int connect_service() {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, g_socket.c_str(), g_socket.size() + 1);
  for (int i = 0; i < 500; ++i) {  // the service may still be starting
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      timeval tv{2, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "fuzz_clock_service: cannot connect to %s\n", g_socket.c_str());
  std::abort();
}

/// One "\n"-ended line from `fd`, "" on end-of-file or timeout.
std::string line_from(int fd) {
  std::string line;
  char c = 0;
  while (true) {  // libFuzzer's SIGALRM (-timeout) interrupts calls: EINTR is not an answer
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || c == '\n') return line;
    line += c;
  }
}

/// The number of leases the service reports to the monitor connection.
long leases() {
  const char status[] = "status\n";
  ssize_t sent = -1;
  do sent = ::send(g_monitor, status, sizeof status - 1, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof status - 1)) std::abort();
  const std::string answer = line_from(g_monitor);
  if (!answer.starts_with("ok ")) {
    std::fprintf(stderr, "fuzz_clock_service: a well-behaved client was not served: \"%s\"\n", answer.c_str());
    std::abort();
  }
  const long n = std::atol(answer.c_str() + 3);
  for (long k = 0; k < n; ++k) line_from(g_monitor);
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir = "/tmp/emo-fuzz-clock-" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  g_socket = dir + "/s.sock";
  ::setenv("EMO_NVML_LIBRARY", EMO_FUZZ_FAKE_NVML, 1);
  ::setenv("EMO_FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB,NVIDIA A100-SXM4-80GB,NVIDIA H100 80GB HBM3", 1);
  ::unsetenv("EMO_FAKE_NVML_LOG");
  emo::runtime::ClockServiceConfig config;
  config.socket = g_socket;
  config.state_dir = dir + "/state";
  config.jobs_dir = dir + "/jobs";
  config.min_switch_interval_ms = 0;
  config.request_timeout_ms = 1000;
  config.max_clients = 4;
  config.audit_stderr = false;
  std::thread([config] {
    emo::runtime::ClockService service(config, emo::runtime::Nvml::open());
    service.run();
  }).detach();
  g_monitor = connect_service();
  const char hello[] = "emo-clock/1\n";
  (void)!::send(g_monitor, hello, sizeof hello - 1, MSG_NOSIGNAL);
  if (line_from(g_monitor) != "ok emo-clock/1") std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = connect_service();
  if (size == 0 || data[0] != 0x01) {
    const char hello[] = "emo-clock/1\n";
    (void)!::send(fd, hello, sizeof hello - 1, MSG_NOSIGNAL);
  }
  const std::size_t cut1 = size > 1 ? data[1] % (size + 1) : 0, cut2 = size > 2 ? data[2] % (size + 1) : size;
  const std::size_t a = std::min(cut1, cut2), b = std::max(cut1, cut2);
  for (const auto& [from, to] : {std::pair{std::size_t{0}, a}, std::pair{a, b}, std::pair{b, size}}) {
    if (to > from) (void)!::send(fd, data + from, to - from, MSG_NOSIGNAL);
  }
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  const auto start = std::chrono::steady_clock::now();
  while (true) {  // the service answers, then closes on our end-of-file
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) break;
    if (n < 0 || std::chrono::steady_clock::now() - start > std::chrono::seconds(2)) {
      std::fprintf(stderr, "fuzz_clock_service: the connection was not closed after the client's end-of-file (%s)\n",
                   n < 0 ? std::strerror(errno) : "2 s");
      std::abort();
    }
  }
  ::close(fd);
  for (int i = 0; leases() != 0; ++i) {
    if (i == 100) {
      std::fprintf(stderr, "fuzz_clock_service: a lease outlived its connection by 1 s\n");
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}
