/* The message: FIELD_COUNT fields, held in memory as --layout says (message.c). */
#ifndef COPYLAB_MESSAGE_H
#define COPYLAB_MESSAGE_H

#include "limits.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* How a sender holds the message in memory (--layout). */
enum layout { LAYOUT_FIELDS, LAYOUT_ALIGNED, LAYOUT_CONTIGUOUS };

struct message {
    char *field[FIELD_COUNT];
    size_t len[FIELD_COUNT];
    size_t size;
    char *block; /* LAYOUT_CONTIGUOUS: the one buffer the fields lie in, back to back; otherwise NULL */
};
/* LAYOUT_FIELDS: each field its own allocation, as the study prescribes; LAYOUT_ALIGNED: each its own
 * allocation starting on a page boundary; LAYOUT_CONTIGUOUS: the fields back to back in one page-aligned buffer. */
void message_alloc(struct message *msg, size_t size, enum layout layout);
void message_free(struct message *msg);
/* COUNT messages of SIZE bytes held as LAYOUT says: a sender cycles through them (--distinct-messages), so with
 * many its source is cold in the caches, as a server's data would be; with one, hot. */
struct message *messages_alloc(size_t count, size_t size, enum layout layout);
void messages_free(struct message *messages, size_t count);
/* Writes the verification pattern of message number seq into the fields. */
void message_fill(struct message *msg, uint64_t seq);
/* The message as an iovec: one entry per field, or one for a contiguous message; returns the entries used. */
int message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT]);
/* Copies the fields, in order, into one contiguous buffer of msg->size bytes. */
void message_pack(const struct message *msg, void *into);

#endif
