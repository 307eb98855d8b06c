/* zc_contiguous: the reference for zero_copy, the way a minimal MSG_ZEROCOPY benchmark sends: each message one
 * contiguous buffer, read the error queue only every 32 sends.  Otherwise it is zero_copy (zc_notify.c's
 * sender): it keeps as many bytes of distinct messages in flight (--zc-inflight), so a buffer the kernel still
 * holds is never the next one sent, as any sender whose bytes change must do.  Resending one cache-hot buffer
 * instead is no bound: at 1 KiB the receiver then copies out of 1 KiB of memory where zero_copy's ring spans
 * 256 KiB (docs/performance.md). */
#include "errors.h"
#include "zc_notify.h"

#include <stdlib.h>

const char *const VARIANT_NAME = "zc_contiguous";
const bool SENDS_FROM_FILE = false;
const bool VARIANT_ONE_BUFFER = true;

/* Like the kernel selftest msg_zerocopy, read the error queue only every so many sends: the kernel merges
 * the notifications of consecutive sends meanwhile, and each read is a system call. */
#define REAP_EVERY 32

struct sender {
    struct zc_sender zc;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    zc_sender_init(&s->zc, config, LAYOUT_CONTIGUOUS, REAP_EVERY);
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
