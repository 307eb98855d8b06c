/* What is set on a TCP socket and read back from it (socket_options.c). */
#ifndef COPYLAB_SOCKET_OPTIONS_H
#define COPYLAB_SOCKET_OPTIONS_H

#include <stdint.h>

/* Every TCP socket made from now on uses congestion control NAME (NULL: the kernel's default). */
void use_congestion_control(const char *name);
/* Every TCP socket made from now on gets send and receive buffers of BYTES, which the kernel doubles for its
 * bookkeeping and then no longer sizes itself (0, the default: the kernel sizes them as the connection goes). */
void use_socket_buffer(uint64_t bytes);
/* What every socket made got (each checked to be held doubled), as use_socket_buffer() was told. */
uint64_t socket_buffer_in_use(void);
/* A new socket, before listen() or connect(): TCP_NODELAY, and what use_congestion_control() and
 * use_socket_buffer() chose (dies when the kernel will not give it). */
void socket_options_apply(int fd);
/* A datagram socket: only its send buffer, as use_socket_buffer() chose. */
void send_buffer_apply(int fd);
void set_io_timeout(int fd, double seconds);
/* A stream's data connection sends as a bulk sender does (iperf3, neper): with Nagle's algorithm, so that a
 * message's tail waits for the next message while data is unacknowledged instead of leaving as a short
 * packet; every other connection is made with TCP_NODELAY. */
void stream_data(int fd);
/* The congestion control a socket uses, as the kernel names it (TCP_CA_NAME_MAX bytes with the NUL). */
#define CONGESTION_NAME_BYTES 16
void congestion_control_of(int fd, char name[CONGESTION_NAME_BYTES]);
/* A socket's send and receive buffers as the kernel holds them now. */
struct socket_buffers {
    uint64_t send, receive;
};
struct socket_buffers socket_buffers_of(int fd);
/* What TCP_INFO says about a connection: its retransmits so far and its smoothed round-trip time (us). */
struct tcp_report {
    uint64_t retransmits;
    uint32_t srtt_us;
};
struct tcp_report tcp_report(int fd);

#endif
