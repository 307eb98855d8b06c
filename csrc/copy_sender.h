/* What the copying senders share (one_copy, two_copy, uring_send, read_send, and sendfile, which sends the message
 * file as read_send does): the socket, and the messages they send from memory or the message file they send
 * from, so that they differ only in how a message's bytes leave (copy_sender.c).  The zero-copy senders share
 * theirs in zc_notify.h. */
#ifndef COPYLAB_COPY_SENDER_H
#define COPYLAB_COPY_SENDER_H

#include "message.h"
#include "sender.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct copy_sender {
    int fd;
    size_t size;
    bool verify;
    struct message *messages; /* from memory: the messages cycled through (--distinct-messages); else NULL */
    size_t count;
    int file; /* from the message file: its descriptor; else -1 */
};
/* From memory: CONFIG's distinct messages of its size, held as its layout says. */
void copy_sender_init(struct copy_sender *s, const struct sender_config *config);
/* From the message file CONFIG names, prepared by the server. */
void copy_sender_init_file(struct copy_sender *s, const struct sender_config *config);
/* The message in memory to send as number SEQ, its pattern written into it first when verifying. */
struct message *copy_sender_message(struct copy_sender *s, uint64_t seq);
/* Where message number SEQ starts in the message file. */
uint64_t copy_sender_file_offset(const struct copy_sender *s, uint64_t seq);
/* Frees the messages or closes the file; COUNTERS record a sender without zero copy. */
void copy_sender_finish(struct copy_sender *s, struct sender_counters *counters);

#endif
