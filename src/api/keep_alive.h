// TCP keepalive on the master's connections to a node's server (a shell's terminal, a notebook's
// Jupyter): a node that vanishes without a word (a partition, a frozen machine) leaves such a
// connection open forever on the master's side otherwise. With it, the kernel gives up on a
// silent peer after about a minute; the session's end closes them sooner
// (ApiServer::CloseEndedSession).
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>

namespace cohort::api {

// Probes after 30 s of silence, every 10 s, 3 times. Best effort: a socket option that cannot be
// set leaves the connection as it was.
inline void KeepAlive(boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.set_option(boost::asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  const int idle = 30, interval = 10, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

}  // namespace cohort::api
