/* Shared core of the copylab sender (server) and receiver (client).
 *
 * The variants differ only in how the bytes of a message leave user space
 * (one send_VARIANT.c each); everything else (sockets, threads, timing,
 * options, JSON, the receiver's ways of taking the bytes in) lives in the
 * core so that the variants are measured under identical conditions.  Each
 * section below names the file that implements it.
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
#include <time.h>

/* MIN_SIZE, MAX_SIZE, MAX_THREADS, MAX_CONNECTIONS, MAX_DURATION, MAX_WARMUP: the sweep's own limits;
 * FIELD_COUNT, SELECT_MAX_CONNECTIONS: constants the Python side uses too (copylab/declarations/limits.py). */
#include "limits.h"
/* json_begin() .. json_end(): the one JSON object a program prints (json.c). */
#include "json.h"

#define REQUEST_SIZE 8
#define HELLO_MAGIC 0x636f70796c616231ULL /* "copylab1" */
#define CACHELINE 64

/* Exit codes: bad usage vs a failure while running. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

enum mode { MODE_STREAM, MODE_RR };
/* How the client takes the bytes in: recv() into its buffer, recv(MSG_TRUNC)
 * (the kernel discards them, no copy to user space), or TCP_ZEROCOPY_RECEIVE
 * (whole payload pages mapped into user space, the rest copied). */
enum receive_mode { RECEIVE_COPY, RECEIVE_TRUNCATE, RECEIVE_MMAP };

/* ---- errors: one line on stderr, then exit (errors.c) ---- */
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_errno(const char *what);
/* When the first argument is --help or -h: USAGE on stdout and exit 0 (the programs without an options table). */
void help_if_asked(int argc, char **argv, const char *usage);
/* Zeroed memory for COUNT objects of SIZE bytes on a cache line's boundary, or die saying memory ran out. */
void *calloc_or_die(size_t count, size_t size);
/* Whole pages for a receive buffer, or die saying memory ran out: the kernel's copy into a buffer that starts a
 * few bytes past a page boundary can take a slow path (copylab calibrate's placement finding). */
void *page_alloc_or_die(size_t size);

/* ---- time (clock.c) ---- */
uint64_t now_ns(void);
/* CLOCK's reading in nanoseconds (the calibration programs read the monotonic and the thread's CPU clock). */
double clock_ns(clockid_t clock);
void sleep_seconds(double seconds);

/* ---- options (options.c) ---- */
/* How a sender holds the message in memory (--layout). */
enum layout { LAYOUT_FIELDS, LAYOUT_ALIGNED, LAYOUT_CONTIGUOUS };

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

/* ---- the message: FIELD_COUNT fields (message.c) ---- */
struct message {
    char *field[FIELD_COUNT];
    size_t len[FIELD_COUNT];
    size_t size;
    char *block; /* LAYOUT_CONTIGUOUS: the one buffer the fields lie in, back to back; otherwise NULL */
};
/* LAYOUT_FIELDS: each field its own allocation, as the study prescribes; LAYOUT_ALIGNED: each its own
 * allocation starting on a page boundary; LAYOUT_CONTIGUOUS: the fields back to back in one page-aligned buffer. */
void message_alloc(struct message *msg, size_t size, enum layout layout);
void message_free(struct message *msg);
/* COUNT messages of SIZE bytes held as LAYOUT says: a sender cycles through them (--distinct-messages), so with
 * many its source is cold in the caches, as a server's data would be; with one, hot. */
struct message *messages_alloc(size_t count, size_t size, enum layout layout);
void messages_free(struct message *messages, size_t count);
/* Writes the verification pattern of message number seq into the fields. */
void message_fill(struct message *msg, uint64_t seq);
/* The byte the receiver expects at offset within message number seq. */
static inline uint8_t pattern_byte(uint64_t seq, uint64_t offset)
{
    return (uint8_t)(offset * 131u + (offset >> 8) * 7u + seq * 29u + (seq >> 8));
}
/* The message as an iovec: one entry per field, or one for a contiguous message; returns the entries used. */
int message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT]);
/* Copies the fields, in order, into one contiguous buffer of msg->size bytes. */
void message_pack(const struct message *msg, void *into);

