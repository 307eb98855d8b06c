/* A program's command line (options.c), its numbers read strictly (parse_number.c). */
#ifndef COPYLAB_OPTIONS_H
#define COPYLAB_OPTIONS_H

#include "message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mode { MODE_STREAM, MODE_RR };
/* How the client takes the bytes in: recv() into its buffer, recv(MSG_TRUNC)
 * (the kernel discards them, no copy to user space), or TCP_ZEROCOPY_RECEIVE
 * (whole payload pages mapped into user space, the rest copied). */
enum receive_mode { RECEIVE_COPY, RECEIVE_TRUNCATE, RECEIVE_MMAP };

struct options {
    const char *address;
    uint16_t port;
    uint64_t size;
    unsigned threads;
    unsigned connections;      /* load client: connections kept busy, spread over the threads */
    unsigned idle_connections; /* load client: connections opened besides, silent for the whole run */
    uint64_t rate;             /* load client: requests per second offered on a schedule; 0: closed loop */
    double duration_s;
    double warmup_s;
    double timeout_s; /* server: how long to wait for a client; client: connect */
    enum mode mode;
    enum receive_mode receive; /* client */
    bool verify;
    const char *file;          /* server of a file-sending variant: the message file */
    bool probe;                /* server: only say whether this sending path can run here */
    enum layout layout;        /* server: how the message is held in memory */
    size_t zc_inflight;        /* server: bytes a zero-copy sender keeps in flight */
    bool sink;                 /* --path sink: the server sends datagrams to the sink, the client counts them */
    size_t distinct;           /* server: distinct messages a sender cycles through (--distinct-messages) */
    const char *perf_ctl;
    const char *perf_ack;
};
enum role { ROLE_SERVER, ROLE_CLIENT, ROLE_LOAD };
void parse_options(enum role role, int argc, char **argv, struct options *out);
/* --OPTION's TEXT as a whole number (K, M, G suffixes) or seconds within [LOW, HIGH] (parse_number.c). */
uint64_t parse_count(const char *option, const char *text, uint64_t low, uint64_t high);
double parse_seconds(const char *option, const char *text, double low, double high, bool allow_zero);
const char *mode_name(enum mode mode);
const char *receive_mode_name(enum receive_mode mode);
const char *layout_name(enum layout layout);

#endif
