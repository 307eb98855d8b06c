/* The control session between a client and a server, both halves: the
 * client's hello, the server's "ready" once it serves, and the client's marks
 * of the measured window, at which each side snapshots its usage and switches
 * perf on and off.  One session is one trial. */
#include "session.h"

#include "connection.h"
#include "errors.h"
#include "options.h"
#include "perf_control.h"
#include "socket_options.h"
#include "transfer.h"
#include "usage.h"

#include <poll.h>

/* Set-up a server may do before it is ready: a message file, 1,000 forks. */
#define READY_WAIT_S 10.0
#define HELLO_WAIT_S 10.0

int session_open(int listen_fd, double timeout_s, struct hello *hello)
{
    int control_fd = accept_within(listen_fd, timeout_s);
    set_io_timeout(control_fd, HELLO_WAIT_S);
    if (recv_exact(control_fd, hello, sizeof *hello) != IO_OK || hello->magic != HELLO_MAGIC)
        die("the first connection did not speak the copylab protocol");
    return control_fd;
}

void session_ready(int control_fd)
{
    char ready = CONTROL_READY;
    if (send_all(control_fd, &ready, 1) != IO_OK)
        die("the client left before the server was ready");
}

struct usage session_window(int control_fd, const struct hello *hello, struct perf_control *perf,
                            void (*edge)(enum control))
{
    /* The client marks the window; the session may stay quiet for all of it. */
    set_io_timeout(control_fd, hello->window_s + 10.0);
    struct usage before = {0}, after = {0}, used;
    bool ended = false;
    char control;
    while (recv_exact(control_fd, &control, 1) == IO_OK) {
        if (control == CONTROL_BEGIN) {
            perf_control_send(perf, "enable");
            if (edge)
                edge(CONTROL_BEGIN);
            usage_now(&before);
        } else if (control == CONTROL_END) {
            usage_now(&after);
            if (edge)
                edge(CONTROL_END);
            perf_control_send(perf, "disable");
            ended = true;
        } else {
            die("unknown control byte 0x%02x from the client", (unsigned char)control);
        }
    }
    if (!ended)
        die("the client left before the measured window ended");
    usage_delta(&before, &after, &used);
    return used;
}

int session_join(const struct options *opt, const struct hello *hello)
{
    int control_fd = connect_within(opt->address, opt->port, opt->timeout_s);
    set_io_timeout(control_fd, HELLO_WAIT_S);
    if (send_all(control_fd, hello, sizeof *hello) != IO_OK)
        die("the server closed the session at once");
    return control_fd;
}

void session_wait_ready(int control_fd)
{
    wait_fd(control_fd, POLLIN, READY_WAIT_S, "waiting for the server to get ready");
    char ready;
    if (recv_exact(control_fd, &ready, 1) != IO_OK || ready != CONTROL_READY)
        die("the server closed the session before it was ready");
}

void session_mark(int control_fd, enum control control)
{
    char byte = (char)control;
    if (send_all(control_fd, &byte, 1) != IO_OK)
        die("the server closed the session early");
}
