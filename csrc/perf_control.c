/* perf stat --control: the counters are enabled and disabled at the window's edges, so start-up and
 * warm-up never count. */
#include "perf_control.h"

#include "connection.h"
#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void perf_control_open(struct perf_control *pc, const char *ctl, const char *ack)
{
    pc->ctl_fd = pc->ack_fd = -1;
    if (!ctl)
        return;
    /* perf holds both fifos open read-write, so neither open blocks. */
    pc->ctl_fd = open(ctl, O_WRONLY | O_CLOEXEC);
    if (pc->ctl_fd < 0)
        die("cannot open perf control fifo %s: %s", ctl, strerror(errno));
    if (ack) {
        pc->ack_fd = open(ack, O_RDONLY | O_CLOEXEC);
        if (pc->ack_fd < 0)
            die("cannot open perf ack fifo %s: %s", ack, strerror(errno));
    }
}

void perf_control_send(struct perf_control *pc, const char *command)
{
    if (pc->ctl_fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "%s\n", command);
    if (write(pc->ctl_fd, line, (size_t)n) != n)
        die("cannot write to the perf control fifo: %s", strerror(errno));
    if (pc->ack_fd < 0)
        return;
    /* Wait for perf's "ack" so the counters really cover the window. */
    wait_fd(pc->ack_fd, POLLIN, 5.0, "waiting for perf to acknowledge");
    char ack[16];
    ssize_t got;
    do
        got = read(pc->ack_fd, ack, sizeof ack);
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        die("perf closed its ack fifo");
}

void perf_control_close(struct perf_control *pc)
{
    if (pc->ctl_fd >= 0)
        close(pc->ctl_fd);
    if (pc->ack_fd >= 0)
        close(pc->ack_fd);
    pc->ctl_fd = pc->ack_fd = -1;
}
