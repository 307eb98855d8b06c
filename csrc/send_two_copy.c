/* two_copy: pack the fields into one contiguous buffer (the user-space copy),
 * then send() it (the kernel's copy into socket buffers). */
#include "copy_sender.h"
#include "errors.h"
#include "message.h"
#include "sender.h"
#include "transfer.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "two_copy";
const bool SENDS_FROM_FILE = false;

struct sender {
    struct copy_sender from;
    char *packed;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    copy_sender_init(&s->from, config);
    s->packed = malloc(config->size);
    if (!s->packed)
        die("out of memory for a %zu-byte buffer", config->size);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    struct message *m = copy_sender_message(&s->from, seq);
    message_pack(m, s->packed); /* the user-space copy */
    return send_all(s->from.fd, s->packed, m->size);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    copy_sender_finish(&s->from, counters);
    free(s->packed);
    free(s);
}
