/* The sink path, --path sink (sink.c). */
#ifndef COPYLAB_SINK_H
#define COPYLAB_SINK_H

#include <stdint.h>

/* Server: a UDP socket connected to SINK_ADDRESS through SINK_DEVICE that never fragments (IP_PMTUDISC_DO); its
 * datagrams are at most what the MTU carries, or UDP_SEGMENT segments of it; sets use_datagrams(). */
int sink_socket(uint64_t size);
/* The UDP_SEGMENT size sink_socket() chose, 0 for none. */
uint64_t sink_segment_bytes(void);
/* Client: the sink device's count of datagrams its root qdisc dropped, through rtnetlink. */
struct sink_meter {
    int fd, ifindex;
    uint32_t seq;
    uint64_t size, per_message; /* the trial's message size, and the datagrams a message leaves as */
};
void sink_meter_open(struct sink_meter *m, uint64_t size);
uint64_t sink_meter_drops(struct sink_meter *m);

#endif
