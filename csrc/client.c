/* The receiving side: T threads, each with its own connection, receive for
 * warm-up + duration; only the measured window after the warm-up counts. */
#include "clock.h"
#include "connection.h"
#include "errors.h"
#include "histogram.h"
#include "json.h"
#include "message_file.h"
#include "options.h"
#include "perf_control.h"
#include "receive.h"
#include "receiver.h"
#include "sender.h"
#include "session.h"
#include "sink.h"
#include "socket_options.h"
#include "transfer.h"
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct totals {
    uint64_t bytes, mapped, copied, copybuf, calls, datagrams;
};

static struct totals totals_now(struct receiver *receivers, unsigned n, struct sink_meter *sink)
{
    struct totals sum = {0};
    if (sink) { /* the sink's datagrams, counted by its device, are the bytes */
        sum.datagrams = sink_meter_drops(sink);
        sum.bytes = sum.datagrams * sink->size / sink->per_message;
    }
    for (unsigned i = 0; i < n; i++) {
        sum.bytes += atomic_load_explicit(&receivers[i].bytes, memory_order_relaxed);
        sum.mapped += atomic_load_explicit(&receivers[i].mapped, memory_order_relaxed);
        sum.copied += atomic_load_explicit(&receivers[i].copied, memory_order_relaxed);
        sum.copybuf += atomic_load_explicit(&receivers[i].copybuf, memory_order_relaxed);
        sum.calls += atomic_load_explicit(&receivers[i].calls, memory_order_relaxed);
    }
    return sum;
}

/* One run of the client: its receivers, the phase they follow, and (rr) their round trips' latencies. */
struct client {
    const struct options *opt;
    unsigned n;
    _Atomic int phase;
    struct receiver *receivers;
    struct histogram *latency; /* rr: [i + 1] receiver i's, [0] all of them once they ended; otherwise NULL */
    struct sink_meter *sink;   /* --path sink: the sink's counter (no receivers: n is 0) */
};

/* The measured window: when it began and ended, the receivers' totals and the process's usage over it. */
struct window {
    uint64_t begin_ns, end_ns;
    struct totals before, after;
    struct usage used;
};

/* What the first connection says of the transport, read before the connections close. */
struct transport {
    char congestion[CONGESTION_NAME_BYTES];
    uint64_t receive_buffer;
};

static void connect_receivers(struct client *c)
{
    const struct options *opt = c->opt;
    c->receivers = calloc_or_die(c->n, sizeof *c->receivers);
    c->latency = opt->mode == MODE_RR ? calloc_or_die(c->n + 1, sizeof *c->latency) : NULL;
    /* A file-sending server's pattern repeats with its file. */
    uint64_t period = SENDS_FROM_FILE ? message_file_messages(opt->size) : 0;
    for (unsigned i = 0; i < c->n; i++) {
        struct receiver *r = &c->receivers[i];
        r->fd = connect_within(opt->address, opt->port, opt->timeout_s);
        set_io_timeout(r->fd, 10.0);
        receiver_io_open(&r->io, r->fd, opt, period);
        r->opt = opt;
        r->phase = &c->phase;
        r->latency = c->latency ? &c->latency[i + 1] : NULL;
    }
}

static void start_receivers(struct client *c)
{
    for (unsigned i = 0; i < c->n; i++) {
        int err = pthread_create(&c->receivers[i].thread, NULL, receiver_main, &c->receivers[i]);
        if (err)
            die("pthread_create: %s", strerror(err));
    }
}

/* After the warm-up, marks the window's bounds for the server and the perf counters, and takes its measures. */
static struct window measure_window(struct client *c, int control_fd, struct perf_control *perf)
{
    struct window w;
    struct usage before, after;
    sleep_seconds(c->opt->warmup_s);
    session_mark(control_fd, CONTROL_BEGIN);
    perf_control_send(perf, "enable");
    usage_now(&before);
    w.before = totals_now(c->receivers, c->n, c->sink);
    w.begin_ns = now_ns();
    atomic_store(&c->phase, PHASE_MEASURE);

    sleep_seconds(c->opt->duration_s);
    atomic_store(&c->phase, PHASE_STOP);
    w.end_ns = now_ns();
    w.after = totals_now(c->receivers, c->n, c->sink);
    usage_now(&after);
    perf_control_send(perf, "disable");
    session_mark(control_fd, CONTROL_END);
    usage_delta(&before, &after, &w.used);
    return w;
}

