/* read_send: a file server the classic way.  read() copies a message-sized
 * chunk of the message file from the page cache into a user buffer (a copy
 * into user space), then send() copies it into socket buffers. */
#include "copy_sender.h"
#include "errors.h"
#include "sender.h"
#include "transfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const VARIANT_NAME = "read_send";
const bool SENDS_FROM_FILE = true;

struct sender {
    struct copy_sender from;
    char *buffer;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    copy_sender_init_file(&s->from, config);
    s->buffer = page_alloc_or_die(config->size); /* as a file server's: read() into whole pages */
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    size_t size = s->from.size;
    off_t at = (off_t)copy_sender_file_offset(&s->from, seq);
    for (size_t got = 0; got < size;) {
        ssize_t n = pread(s->from.file, s->buffer + got, size - got, at + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("cannot read the message file: %s", n < 0 ? strerror(errno) : "it is shorter than it was");
        got += (size_t)n;
    }
    return send_all(s->from.fd, s->buffer, size);
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    copy_sender_finish(&s->from, counters);
    free(s->buffer);
    free(s);
}
