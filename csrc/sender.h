/* The variant's sending path: what each send_VARIANT.c defines (one per binary), which the server (server.c)
 * drives and the client (client.c) asks whether it sends from the message file. */
#ifndef COPYLAB_SENDER_H
#define COPYLAB_SENDER_H

#include "message.h"
#include "transfer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sender_counters {
    bool zero_copy;
    uint64_t zc_sends, zc_completed, zc_copied, zc_notifications, zc_enobufs;
    uint64_t zc_messages, zc_page_pins; /* messages handed to MSG_ZEROCOPY, and the pages their entries span */
};
struct sender;
struct sender_config {
    int fd;
    size_t size;
    bool verify;      /* write the pattern into every message before sending it */
    const char *file; /* the prepared message file (file-sending variants) */
    enum layout layout;
    size_t zc_inflight; /* zero-copy senders: bytes of messages kept in flight */
    size_t distinct;    /* messages cycled through (zero-copy senders: at least their ring's) */
};
extern const char *const VARIANT_NAME;
/* True: the variant always sends its message from one buffer, whatever --layout says (server.c's default:
 * false); the server then reports the layout as contiguous. */
extern const bool VARIANT_ONE_BUFFER;
/* True: the variant sends the message file, whose pattern repeats every
 * message_file_messages(size) messages; the client verifies accordingly. */
extern const bool SENDS_FROM_FILE;
/* NULL when this sending path can run on this kernel; otherwise why not, in
 * one line.  The server's default says yes; variants that need more override it. */
const char *sender_unavailable(void);
struct sender *sender_create(const struct sender_config *config);
/* Sends message number seq completely. */
enum io_status sender_send(struct sender *s, uint64_t seq);
/* Waits (bounded) for outstanding work, adds its counters, frees s. */
void sender_destroy(struct sender *s, struct sender_counters *counters);

#endif
