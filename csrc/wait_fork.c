/* fork: a process per connection, each blocked in recv() on its own connection
 * (an address space, a process switch and a wake-up each). */
#include "errors.h"
#include "model.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const MODEL_NAME = "fork";
const unsigned MODEL_MAX_CONNECTIONS = 0;

void model_serve(const struct model_config *config)
{
    for (unsigned i = 0; i < config->connections; i++) {
        int fd = accept_connection(config);
        pid_t pid = fork();
        if (pid < 0)
            die("fork for connection %u: %s", i + 1, strerror(errno));
        if (pid == 0) {
            window_child_start();
            while (answer_request(fd, config))
                continue;
            window_child_exit();
        }
        if (close(fd) != 0)
            die_errno("close");
        /* A child whose connection ended early is reaped now, not left a zombie for the run. */
        while (waitpid(-1, NULL, WNOHANG) > 0)
            continue;
    }
}
