/* The message every sending path sends: FIELD_COUNT separately allocated fields (the study's scattered
 * data), each byte holding the pattern of its message number and offset so the client can verify it. */
#include "copylab.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void message_alloc(struct message *msg, size_t size, bool page_aligned)
{
    size_t share = size / FIELD_COUNT;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    msg->size = size;
    for (int i = 0; i < FIELD_COUNT; i++) {
        msg->len[i] = share + (i == FIELD_COUNT - 1 ? size % FIELD_COUNT : 0);
        size_t bytes = msg->len[i] ? msg->len[i] : 1;
        /* Page-aligned, a field of whole pages pins whole pages: MSG_ZEROCOPY then needs fewer fragments. */
        msg->field[i] = page_aligned ? aligned_alloc(page, (bytes + page - 1) / page * page) : malloc(bytes);
        if (!msg->field[i])
            die("out of memory for a %zu-byte message", size);
    }
    message_fill(msg, 0);
}

void message_free(struct message *msg)
{
    for (int i = 0; i < FIELD_COUNT; i++) {
        free(msg->field[i]);
        msg->field[i] = NULL;
    }
}

void message_fill(struct message *msg, uint64_t seq)
{
    uint64_t offset = 0;
    for (int i = 0; i < FIELD_COUNT; i++)
        for (size_t k = 0; k < msg->len[i]; k++, offset++)
            msg->field[i][k] = (char)pattern_byte(seq, offset);
}

void message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT])
{
    for (int i = 0; i < FIELD_COUNT; i++) {
        iov[i].iov_base = msg->field[i];
        iov[i].iov_len = msg->len[i];
    }
}

void message_pack(const struct message *msg, void *into)
{
    char *cursor = into;
    for (int i = 0; i < FIELD_COUNT; i++) {
        memcpy(cursor, msg->field[i], msg->len[i]);
        cursor += msg->len[i];
    }
}
