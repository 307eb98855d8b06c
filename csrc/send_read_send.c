/* read_send: a file server the classic way.  read() copies a message-sized
 * chunk of the message file from the page cache into a user buffer (a copy
 * into user space), then send() copies it into socket buffers. */
#include "copylab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const VARIANT_NAME = "read_send";
const bool SENDS_FROM_FILE = true;

struct sender {
    int fd, file;
    size_t size;
    char *buffer;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->size = config->size;
    s->file = message_file_open(config->file);
    s->buffer = page_alloc_or_die(config->size); /* as a file server's: read() into whole pages */
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    off_t at = (off_t)message_file_offset(seq, s->size);
    for (size_t got = 0; got < s->size;) {
        ssize_t n = pread(s->file, s->buffer + got, s->size - got, at + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("cannot read the message file: %s", n < 0 ? strerror(errno) : "it is shorter than it was");
        got += (size_t)n;
    }
    return send_all(s->fd, s->buffer, s->size);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    counters->zero_copy = false;
    if (close(s->file) != 0)
        die_errno("close");
    free(s->buffer);
    free(s);
}