/* ---- the message file of file-sending variants: messages 0..N-1 back to back (message_file.c) ---- */
#define MESSAGE_FILE_MIN_BYTES (256ULL << 20)
/* N: enough messages for 256 MiB and at least 8, so a window never wraps cheaply. */
uint64_t message_file_messages(uint64_t size);
/* Creates the file with the pattern unless it already holds N messages of size bytes,
 * then reads it once, so that its pages are in memory before any window. */
void message_file_prepare(const char *path, uint64_t size);
/* Opens a prepared message file for reading; dies naming it when it cannot. */
int message_file_open(const char *path);
/* The stream position where message seq starts in the file: messages repeat every N. */
static inline uint64_t message_file_offset(uint64_t seq, uint64_t size)
{
    return (seq % message_file_messages(size)) * size;
}

/* ---- socket I/O that survives EINTR and short transfers (transfer.c) ---- */
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

/* ---- connections: set up within a bound (connection.c) ---- */
int listen_on(const char *address, uint16_t port, unsigned backlog);
/* Raises the soft RLIMIT_NOFILE to needed; one line naming WHY when the hard limit is lower. */
void raise_descriptor_limit(uint64_t needed, const char *why);
int accept_within(int listen_fd, double timeout_s);
int connect_within(const char *address, uint16_t port, double timeout_s);
/* Waits until fd is ready for events; dies with "WHAT timed out after N s" otherwise. */
void wait_fd(int fd, short events, double timeout_s, const char *what);

/* ---- what is set on a TCP socket and read back from it (socket_options.c) ---- */
/* Every TCP socket made from now on uses congestion control NAME (NULL: the kernel's default). */
void use_congestion_control(const char *name);
/* Every TCP socket made from now on gets send and receive buffers of BYTES, which the kernel doubles for its
 * bookkeeping and then no longer sizes itself (0, the default: the kernel sizes them as the connection goes). */
void use_socket_buffer(uint64_t bytes);
/* What every socket made got (each checked to be held doubled), as use_socket_buffer() was told. */
uint64_t socket_buffer_in_use(void);
/* A new socket, before listen() or connect(): TCP_NODELAY, and what use_congestion_control() and
 * use_socket_buffer() chose (dies when the kernel will not give it). */
void socket_options_apply(int fd);
/* A datagram socket: only its send buffer, as use_socket_buffer() chose. */
void send_buffer_apply(int fd);
void set_io_timeout(int fd, double seconds);
/* A stream's data connection sends as a bulk sender does (iperf3, neper): with Nagle's algorithm, so that a
 * message's tail waits for the next message while data is unacknowledged instead of leaving as a short
 * packet; every other connection is made with TCP_NODELAY. */
void stream_data(int fd);
/* The congestion control a socket uses, as the kernel names it (TCP_CA_NAME_MAX bytes with the NUL). */
#define CONGESTION_NAME_BYTES 16
void congestion_control_of(int fd, char name[CONGESTION_NAME_BYTES]);
/* A socket's send and receive buffers as the kernel holds them now. */
struct socket_buffers {
    uint64_t send, receive;
};
struct socket_buffers socket_buffers_of(int fd);
/* What TCP_INFO says about a connection: its retransmits so far and its smoothed round-trip time (us). */
struct tcp_report {
    uint64_t retransmits;
    uint32_t srtt_us;
};
struct tcp_report tcp_report(int fd);

/* ---- the sink path, --path sink (sink.c) ---- */
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

/* ---- the window's CPU time and context switches (usage.c) ---- */
struct usage {
    double user_s, sys_s;
    long voluntary, involuntary;
};
void usage_now(struct usage *out);
void usage_delta(const struct usage *a, const struct usage *b, struct usage *out);
/* The window's usage as the keys every program's result carries, in the order of _USAGE in
 * copylab/declarations/contract.py. */
