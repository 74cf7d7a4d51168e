#pragma once
// An HTTP server on 127.0.0.1 at a free port, on a thread of its own until destroyed, for the
// tests of the remote client: each test installs the handlers it needs before start().
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace inferscope::testing {

class LoopbackServer {
public:
    httplib::Server& server() { return server_; }

    // Binds a free port and serves until destruction; the base URL of the server.
    std::string start() {
        port_ = server_.bind_to_any_port("127.0.0.1");
        if (port_ <= 0) throw std::runtime_error("no free loopback port for the test server");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!server_.is_running()) throw std::runtime_error("the loopback test server did not start");
        return url();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    ~LoopbackServer() {
        server_.stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    httplib::Server server_;
    std::thread thread_;
    int port_ = 0;
};

// A loopback port with nothing listening on it: bound by the kernel's choice, then closed.
inline int closed_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("no loopback port for the test");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

}  // namespace inferscope::testing
