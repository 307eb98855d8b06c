/* The session between client and server: its protocol and both halves (session.c). */
#ifndef COPYLAB_SESSION_H
#define COPYLAB_SESSION_H

#include "options.h"
#include "perf_control.h"
#include "usage.h"

#include <stdint.h>

/* Bytes of a request in request-response mode (the client's, the load client's). */
#define REQUEST_SIZE 8
#define HELLO_MAGIC 0x636f70796c616231ULL /* "copylab1" */

struct hello {
    uint64_t magic;
    uint64_t size;
    uint32_t threads;
    uint32_t mode;
    uint32_t verify;
    uint32_t reserved;
    double window_s; /* warm-up + duration: bounds how long the server waits */
};
/* Client to server: the window begins, ends.  Server to client: every worker is serving, so the
 * client's warm-up starts only when the server is ready (whatever its set-up cost, e.g. a message file). */
enum control { CONTROL_BEGIN = 'B', CONTROL_END = 'E', CONTROL_READY = 'R' };

/* Server: accepts the control connection and reads its hello (dies on anything else). */
int session_open(int listen_fd, double timeout_s, struct hello *hello);
/* Server: tells the client every connection is being served; its warm-up may start. */
void session_ready(int control_fd);
/* Server: follows the client's window marks until it closes the session; returns the window's usage.
 * EDGE, when given, runs at each mark inside the window's bounds. */
struct usage session_window(int control_fd, const struct hello *hello, struct perf_control *perf,
                            void (*edge)(enum control));
/* Client: connects the control connection and sends the hello. */
int session_join(const struct options *opt, const struct hello *hello);
/* Client: waits, bounded, for the server's ready. */
void session_wait_ready(int control_fd);
/* Client: marks the window's beginning or end. */
void session_mark(int control_fd, enum control control);

#endif