void json_usage(struct json *j, const struct usage *used);

/* ---- perf stat --control fifo: enable/disable the counters around the window (perf_control.c) ---- */
struct perf_control {
    int ctl_fd, ack_fd;
};
void perf_control_open(struct perf_control *pc, const char *ctl, const char *ack);
void perf_control_send(struct perf_control *pc, const char *command);
void perf_control_close(struct perf_control *pc);

/* ---- the session between client and server: its protocol and both halves (session.c) ---- */
struct hello {
    uint64_t magic;
    uint64_t size;
    uint32_t threads;
    uint32_t mode;
    uint32_t verify;
    uint32_t reserved;
    double window_s; /* warm-up + duration: bounds how long the server waits */
};
/* Client to server: the window begins, ends.  Server to client: every worker is serving, so the
 * client's warm-up starts only when the server is ready (whatever its set-up cost, e.g. a message file). */
enum control { CONTROL_BEGIN = 'B', CONTROL_END = 'E', CONTROL_READY = 'R' };

/* Server: accepts the control connection and reads its hello (dies on anything else). */
int session_open(int listen_fd, double timeout_s, struct hello *hello);
/* Server: tells the client every connection is being served; its warm-up may start. */
void session_ready(int control_fd);
/* Server: follows the client's window marks until it closes the session; returns the window's usage.
 * EDGE, when given, runs at each mark inside the window's bounds. */
struct usage session_window(int control_fd, const struct hello *hello, struct perf_control *perf,
                            void (*edge)(enum control));
/* Client: connects the control connection and sends the hello. */
int session_join(const struct options *opt, const struct hello *hello);
/* Client: waits, bounded, for the server's ready. */
void session_wait_ready(int control_fd);
/* Client: marks the window's beginning or end. */
void session_mark(int control_fd, enum control control);

/* ---- log-linear latency histogram (relative error < 1%), one per thread (histogram.c) ---- */
#define HIST_SUB_BITS 7
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)
struct histogram {
    uint64_t count, sum_ns, max_ns;
    uint64_t bucket[HIST_BUCKETS];
};
void histogram_record(struct histogram *h, uint64_t ns);
void histogram_merge(struct histogram *into, const struct histogram *from);
double histogram_percentile_ns(const struct histogram *h, double percentile);

/* ---- the variant's sending path (send_VARIANT.c, one per binary) ---- */
struct sender_counters {
    bool zero_copy;
    uint64_t zc_sends, zc_completed, zc_copied, zc_notifications, zc_enobufs;
    uint64_t zc_messages, zc_page_pins; /* messages handed to MSG_ZEROCOPY, and the pages their entries span */
};
struct sender;
struct sender_config {
    int fd;
    size_t size;
    bool verify;      /* write the pattern into every message before sending it */
    const char *file; /* the prepared message file (file-sending variants) */
    enum layout layout;
    size_t zc_inflight; /* zero-copy senders: bytes of messages kept in flight */
    size_t distinct;    /* messages cycled through (zero-copy senders: at least their ring's) */
};
extern const char *const VARIANT_NAME;
/* True: the variant always sends its message from one buffer, whatever --layout says (server.c's default:
 * false); the server then reports the layout as contiguous. */
extern const bool VARIANT_ONE_BUFFER;
/* True: the variant sends the message file, whose pattern repeats every
 * message_file_messages(size) messages; the client verifies accordingly. */
extern const bool SENDS_FROM_FILE;
/* NULL when this sending path can run on this kernel; otherwise why not, in
 * one line.  The server's default says yes; variants that need more override it. */
const char *sender_unavailable(void);
struct sender *sender_create(const struct sender_config *config);
/* Sends message number seq completely. */
enum io_status sender_send(struct sender *s, uint64_t seq);
/* Waits (bounded) for outstanding work, adds its counters, frees s. */
void sender_destroy(struct sender *s, struct sender_counters *counters);

/* ---- the client's side of the stream, in any receive mode (receive.c) ---- */
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
