/* thread: a thread per connection, each blocked in recv() on its own connection;
 * the scheduler picks whichever has a request (a stack and a wake-up each). */
#include "errors.h"
#include "model.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

const char *const MODEL_NAME = "thread";
const unsigned MODEL_MAX_CONNECTIONS = 0;

static const struct model_config *served;

static void *serve_connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    while (answer_request(fd, served))
        continue;
    if (close(fd) != 0)
        die_errno("close");
    return NULL;
}

void model_serve(const struct model_config *config)
{
    served = config;
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) != 0 || pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED) != 0)
        die("pthread_attr: cannot make detached threads");
    for (unsigned i = 0; i < config->connections; i++) {
        int fd = accept_connection(config);
        pthread_t thread;
        int err = pthread_create(&thread, &attributes, serve_connection, (void *)(intptr_t)fd);
        if (err)
            die("pthread_create for connection %u: %s", i + 1, strerror(err));
    }
    pthread_attr_destroy(&attributes);
}
