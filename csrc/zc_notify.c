/* MSG_ZEROCOPY on a socket: turning it on, sizing the ring of messages in
 * flight, and reading completions from the socket's error queue.  Each notification covers a range of send ids and
 * says whether the kernel copied those sends anyway. */
#include "copylab.h"

#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>

void zc_enable(int fd)
{
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0)
        die("the kernel refuses SO_ZEROCOPY: %s", strerror(errno));
}

size_t zc_ring_slots(size_t size)
{
    const size_t most = 1024; /* tiny messages: bound the ring's bookkeeping, not its bytes */
    size_t slots = ZC_IN_FLIGHT_BYTES / size;
    return slots < 2 ? 2 : slots > most ? most : slots;
}

unsigned zc_reap(int fd, zc_range_fn on_range, void *ctx)
{
    unsigned notifications = 0;
    for (;;) {
        char control[CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6))];
        struct msghdr mh = {.msg_control = control, .msg_controllen = sizeof control};
        if (recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return notifications;
            die_errno("recvmsg MSG_ERRQUEUE");
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            bool is_error = (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
                            (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR);
            if (!is_error)
                continue;
            const struct sock_extended_err *err = (const void *)CMSG_DATA(cm);
            if (err->ee_origin != SO_EE_ORIGIN_ZEROCOPY || err->ee_errno != 0)
                die("unexpected socket error on the error queue: %s", strerror(err->ee_errno));
            on_range(ctx, err->ee_info, err->ee_data, (err->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0);
            notifications++;
        }
    }
}
