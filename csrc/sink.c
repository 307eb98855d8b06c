/* The sink path (--path sink).  The server sends UDP datagrams to SINK_ADDRESS, a permanent neighbour behind
 * SINK_DEVICE, whose root qdisc (blackhole) drops every packet once the stack has built it: nothing is delivered
 * locally, so the kernel has no reason to copy MSG_ZEROCOPY's pinned pages, and what a send costs is what leaving
 * user space costs.  No datagram is ever fragmented (fragmenting copies every zero-copy send): the socket refuses
 * to (IP_PMTUDISC_DO), and a datagram longer than the MTU carries goes as UDP_SEGMENT segments, which the qdisc
 * drops whole, before they are cut.  The client, in the server's namespace, counts the qdisc's drops. */
#include "errors.h"
#include "limits.h"
#include "sink.h"
#include "socket_options.h"
#include "transfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#define SINK_PORT 9 /* discard */
#define IPV4_UDP_HEADERS 28
#define DATAGRAM_MOST (65535 - IPV4_UDP_HEADERS)
#define SEGMENTS_MOST 64 /* UDP_MAX_SEGMENTS of kernels before 6.10; later ones allow more */
#define PAGE 4096
/* A zero-copy datagram carries each page an iovec entry spans as a fragment of one skb, and the kernel refuses
 * (EMSGSIZE) one that needs more than MAX_SKB_FRAGS (17): at most 16, for a margin. */
#define FRAGS_MOST 16

static uint64_t segment_bytes;

uint64_t sink_segment_bytes(void)
{
    return segment_bytes;
}

/* The longest datagram a send carries at MTU, and the segment size it needs (0: none). */
static size_t datagram_bytes(unsigned mtu, size_t *segment)
{
    size_t payload = mtu > IPV4_UDP_HEADERS ? mtu - IPV4_UDP_HEADERS : 1;
    *segment = 0;
    if (payload >= DATAGRAM_MOST)
        return DATAGRAM_MOST;
    *segment = payload;
    size_t most = payload * SEGMENTS_MOST;
    return most > DATAGRAM_MOST ? DATAGRAM_MOST / payload * payload : most;
}

/* How a message of SIZE bytes goes as datagrams of at most MOST bytes, each spanning at most FRAGS_MOST pages
 * however its fields lie: whole fields, as many as fit (a field of L bytes spans at most (L-1)/PAGE + 2 pages), the
 * last field's remainder (*TAIL) riding with the last datagram; a field too long for one datagram goes in pieces
 * of FRAGS_MOST - 3 pages, which may cross one field boundary.  The size alone decides, so the client counts
 * bytes from datagrams. */
static size_t datagram_piece(uint64_t size, size_t most, size_t *tail)
{
    size_t field = (size_t)(size / FIELD_COUNT), fields = 0;
    *tail = (size_t)(size % FIELD_COUNT);
    if (field > 0)
        fields = FRAGS_MOST / ((field - 1) / PAGE + 2);
    while (fields > 0 && fields * field + *tail > most)
        fields--;
    if (fields > 0)
        return fields * field;
    *tail = 0;
    size_t chunk = (FRAGS_MOST - 3) * PAGE;
    return chunk < most ? chunk : most;
}

static uint64_t datagrams_per_message(uint64_t size, size_t most)
{
    size_t tail, piece = datagram_piece(size, most, &tail), count = 0;
    for (uint64_t left = size; left > 0; count++)
        left -= left <= piece + tail ? left : piece;
    return count;
}

static unsigned device_mtu(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
    struct ifreq request = {0};
    strncpy(request.ifr_name, SINK_DEVICE, IFNAMSIZ - 1);
    if (ioctl(fd, SIOCGIFMTU, &request) != 0)
        die("--path sink: no device %s here (%s): the sink is set up by the testbed", SINK_DEVICE, strerror(errno));
    if (close(fd) != 0)
        die_errno("close");
    return (unsigned)request.ifr_mtu;
}

