#include "runtime/clock_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace emo::runtime {
namespace {

constexpr int kAnswerTimeoutMs = 10'000;
constexpr int kNoPermission = static_cast<int>(NvmlStatus::kNoPermission);

}  // namespace

ClockRoute clock_route() {
  const char* v = std::getenv("EMO_CLOCK_SERVICE");
  const std::string_view s = v != nullptr ? v : "";
  if (s == "always") return ClockRoute::kAlways;
  if (s == "never") return ClockRoute::kNever;
  return ClockRoute::kAuto;
}

std::string clock_service_socket() {
  const char* v = std::getenv("EMO_CLOCK_SOCKET");
  return v != nullptr && *v != '\0' ? std::string(v) : std::string(kDefaultClockSocket);
}

bool clock_service_available() {
  struct stat st {};
  return ::lstat(clock_service_socket().c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

ClockServiceClient::ClockServiceClient(const std::string& socket_path) : path_(socket_path) {
  const auto fail = [&](const std::string& why) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw NvmlError("clock service", fmt::format("cannot use {}: {} (is `emo serve` running?)", path_, why),
                    kNoPermission);
  };
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) fail("the path is too long for a Unix socket");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail(std::strerror(errno));
  const std::string answer = exchange(std::string(kClockProtocol));
  if (answer != fmt::format("ok {}", kClockProtocol)) fail("the service answered: " + one_line(answer, 120));
}

ClockServiceClient::~ClockServiceClient() {
  if (fd_ >= 0) ::close(fd_);  // the service resets what this connection locked
}

std::string ClockServiceClient::read_line() {
  while (true) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (buffer_.size() > kMaxClockLine) return "";
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, kAnswerTimeoutMs) <= 0) return "";
    char buf[512];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::string ClockServiceClient::exchange(const std::string& line) {
  const std::string text = line + "\n";
  if (fd_ < 0 || ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) return "";
  return read_line();
}

std::string ClockServiceClient::call(unsigned gpu, const std::string& request) {
  const std::string answer = exchange(request);
  if (answer == "ok") return "";
  if (answer.starts_with("ok ")) return answer.substr(3);
  if (answer.starts_with("refused ")) {
    const std::string rest = answer.substr(8);
    const auto sp = rest.find(' ');
    const int code = std::atoi(rest.substr(0, sp).c_str());
    throw NvmlError(fmt::format("GPU {}", gpu),
                    "clock service: " + one_line(sp == std::string::npos ? rest : rest.substr(sp + 1), 200),
                    code != 0 ? code : kNoPermission);
  }
  throw NvmlError("clock service",
                  answer.empty() ? fmt::format("{} closed the connection or did not answer \"{}\"", path_, request)
                                 : fmt::format("{} answered \"{}\": {}", path_, request, one_line(answer, 200)),
                  kNoPermission);
}

std::vector<std::string> ClockServiceClient::status() {
  const std::string answer = exchange("status");
  if (!answer.starts_with("ok ")) {
    throw NvmlError("clock service", fmt::format("{} answered \"status\": {}", path_, one_line(answer, 200)),
                    kNoPermission);
  }
  std::vector<std::string> lines;
  for (int n = std::atoi(answer.c_str() + 3); n > 0; --n) lines.push_back(read_line());
  return lines;
}

}  // namespace emo::runtime
