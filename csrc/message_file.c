/* The message file of the file-sending variants: messages 0..N-1 back to back, in the pattern a message in
 * memory carries, written once per sweep and size and read once before any window. */
#include "message_file.h"

#include "errors.h"
#include "pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t message_file_messages(uint64_t size)
{
    uint64_t messages = (MESSAGE_FILE_MIN_BYTES + size - 1) / size;
    return messages < 8 ? 8 : messages;
}

uint64_t message_file_offset(uint64_t seq, uint64_t size)
{
    return (seq % message_file_messages(size)) * size;
}

/* Writes all of buf, whatever the kernel takes per call; on failure removes the half-written file. */
static void write_all(int fd, const char *buf, size_t len, const char *path)
{
    while (len > 0) {
        ssize_t written = write(fd, buf, len);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            unlink(path);
            die("cannot write the message file %s: %s", path, strerror(err));
        }
        buf += written;
        len -= (size_t)written;
    }
}

static void message_file_write(const char *path, uint64_t size, uint64_t bytes)
{
    char temporary[4096];
    if (snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof temporary)
        die_usage("--file: the path is too long");
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die("cannot create the message file %s: %s", temporary, strerror(errno));
    enum { CHUNK = 1 << 20 };
    char *chunk = malloc(CHUNK);
    if (!chunk)
        die("out of memory");
    uint64_t seq = 0, offset = 0;
    for (uint64_t done = 0; done < bytes;) {
        size_t len = bytes - done < CHUNK ? (size_t)(bytes - done) : CHUNK;
        for (size_t i = 0; i < len; i++) {
            chunk[i] = (char)pattern_byte(seq, offset);
            if (++offset == size) {
                offset = 0;
                seq++;
            }
        }
        write_all(fd, chunk, len, temporary);
        done += len;
    }
    free(chunk);
    if (close(fd) != 0) {
        int err = errno;
        unlink(temporary);
        die("cannot write the message file %s: %s", temporary, strerror(err));
    }
    /* Whole or not at all: a concurrent or interrupted writer never leaves a short file under path. */
    if (rename(temporary, path) != 0)
        die("cannot create the message file %s: %s", path, strerror(errno));
}

int message_file_open(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open the message file %s: %s", path, strerror(errno));
    return fd;
}

void message_file_prepare(const char *path, uint64_t size)
{
    uint64_t bytes = message_file_messages(size) * size;
    struct stat st;
    if (stat(path, &st) != 0 || (uint64_t)st.st_size != bytes)
        message_file_write(path, size, bytes);
    /* Read it once, so the window measures the page cache, never the disk. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open the message file %s: %s", path, strerror(errno));
    char *chunk = malloc(1 << 20);
    if (!chunk)
        die("out of memory");
    ssize_t got;
    while ((got = read(fd, chunk, 1 << 20)) != 0)
        if (got < 0 && errno != EINTR)
            die("cannot read the message file %s: %s", path, strerror(errno));
    free(chunk);
    if (close(fd) != 0)
        die_errno("close");
}