int sink_socket(uint64_t size)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
    send_buffer_apply(fd);
    int never_fragment = IP_PMTUDISC_DO;
    if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &never_fragment, sizeof never_fragment) != 0)
        die_errno("setsockopt IP_MTU_DISCOVER");
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(SINK_PORT)};
    if (inet_pton(AF_INET, SINK_ADDRESS, &to.sin_addr) != 1)
        die("bad sink address %s", SINK_ADDRESS);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0)
        die("--path sink: cannot reach %s (%s): the sink is set up by the testbed", SINK_ADDRESS, strerror(errno));
    int mtu;
    socklen_t len = sizeof mtu;
    if (getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) != 0)
        die_errno("getsockopt IP_MTU");
    size_t segment, tail, piece = datagram_piece(size, datagram_bytes((unsigned)mtu, &segment), &tail);
    use_datagrams(piece, tail);
    if (piece + tail <= segment)
        segment = 0; /* every datagram fits the MTU whole */
    int gso = (int)segment;
    if (segment && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso, sizeof gso) != 0)
        die("--path sink at MTU %d: the kernel refuses UDP_SEGMENT (%s), and fragments would be copied", mtu,
            strerror(errno));
    segment_bytes = segment;
    return fd;
}

void sink_meter_open(struct sink_meter *m, uint64_t size)
{
    size_t segment, most = datagram_bytes(device_mtu(), &segment);
    *m = (struct sink_meter){.ifindex = (int)if_nametoindex(SINK_DEVICE), .size = size,
                             .per_message = datagrams_per_message(size, most)};
    if (m->ifindex == 0)
        die("--path sink: no device %s here: the sink is set up by the testbed", SINK_DEVICE);
    m->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (m->fd < 0)
        die_errno("socket AF_NETLINK");
    sink_meter_drops(m); /* fails now, outside any window, if the qdisc cannot be read */
}

/* The drops of the root qdisc in one RTM_NEWQDISC message, or -1 when it is another device's or qdisc. */
static int64_t root_drops(const struct nlmsghdr *h, int ifindex)
{
    const struct tcmsg *tc = NLMSG_DATA(h);
    if (tc->tcm_ifindex != ifindex || tc->tcm_parent != TC_H_ROOT)
        return -1;
    int len = (int)RTM_PAYLOAD(h);
    for (const struct rtattr *a = (const struct rtattr *)((const char *)tc + NLMSG_ALIGN(sizeof *tc));
         RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == TCA_STATS && RTA_PAYLOAD(a) >= sizeof(struct tc_stats)) {
            struct tc_stats stats;
            memcpy(&stats, RTA_DATA(a), sizeof stats);
            return stats.drops;
        }
    }
    return -1;
}

uint64_t sink_meter_drops(struct sink_meter *m)
{
    struct {
        struct nlmsghdr h;
        struct tcmsg tc;
    } ask = {.h = {.nlmsg_len = sizeof ask, .nlmsg_type = RTM_GETQDISC, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                   .nlmsg_seq = ++m->seq},
             .tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = m->ifindex}};
    if (send(m->fd, &ask, sizeof ask, 0) != (ssize_t)sizeof ask)
        die_errno("send RTM_GETQDISC");
    int64_t drops = -1;
    static char buffer[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) {
        ssize_t got = recv(m->fd, buffer, sizeof buffer, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            die_errno("recv RTM_GETQDISC");
        int left = (int)got;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != m->seq)
                continue;
            if (h->nlmsg_type == NLMSG_ERROR)
                die("RTM_GETQDISC: %s", strerror(-((struct nlmsgerr *)NLMSG_DATA(h))->error));
            if (h->nlmsg_type == NLMSG_DONE) {
                if (drops < 0)
                    die("--path sink: %s has no root qdisc counting drops", SINK_DEVICE);
                return (uint64_t)drops;
            }
            if (h->nlmsg_type == RTM_NEWQDISC && drops < 0)
                drops = root_drops(h, m->ifindex);
        }
    }
}
