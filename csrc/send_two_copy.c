/* two_copy: pack the fields into one contiguous buffer (the user-space copy),
 * then send() it (the kernel's copy into socket buffers). */
#include "copylab.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "two_copy";
const bool SENDS_FROM_FILE = false;

struct sender {
    int fd;
    bool verify;
    struct message *messages;
    size_t count;
    char *packed;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    s->count = config->distinct;
    s->messages = messages_alloc(s->count, config->size, config->layout);
    s->packed = malloc(config->size);
    if (!s->packed)
        die("out of memory for a %zu-byte buffer", config->size);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    struct message *m = &s->messages[seq % s->count];
    if (s->verify)
        message_fill(m, seq);
    message_pack(m, s->packed); /* the user-space copy */
    return send_all(s->fd, s->packed, m->size);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    counters->zero_copy = false;
    messages_free(s->messages, s->count);
    free(s->packed);
    free(s);
}
