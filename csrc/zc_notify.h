/* What the zero-copy senders share: MSG_ZEROCOPY on a socket, the ring of messages they keep in flight, and
 * the accounting of the kernel's completions, whether they come as id ranges on MSG_ZEROCOPY's error queue
 * or as io_uring's notifications, one per send. */
#ifndef COPYLAB_ZC_NOTIFY_H
#define COPYLAB_ZC_NOTIFY_H

#include "message.h"
#include "sender.h"
#include "transfer.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
/* Sets SO_ZEROCOPY on FD; dies with the kernel's reason when it refuses. */
void zc_enable(int fd);
/* How many messages of SIZE bytes a zero-copy sender keeps in flight (at least 2): a ring of IN_FLIGHT bytes
 * (--zc-inflight; copylab/declarations/settings.py says how its default was chosen), or DISTINCT
 * when more (--distinct-messages). */
size_t zc_ring_slots(size_t size, size_t in_flight, size_t distinct);
/* The messages a MSG_ZEROCOPY sender keeps in flight: zc_ring_slots of them, each held as LAYOUT says; slot i is
 * free to be rewritten and sent again once every send id below ready_at[i] has completed. */
struct zc_ring {
    size_t slots;
    struct message *message;
    uint64_t *ready_at;
};
void zc_ring_init(struct zc_ring *ring, size_t size, size_t in_flight, enum layout layout, size_t distinct);
void zc_ring_free(struct zc_ring *ring);

/* Which sends the kernel has let go of, counted into a sender's zc_sends, zc_completed, zc_copied and
 * zc_notifications.  MSG_ZEROCOPY numbers a socket's successful sends from 0 (zc_sends is the next one's
 * id) and may complete them out of order, so the watermark, not the count, says when a ring slot is free. */
#define ZC_MAX_PENDING_RANGES 256
struct zc_id_range {
    uint64_t low, high; /* inclusive */
};
struct zc_completions {
    struct sender_counters *counters;
    uint64_t completed_below; /* every MSG_ZEROCOPY id below it has completed */
    struct zc_id_range pending[ZC_MAX_PENDING_RANGES]; /* ranges that completed ahead of the watermark */
    unsigned pending_count;
    uintptr_t page_size;
};
/* Accounts into COUNTERS, which it marks as a zero-copy sender's. */
void zc_completions_init(struct zc_completions *zc, struct sender_counters *counters);
/* One message about to go out zero-copy as IOV: counts it and the pages each entry spans, summed over entries,
 * as the kernel pins them (an entry sharing a page with another pins that page again). */
void zc_message_pinned(struct zc_completions *zc, const struct iovec *iov, size_t entries);
/* SENDS more sends had their pages pinned: each will be notified. */
void zc_sent(struct zc_completions *zc, uint64_t sends);
/* One notification: SENDS sends completed, COPIED if the kernel copied their bytes after all.
 * io_uring notifies each send apart (SENDS = 1, the slot in its user data); zc_reap calls it per id range. */
void zc_notified(struct zc_completions *zc, uint64_t sends, bool copied);
/* Takes every MSG_ZEROCOPY notification queued on FD now, without blocking, advancing the
 * watermark; returns how many there were. */
unsigned zc_reap(int fd, struct zc_completions *zc);
/* After a send failed with ENOBUFS (the socket's option memory is held by notifications not yet read): counts
 * it, reads what is queued, or else waits at most 1 ms for the next notification, then lets the send retry. */
void zc_wait_for_optmem(int fd, struct zc_completions *zc);

/* A MSG_ZEROCOPY sender (sendmsg on a socket, completions read from its error queue): what zero_copy and
 * zc_contiguous share, so that they differ only in how a message lies in memory (and in how often
 * zc_contiguous reads the error queue, as its reference benchmark does). */
struct zc_sender {
    int fd;
    bool verify;
    struct zc_ring ring;
    struct zc_completions zc;
    struct sender_counters counters;
    unsigned reap_every; /* read the error queue after every so many sends; 0: only when a ring slot is needed */
};
/* Turns on SO_ZEROCOPY on CONFIG's socket and allocates the ring, its messages held as LAYOUT says. */
void zc_sender_init(struct zc_sender *s, const struct sender_config *config, enum layout layout, unsigned reap_every);
/* Sends message SEQ from its ring slot once the kernel has let go of the slot's last send; dies when the
 * completions stall. */
enum io_status zc_sender_send(struct zc_sender *s, uint64_t seq);
/* Waits, bounded, for the completions still missing (they stay visible as sends > completed), then hands over
 * the counters and frees the ring. */
void zc_sender_finish(struct zc_sender *s, struct sender_counters *counters);

#endif
