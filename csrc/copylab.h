/* Shared core of the copylab sender (server) and receiver (client).
 *
 * The three variants differ only in how one message of FIELD_COUNT
 * separately heap-allocated fields leaves user space; everything else
 * (sockets, threads, timing, options, JSON) lives in the core so that the
 * variants are measured under identical conditions.
 */
#ifndef COPYLAB_H
#define COPYLAB_H

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define FIELD_COUNT 8
#define MIN_SIZE 8ULL
#define MAX_SIZE (64ULL << 20)
#define MAX_THREADS 64
#define REQUEST_SIZE 8
#define HELLO_MAGIC 0x636f70796c616231ULL /* "copylab1" */
#define CACHELINE 64

/* Exit codes: bad usage vs a failure while running. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

enum mode { MODE_STREAM, MODE_RR };

/* ---- errors: one line on stderr, then exit ---- */
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_errno(const char *what);

/* ---- time ---- */
double now_seconds(void);
uint64_t now_ns(void);

/* ---- options ---- */
struct options {
    const char *address;
    uint16_t port;
    uint64_t size;
    unsigned threads;
    double duration_s;
    double warmup_s;
    double timeout_s; /* server: how long to wait for a client; client: connect */
    enum mode mode;
    bool verify;
    const char *perf_ctl;
    const char *perf_ack;
};
enum role { ROLE_SERVER, ROLE_CLIENT };
void parse_options(enum role role, int argc, char **argv, struct options *out);
const char *mode_name(enum mode mode);

/* ---- the message: FIELD_COUNT separately allocated fields ---- */
struct message {
    char *field[FIELD_COUNT];
    size_t len[FIELD_COUNT];
    size_t size;
};
void message_alloc(struct message *msg, size_t size);
void message_free(struct message *msg);
/* Writes the verification pattern of message number seq into the fields. */
void message_fill(struct message *msg, uint64_t seq);
/* The byte the receiver expects at offset within message number seq. */
static inline uint8_t pattern_byte(uint64_t seq, uint64_t offset)
{
    return (uint8_t)(offset * 131u + (offset >> 8) * 7u + seq * 29u + (seq >> 8));
}
void message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT]);

/* ---- socket I/O that survives EINTR and short transfers ---- */
enum io_status { IO_OK = 0, IO_PEER_CLOSED = 1 };
/* Retries after ENOBUFS call on_enobufs (NULL: ENOBUFS is an error).
 * *calls counts successful sendmsg calls (zero-copy notification ids). */
enum io_status sendmsg_all(int fd, struct iovec *iov, int iovcnt, int flags,
                           void (*on_enobufs)(void *ctx), void *ctx, uint64_t *calls);
enum io_status send_all(int fd, const void *buf, size_t len);
enum io_status recv_exact(int fd, void *buf, size_t len);
int listen_on(const char *address, uint16_t port);
int accept_within(int listen_fd, double timeout_s);
int connect_within(const char *address, uint16_t port, double timeout_s);
void set_io_timeout(int fd, double seconds);
uint64_t tcp_retransmits(int fd);

/* ---- the session protocol between client and server ---- */
struct hello {
    uint64_t magic;
    uint64_t size;
    uint32_t threads;
    uint32_t mode;
    uint32_t verify;
    uint32_t reserved;
    double window_s; /* warm-up + duration: bounds how long the server waits */
};
enum control { CONTROL_BEGIN = 'B', CONTROL_END = 'E' };

/* ---- measurement window helpers ---- */
struct usage {
    double user_s, sys_s;
    long voluntary, involuntary;
};
void usage_now(struct usage *out);
void usage_delta(const struct usage *a, const struct usage *b, struct usage *out);

/* perf stat --control fifo: enable/disable the counters around the window. */
struct perf_control {
    int ctl_fd, ack_fd;
};
void perf_control_open(struct perf_control *pc, const char *ctl, const char *ack);
void perf_control_send(struct perf_control *pc, const char *command);
void perf_control_close(struct perf_control *pc);

/* Log-linear latency histogram (relative error < 1%), one per thread. */
#define HIST_SUB_BITS 7
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)
struct histogram {
    uint64_t count, sum_ns, max_ns;
    uint64_t bucket[HIST_BUCKETS];
};
void histogram_record(struct histogram *h, uint64_t ns);
void histogram_merge(struct histogram *into, const struct histogram *from);
double histogram_percentile_ns(const struct histogram *h, double percentile);

/* ---- JSON output: exactly one object on stdout; copylab/contract.py declares every key ---- */
struct json {
    bool first;
};
void json_begin(struct json *j);
void json_str(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_f64(struct json *j, const char *key, double value);
void json_null(struct json *j, const char *key);
void json_u64_or_null(struct json *j, const char *key, bool present, uint64_t value);
void json_end(struct json *j);

/* ---- the variant's sending path (one per binary) ---- */
struct sender_counters {
    bool zero_copy;
    uint64_t zc_sends, zc_completed, zc_copied, zc_notifications, zc_enobufs;
};
struct sender;
extern const char *const VARIANT_NAME;
struct sender *sender_create(int fd, size_t size, bool verify);
/* Sends message number seq completely. */
enum io_status sender_send(struct sender *s, uint64_t seq);
/* Waits (bounded) for outstanding work, adds its counters, frees s. */
void sender_destroy(struct sender *s, struct sender_counters *counters);

#endif
