/* The messages or the message file a copying sender sends from (copy_sender.h). */
#include "copy_sender.h"

#include "errors.h"
#include "message_file.h"

#include <unistd.h>

void copy_sender_init(struct copy_sender *s, const struct sender_config *config)
{
    *s = (struct copy_sender){.fd = config->fd, .size = config->size, .verify = config->verify, .file = -1};
    s->count = config->distinct;
    s->messages = messages_alloc(s->count, config->size, config->layout);
}

void copy_sender_init_file(struct copy_sender *s, const struct sender_config *config)
{
    *s = (struct copy_sender){.fd = config->fd, .size = config->size, .verify = config->verify};
    s->file = message_file_open(config->file);
}

struct message *copy_sender_message(struct copy_sender *s, uint64_t seq)
{
    struct message *m = &s->messages[seq % s->count];
    if (s->verify)
        message_fill(m, seq);
    return m;
}

uint64_t copy_sender_file_offset(const struct copy_sender *s, uint64_t seq)
{
    return message_file_offset(seq, s->size);
}

void copy_sender_finish(struct copy_sender *s, struct sender_counters *counters)
{
    counters->zero_copy = false;
    if (s->messages)
        messages_free(s->messages, s->count);
    if (s->file >= 0 && close(s->file) != 0)
        die_errno("close");
    *s = (struct copy_sender){.file = -1};
}
