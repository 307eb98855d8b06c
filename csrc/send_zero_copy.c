/* zero_copy: sendmsg(MSG_ZEROCOPY) with the 8-entry iovec (one entry with --layout contiguous).  The kernel pins
 * the pages instead of copying them and later reports, on the socket's error
 * queue, which sends it no longer needs (and whether it copied them anyway).
 * A ring of messages lets sends proceed while earlier ones are in flight; a
 * slot is never written again before the completion that covers it (zc_notify.c). */
#include "errors.h"
#include "zc_notify.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "zero_copy";
const bool SENDS_FROM_FILE = false;

struct sender {
    struct zc_sender zc;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    zc_sender_init(&s->zc, config, config->layout, 0);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    return zc_sender_send(&s->zc, seq);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    zc_sender_finish(&s->zc, counters);
    free(s);
}