/* Ends the receivers and closes their connections; returns the bytes that differed from the pattern. */
static uint64_t close_receivers(struct client *c)
{
    /* Wake blocked receivers, then reset the connections so the server's
     * senders see the end at once instead of filling a dead window. */
    for (unsigned i = 0; i < c->n; i++)
        if (shutdown(c->receivers[i].fd, SHUT_RDWR) != 0 && errno != ENOTCONN)
            die_errno("shutdown");
    uint64_t verify_errors = 0;
    for (unsigned i = 0; i < c->n; i++) {
        struct receiver *r = &c->receivers[i];
        int err = pthread_join(r->thread, NULL);
        if (err)
            die("pthread_join: %s", strerror(err));
        verify_errors += r->io.mismatches;
        receiver_io_close(&r->io);
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        if (setsockopt(r->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0)
            die_errno("setsockopt SO_LINGER");
        if (close(r->fd) != 0)
            die_errno("close");
        if (c->latency)
            histogram_merge(&c->latency[0], &c->latency[i + 1]);
    }
    return verify_errors;
}

static void print_client_result(const struct client *c, const struct window *w, const struct transport *t)
{
    const struct options *opt = c->opt;
    const struct histogram *latency = c->latency;
    double seconds = (double)(w->end_ns - w->begin_ns) / 1e9;
    /* rr counts the round trips that started inside the window, stream the bytes that arrived in it. */
    uint64_t bytes = opt->mode == MODE_RR ? latency[0].count * opt->size : w->after.bytes - w->before.bytes;
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "client");
    json_str(&j, "variant", VARIANT_NAME);
    json_str(&j, "mode", mode_name(opt->mode));
    json_u64(&j, "size", opt->size);
    json_u64(&j, "threads", opt->threads);
    json_str(&j, "receive", receive_mode_name(opt->receive));
    json_f64(&j, "measured_s", seconds);
    json_u64(&j, "window_begin_ns", w->begin_ns);
    json_u64(&j, "window_end_ns", w->end_ns);
    json_u64(&j, "pid", (uint64_t)getpid());
    json_u64(&j, "bytes", bytes);
    json_u64(&j, "messages", bytes / opt->size);
    json_u64(&j, "receive_calls", w->after.calls - w->before.calls);
    json_f64(&j, "throughput_gbps", (double)bytes * 8.0 / seconds / 1e9);
    /* NaN prints as null: stream mode measures no round trips. */
    const bool rr = latency && latency[0].count;
    json_f64(&j, "latency_mean_us", rr ? (double)latency[0].sum_ns / (double)latency[0].count / 1e3 : NAN);
    json_f64(&j, "latency_p50_us", rr ? histogram_percentile_ns(&latency[0], 50) / 1e3 : NAN);
    json_f64(&j, "latency_p99_us", rr ? histogram_percentile_ns(&latency[0], 99) / 1e3 : NAN);
    json_f64(&j, "latency_p999_us", rr ? histogram_percentile_ns(&latency[0], 99.9) / 1e3 : NAN);
    json_f64(&j, "latency_max_us", rr ? (double)latency[0].max_ns / 1e3 : NAN);
    json_str(&j, "congestion_control", t->congestion);
    json_u64(&j, "socket_buffer", socket_buffer_in_use());
    json_u64(&j, "receive_buffer_bytes", t->receive_buffer);
    json_usage(&j, &w->used);
    const bool mapped = opt->receive == RECEIVE_MMAP;
    json_u64_or_null(&j, "rx_mapped_bytes", mapped, w->after.mapped - w->before.mapped);
    json_u64_or_null(&j, "rx_copied_bytes", mapped, w->after.copied - w->before.copied);
    json_u64_or_null(&j, "rx_copybuf_bytes", mapped, w->after.copybuf - w->before.copybuf);
    json_u64_or_null(&j, "sink_datagrams", opt->sink, w->after.datagrams - w->before.datagrams);
    json_end(&j);
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_CLIENT, argc, argv, &opt);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");
    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);

    struct hello hello = {
        .magic = HELLO_MAGIC, .size = opt.size, .threads = opt.threads, .mode = opt.mode,
        .verify = opt.verify, .window_s = opt.warmup_s + opt.duration_s,
    };
    int control_fd = session_join(&opt, &hello);
    struct sink_meter sink;
    if (opt.sink)
        sink_meter_open(&sink, opt.size);
    struct client c = {.opt = &opt, .n = opt.sink ? 0 : opt.threads, .phase = PHASE_WARMUP,
                       .sink = opt.sink ? &sink : NULL};
    connect_receivers(&c);
    /* The server may first write its message file: a few seconds at most. */
    session_wait_ready(control_fd);
    start_receivers(&c);
    struct window w = measure_window(&c, control_fd, &perf);

    struct transport t; /* the sink's client receives nothing: its control connection's */
    int first = opt.sink ? control_fd : c.receivers[0].fd;
    congestion_control_of(first, t.congestion);
    t.receive_buffer = socket_buffers_of(first).receive;
    uint64_t verify_errors = close_receivers(&c);
    if (close(control_fd) != 0)
        die_errno("close");
    perf_control_close(&perf);
    if (verify_errors)
        die("verification failed: %llu bytes differ from the pattern", (unsigned long long)verify_errors);
    print_client_result(&c, &w, &t);
    free(c.latency);
    free(c.receivers);
    return 0;
}
