/* The servers experiment: a model is how a server waits for many connections
 * (one wait_MODEL.c each, holding only its waiting and dispatch loop); the core
 * (serve_main.c) owns the session, the measured window and the JSON, and
 * load_client.c keeps every connection busy with one request at a time. */
#ifndef COPYLAB_MODEL_H
#define COPYLAB_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model_config {
    int listen_fd;
    unsigned connections; /* how many the client opens */
    size_t size;          /* bytes of each response */
    const char *response; /* the response: size bytes of the pattern */
};

extern const char *const MODEL_NAME;
/* The most connections the model can hold (select: FD_SETSIZE), 0 when only the system limits it. */
extern const unsigned MODEL_MAX_CONNECTIONS;

/* The model's loop: accepts config->connections connections and answers every
 * request on each; it runs until the process ends (the core ends it with the session). */
void model_serve(const struct model_config *config);

/* Reads one request on fd and sends the response; false when the peer closed. */
bool answer_request(int fd, const struct model_config *config);

/* A connection an event loop serves without blocking (loop_connection.c). */
struct loop_connection {
    int fd;
    size_t request_bytes; /* of the request arriving */
    uint64_t owed;        /* requests received and not yet answered */
    size_t sent;          /* of the response leaving */
};
enum loop_wait { LOOP_WAIT_READ, LOOP_WAIT_WRITE, LOOP_CLOSED };
/* Makes FD non-blocking and C its state. */
void loop_connection_open(struct loop_connection *c, int fd);
/* Answers every request that has arrived, as far as the socket takes the responses: what C waits for next. */
enum loop_wait loop_connection_serve(struct loop_connection *c, const struct model_config *config);
/* Accepts one connection of the session (blocking, bounded like every accept).
 * Once it has accepted all of them, the model holds its connections: the client's
 * warm-up may begin. */
int accept_connection(const struct model_config *config);
/* Counts a connection a model accepted its own way (accept_connection counts its own). */
void connection_taken(const struct model_config *config);
/* NULL when the model can run on this kernel, else why not (--probe); most models always can. */
const char *model_unavailable(void);
/* Says the model holds every connection it takes at the start, when that is
 * fewer than all of them (iterative: one). */
void model_settled(void);

/* A forked child's share of the window's CPU: a child calls window_child_start()
 * after fork and window_child_exit() to end.  In between, answer_request() looks at
 * the window's phase after each request arrives and snapshots the child's own usage
 * when the window opened or closed (blocked time costs no CPU, so nothing is missed);
 * the exit adds the child's share to the parent's total. */
void window_child_start(void);
_Noreturn void window_child_exit(void);

#endif
