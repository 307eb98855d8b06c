/* one_copy: one sendmsg() whose 8-entry iovec points at the fields, so the
 * user-space packing copy disappears; the kernel still copies into skbs. */
#include "copy_sender.h"
#include "errors.h"
#include "limits.h"
#include "message.h"
#include "sender.h"
#include "transfer.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "one_copy";
const bool SENDS_FROM_FILE = false;

struct sender {
    struct copy_sender from;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    copy_sender_init(&s->from, config);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    struct message *m = copy_sender_message(&s->from, seq);
    /* sendmsg_all consumes the iovec on short sends: rebuild it per message. */
    struct iovec iov[FIELD_COUNT];
    int entries = message_iov(m, iov);
    return sendmsg_all(s->from.fd, iov, (size_t)entries, 0, NULL, NULL, NULL);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    copy_sender_finish(&s->from, counters);
    free(s);
}
