/* The client's side of the stream, in any receive mode (receive.c). */
#ifndef COPYLAB_RECEIVE_H
#define COPYLAB_RECEIVE_H

#include "options.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct receiver_io {
    int fd;
    enum receive_mode mode;
    uint8_t *buffer; /* copy: the data; truncate with verify: what MSG_PEEK showed */
    size_t capacity;
    uint8_t *map; /* mmap: the region TCP_ZEROCOPY_RECEIVE maps pages into */
    size_t map_bytes;
    /* Verification: the pattern of message size bytes, repeating every period messages (0: never). */
    bool verify;
    uint64_t size, period;
    uint64_t position; /* bytes consumed so far: where the next byte sits in the pattern */
    uint64_t mismatches;
    uint64_t mapped, copied; /* mmap: bytes that arrived as mapped pages, and by recv() */
    uint64_t copybuf;        /* mmap: bytes TCP_ZEROCOPY_RECEIVE copied into its copy buffer in the same call */
    uint64_t calls;          /* receive system calls made (recv(), TCP_ZEROCOPY_RECEIVE) */
};
void receiver_io_open(struct receiver_io *io, int fd, const struct options *opt, uint64_t period);
void receiver_io_close(struct receiver_io *io);
/* Consumes between 1 and want bytes of the stream; 0 when the peer closed it. */
size_t receive_some(struct receiver_io *io, size_t want);

#endif
