/* The message every sending path sends: FIELD_COUNT fields (the study's scattered data, held as --layout
 * says), each byte holding the pattern of its message number and offset so the client can verify it. */
#include "message.h"

#include "errors.h"
#include "limits.h"
#include "pattern.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *page_aligned_or_die(size_t bytes, size_t message_size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* Page-aligned memory of whole pages pins whole pages: MSG_ZEROCOPY then needs fewer fragments. */
    void *memory = aligned_alloc(page, (bytes + page - 1) / page * page);
    if (!memory)
        die("out of memory for a %zu-byte message", message_size);
    return memory;
}

/* The message's fields, held as LAYOUT says, their bytes not yet written. */
static void message_place(struct message *msg, size_t size, enum layout layout)
{
    size_t share = size / FIELD_COUNT;
    msg->size = size;
    msg->block = layout == LAYOUT_CONTIGUOUS ? page_aligned_or_die(size, size) : NULL;
    size_t offset = 0;
    for (int i = 0; i < FIELD_COUNT; i++) {
        msg->len[i] = share + (i == FIELD_COUNT - 1 ? size % FIELD_COUNT : 0);
        size_t bytes = msg->len[i] ? msg->len[i] : 1;
        if (msg->block)
            msg->field[i] = msg->block + offset;
        else if (layout == LAYOUT_ALIGNED)
            msg->field[i] = page_aligned_or_die(bytes, size);
        else if (!(msg->field[i] = malloc(bytes)))
            die("out of memory for a %zu-byte message", size);
        offset += msg->len[i];
    }
}

void message_alloc(struct message *msg, size_t size, enum layout layout)
{
    message_place(msg, size, layout);
    message_fill(msg, 0);
}

struct message *messages_alloc(size_t count, size_t size, enum layout layout)
{
    if (count > 1 && size > (1ULL << 30) / count)
        die_usage("--distinct-messages: %zu messages of %zu bytes are more than 1 GiB", count, size);
    struct message *messages = calloc_or_die(count, sizeof *messages);
    message_alloc(&messages[0], size, layout);
    /* Every message starts as the first one's bytes: copying them is several times faster than computing the
     * pattern byte by byte again, which cost a trial of thousands of large messages most of its start-up. */
    for (size_t i = 1; i < count; i++) {
        message_place(&messages[i], size, layout);
        for (int f = 0; f < FIELD_COUNT; f++)
            memcpy(messages[i].field[f], messages[0].field[f], messages[0].len[f]);
    }
    return messages;
}

void messages_free(struct message *messages, size_t count)
{
    for (size_t i = 0; i < count; i++)
        message_free(&messages[i]);
    free(messages);
}

void message_free(struct message *msg)
{
    for (int i = 0; i < FIELD_COUNT && !msg->block; i++)
        free(msg->field[i]);
    free(msg->block);
    *msg = (struct message){0};
}

void message_fill(struct message *msg, uint64_t seq)
{
    uint64_t offset = 0;
    for (int i = 0; i < FIELD_COUNT; i++)
        for (size_t k = 0; k < msg->len[i]; k++, offset++)
            msg->field[i][k] = (char)pattern_byte(seq, offset);
}

int message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT])
{
    if (msg->block) {
        iov[0] = (struct iovec){.iov_base = msg->block, .iov_len = msg->size};
        return 1;
    }
    for (int i = 0; i < FIELD_COUNT; i++)
        iov[i] = (struct iovec){.iov_base = msg->field[i], .iov_len = msg->len[i]};
    return FIELD_COUNT;
}

void message_pack(const struct message *msg, void *into)
{
    char *cursor = into;
    for (int i = 0; i < FIELD_COUNT; i++) {
        memcpy(cursor, msg->field[i], msg->len[i]);
        cursor += msg->len[i];
    }
}
