/* sendfile: the same message file and chunk size through sendfile(): the
 * kernel copies from the page cache straight into socket buffers, with no
 * copy into or out of user space. */
#include "copy_sender.h"
#include "errors.h"
#include "sender.h"
#include "transfer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/sendfile.h>

const char *const VARIANT_NAME = "sendfile";
const bool SENDS_FROM_FILE = true;

struct sender {
    struct copy_sender from;
};

struct sender *sender_create(const struct sender_config *config)
{
    struct sender *s = calloc_or_die(1, sizeof *s);
    copy_sender_init_file(&s->from, config);
    return s;
}

enum io_status sender_send(struct sender *s, uint64_t seq)
{
    off_t at = (off_t)copy_sender_file_offset(&s->from, seq);
    off_t end = at + (off_t)s->from.size;
    /* sendfile advances at by what it sent: short sends continue from there. */
    while (at < end) {
        ssize_t sent = sendfile(s->from.fd, s->from.file, &at, (size_t)(end - at));
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
    copy_sender_finish(&s->from, counters);
    free(s);
}
