/* one_copy: one sendmsg() whose 8-entry iovec points at the fields, so the
 * user-space packing copy disappears; the kernel still copies into skbs. */
#include "copylab.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "one_copy";
const bool SENDS_FROM_FILE = false;

struct sender {
    int fd;
    bool verify;
    struct message *messages;
    size_t count;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    s->count = config->distinct;
    s->messages = messages_alloc(s->count, config->size, config->layout);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    struct message *m = &s->messages[seq % s->count];
    if (s->verify)
        message_fill(m, seq);
    /* sendmsg_all consumes the iovec on short sends: rebuild it per message. */
    struct iovec iov[FIELD_COUNT];
    int entries = message_iov(m, iov);
    return sendmsg_all(s->fd, iov, (size_t)entries, 0, NULL, NULL, NULL);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    counters->zero_copy = false;
    messages_free(s->messages, s->count);
    free(s);
}
