/* iterative: one connection at a time.  The server accepts a connection and
 * answers its requests until the client closes it, then accepts the next; with
 * clients that keep their connections, the first one is served and the rest wait. */
#include "errors.h"
#include "model.h"

#include <unistd.h>

const char *const MODEL_NAME = "iterative";
const unsigned MODEL_MAX_CONNECTIONS = 0;

void model_serve(const struct model_config *config)
{
    for (;;) {
        int fd = accept_connection(config);
        model_settled();
        while (answer_request(fd, config))
            continue;
        if (close(fd) != 0)
            die_errno("close");
    }
}
