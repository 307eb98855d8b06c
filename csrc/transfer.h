/* Socket I/O that survives EINTR and short transfers (transfer.c). */
#ifndef COPYLAB_TRANSFER_H
#define COPYLAB_TRANSFER_H

#include "limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

enum io_status { IO_OK = 0, IO_PEER_CLOSED = 1 };
/* Retries after ENOBUFS call on_enobufs (NULL: ENOBUFS is an error).
 * *calls counts successful sendmsg calls (zero-copy notification ids). */
enum io_status sendmsg_all(int fd, struct iovec *iov, int iovcnt, int flags,
                           void (*on_enobufs)(void *ctx), void *ctx, uint64_t *calls);
/* Skips sent bytes of a message header's iovec after a short send. */
void iov_advance(struct msghdr *mh, size_t sent);
bool peer_gone(int err);
/* What a send-like call failing with ERR means: retry it (IO_OK: it was interrupted), the peer is
 * gone (IO_PEER_CLOSED), or the trial cannot go on (dies naming CALL and the cause). */
enum io_status send_failure(int err, const char *call);
enum io_status send_all(int fd, const void *buf, size_t len);
/* From now on each send call carries one datagram of BYTES of what is left of a message, or all of it when that is
 * at most BYTES + TAIL (0, the default: a stream, any length); so a message's datagrams depend on its size alone. */
void use_datagrams(size_t bytes, size_t tail);
/* What one send call carries of LEFT bytes. */
size_t send_piece(size_t left);
/* The part of MH's iovec one send call carries: all of it on a stream, else its first datagram's bytes as PART's
 * entries (PART must outlive the call). */
struct msghdr msg_piece(const struct msghdr *mh, struct iovec part[FIELD_COUNT]);
enum io_status recv_exact(int fd, void *buf, size_t len);

#endif
