/* zc_contiguous: the reference for zero_copy, the way a minimal MSG_ZEROCOPY
 * benchmark sends: one contiguous buffer per message, sent again and again
 * while earlier sends are in flight.  It reads completions every 32 sends to
 * keep the error queue short but does not wait for them: its bytes never change, so reusing
 * the buffer early sends the same bytes.  With --verify every message carries
 * its own pattern, so it then waits, like zero_copy, before rewriting it. */
#include "zc_notify.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const VARIANT_NAME = "zc_contiguous";
const bool SENDS_FROM_FILE = false;

#define STALL_S 5.0
/* Like the kernel selftest msg_zerocopy, read the error queue only every so many sends: the kernel merges
 * the notifications of consecutive sends meanwhile, and each read is a system call. */
#define REAP_EVERY 32

struct sender {
    int fd;
    bool verify;
    struct message message; /* the pattern's fields, packed into buffer when verifying */
    char *buffer;
    size_t size;
    struct zc_completions zc;
    struct sender_counters counters;
};

/* Waits, bounded, until every send so far has completed. */
static bool wait_all(struct sender *s, double timeout_s)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    while (s->counters.zc_completed < s->counters.zc_sends) {
        if (zc_reap(s->fd, &s->zc))
            continue;
        uint64_t now = now_ns();
        if (now >= deadline)
            return false;
        struct pollfd p = {.fd = s->fd, .events = 0};
        if (poll(&p, 1, 1) < 0 && errno != EINTR)
            die_errno("poll");
    }
    return true;
}

static void on_enobufs(void *ctx)
{
    struct sender *s = ctx;
    s->counters.zc_enobufs++;
    if (zc_reap(s->fd, &s->zc) == 0) {
        struct pollfd p = {.fd = s->fd, .events = 0};
        if (poll(&p, 1, 1) < 0 && errno != EINTR)
            die_errno("poll");
    }
}

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->verify = config->verify;
    s->size = config->size;
    zc_completions_init(&s->zc, &s->counters);
    zc_enable(s->fd);
    message_alloc(&s->message, config->size, config->align_fields);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    s->buffer = aligned_alloc(page, (config->size + page - 1) / page * page); /* whole pages, as a benchmark's */
    if (!s->buffer)
        die("out of memory for a %zu-byte buffer", config->size);
    message_pack(&s->message, s->buffer);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    if (s->verify) {
        if (!wait_all(s, STALL_S))
            die("zero-copy completions stalled for %.0f s", STALL_S);
        message_fill(&s->message, seq);
        message_pack(&s->message, s->buffer);
    }
    struct iovec iov = {.iov_base = s->buffer, .iov_len = s->size};
    uint64_t calls = 0;
    enum io_status status = sendmsg_all(s->fd, &iov, 1, MSG_ZEROCOPY, on_enobufs, s, &calls);
    zc_sent(&s->zc, calls);
    if (seq % REAP_EVERY == REAP_EVERY - 1)
        zc_reap(s->fd, &s->zc);
    return status;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    wait_all(s, 2.0); /* completions still missing stay visible as sends > completed */
    *counters = s->counters;
    message_free(&s->message);
    free(s->buffer);
    free(s);
}
