/* select: one thread waits on every connection at once with select(), whose
 * descriptor sets hold only descriptors below FD_SETSIZE and are rebuilt and
 * scanned whole on every call. */
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

const char *const MODEL_NAME = "select";
/* Room below FD_SETSIZE for the process's own descriptors (stdio, listener, control, perf fifos). */
_Static_assert(SELECT_MAX_CONNECTIONS + 16 <= FD_SETSIZE, "select's limit leaves the server no descriptors");
const unsigned MODEL_MAX_CONNECTIONS = SELECT_MAX_CONNECTIONS;

void model_serve(const struct model_config *config)
{
    int *fds = malloc(config->connections * sizeof *fds);
    if (!fds)
        die("out of memory");
    unsigned open = 0, accepted = 0;
    for (;;) {
        fd_set readable;
        FD_ZERO(&readable);
        int highest = -1;
        if (accepted < config->connections) {
            FD_SET(config->listen_fd, &readable);
            highest = config->listen_fd;
        }
        for (unsigned i = 0; i < open; i++) {
            FD_SET(fds[i], &readable);
            highest = fds[i] > highest ? fds[i] : highest;
        }
        if (select(highest + 1, &readable, NULL, NULL, NULL) < 0) {
            if (errno == EINTR)
                continue;
            die_errno("select");
        }
        if (accepted < config->connections && FD_ISSET(config->listen_fd, &readable)) {
            int fd = accept_connection(config);
            if (fd >= FD_SETSIZE)
                die("descriptor %d is beyond select's FD_SETSIZE (%d)", fd, FD_SETSIZE);
            fds[open++] = fd;
            accepted++;
        }
        for (unsigned i = 0; i < open;) {
            if (FD_ISSET(fds[i], &readable) && !answer_request(fds[i], config)) {
                if (close(fds[i]) != 0)
                    die_errno("close");
                fds[i] = fds[--open];
                continue;
            }
            i++;
        }
    }
}
