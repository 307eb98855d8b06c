/* sendfile: the same message file and chunk size through sendfile(): the
 * kernel copies from the page cache straight into socket buffers, with no
 * copy into or out of user space. */
#include "copylab.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

const char *const VARIANT_NAME = "sendfile";
const bool SENDS_FROM_FILE = true;

struct sender {
    int fd, file;
    size_t size;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    s->fd = config->fd;
    s->size = config->size;
    s->file = message_file_open(config->file);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    off_t at = (off_t)message_file_offset(seq, s->size);
    off_t end = at + (off_t)s->size;
    /* sendfile advances at by what it sent: short sends continue from there. */
    while (at < end) {
        ssize_t sent = sendfile(s->fd, s->file, &at, (size_t)(end - at));
        if (sent > 0)
            continue;
        if (sent == 0)
            die("cannot send the message file: it is shorter than it was");
        if (send_failure(errno, "sendfile") == IO_PEER_CLOSED)
            return IO_PEER_CLOSED;
    }
    return IO_OK;
}

void sender_destroy(struct sender *s, struct sender_counters *counters)
{
    counters->zero_copy = false;
    if (close(s->file) != 0)
        die_errno("close");
    free(s);
}
