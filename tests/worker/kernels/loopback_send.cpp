// Tries to reach a listener on the host's loopback (its port in LATHE_TEST_PORT) and to send it a
// line; writes 0 into its int64 output when the line went out, else -errno. Run without the
// seccomp filter (which kills any socket call): the namespaces alone must stop it.
#include <arpa/inet.h>
#include <lathe/abi.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" int lathe_launch(const lathe_args* a) {
  auto* out = static_cast<int64_t*>(a->outputs[0].data);
  const char* port = std::getenv("LATHE_TEST_PORT");
  if (!port) {
    out[0] = -EINVAL;
    return 0;
  }
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) {
    out[0] = -errno;
    return 0;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    out[0] = -errno;
  } else {
    const char line[] = "escaped\n";
    out[0] = write(s, line, sizeof line - 1) == static_cast<ssize_t>(sizeof line - 1) ? 0 : -errno;
  }
  close(s);
  return 0;
}
