/* The load of the servers experiment: C connections opened at once, each kept
 * busy closed-loop (one request outstanding, the next sent as soon as the whole
 * response is in), driven by a few threads that wait on their connections with
 * epoll, so the client needs far less than a thread per connection.  Every round
 * trip that starts in the measured window is recorded (those still in flight at
 * its end are waited for), and so is how many requests each connection completed
 * in it: the fairness of the server.  --verify checks every response byte, and
 * --idle-connections N opens N more connections that stay silent throughout,
 * which a server holds like the busy ones.  With --rate the connections are
 * driven open-loop instead (load_open.c). */
#include "clock.h"
#include "connection.h"
#include "errors.h"
#include "histogram.h"
#include "json.h"
#include "load.h"
#include "options.h"
#include "perf_control.h"
#include "session.h"
#include "socket_options.h"
#include "transfer.h"
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EVENTS 64
#define POLL_MS 50

static void send_request(struct driver *d, struct connection *c, int phase)
{
    uint64_t request = atomic_load_explicit(&c->completed, memory_order_relaxed);
    c->received = 0;
    c->started_ns = now_ns();
    c->measured = phase == PHASE_MEASURE;
    d->in_window += c->measured;
    /* Eight bytes into an empty send buffer: a blocking send never waits long here. */
    if (send_all(c->fd, &request, sizeof request) != IO_OK && phase != PHASE_STOP)
        die("the server closed a connection during the run");
}

static void *drive(void *arg)
{
    struct driver *d = arg;
    char *scratch = page_alloc_or_die(d->size < 65536 ? d->size : 65536);
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        die("cannot set up a load thread: %s", strerror(errno));
    for (unsigned i = 0; i < d->count; i++) {
        struct connection *c = driven(d, i);
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &event) != 0)
            die_errno("epoll_ctl");
        send_request(d, c, PHASE_WARMUP);
    }
    uint64_t drain_deadline = 0;
    for (;;) {
        int phase = atomic_load_explicit(d->phase, memory_order_relaxed);
        if (phase == PHASE_STOP && d->in_window == 0)
            break;
        if (phase == PHASE_STOP && !drain_deadline)
            drain_deadline = now_ns() + (uint64_t)(DRAIN_S * 1e9);
        if (drain_deadline && now_ns() > drain_deadline)
            die("%u requests sent in the window got no response within %.0f s of its end", d->in_window, DRAIN_S);
        struct epoll_event events[EVENTS];
        int ready = epoll_wait(epoll_fd, events, EVENTS, POLL_MS);
        if (ready < 0 && errno != EINTR)
            die_errno("epoll_wait");
        for (int i = 0; i < ready; i++) {
            struct connection *c = events[i].data.ptr;
            size_t want = d->size - c->received;
            ssize_t got = recv(c->fd, scratch, want < 65536 ? want : 65536, MSG_DONTWAIT);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0)
                die("the server closed a connection during the run");
            if (d->verify)
                verify_response(scratch, (size_t)got, c->received, c);
            c->received += (size_t)got;
            if (c->received < d->size)
                continue;
            if (c->measured) {
                histogram_record(&d->latency, now_ns() - c->started_ns);
                d->in_window--;
            }
            atomic_fetch_add_explicit(&c->completed, 1, memory_order_relaxed);
            int now = atomic_load_explicit(d->phase, memory_order_relaxed);
            if (now != PHASE_STOP) /* after the window, only the round trips begun in it go on */
                send_request(d, c, now);
        }
    }
    free(scratch);
    if (close(epoll_fd) != 0)
        die_errno("close");
    return NULL;
}

static void snapshot(const struct connection *connections, unsigned n, uint64_t *into)
{
    for (unsigned i = 0; i < n; i++)
        into[i] = atomic_load_explicit(&connections[i].completed, memory_order_relaxed);
}

/* One run of the load client: its connections, busy and silent, and the threads that drive the busy ones. */
struct load {
    const struct options *opt;
    unsigned n, idle, threads;
    struct connection *connections;
    int *silent;
    struct driver *drivers; /* [0] holds every driver's histograms and count of unanswered requests once they end */
    _Atomic int phase;
    _Atomic uint64_t window_end;
};

/* The measured window: its bounds, the requests each connection had completed at both, the client's usage. */
struct window {
    uint64_t begin_ns, end_ns;
    uint64_t *before, *after;
    struct usage used;
};

static void connect_all(struct load *l)
{
    const struct options *opt = l->opt;
    l->connections = calloc_or_die(l->n, sizeof *l->connections);
    l->silent = calloc_or_die(l->idle ? l->idle : 1, sizeof *l->silent);
    /* The busy ones first: a server that serves one connection (iterative) serves a busy one. */
    for (unsigned i = 0; i < l->n; i++)
        l->connections[i].fd = connect_within(opt->address, opt->port, opt->timeout_s);
    for (unsigned i = 0; i < l->idle; i++)
        l->silent[i] = connect_within(opt->address, opt->port, opt->timeout_s);
}

static void start_drivers(struct load *l)
{
    const struct options *opt = l->opt;
    l->drivers = calloc_or_die(l->threads, sizeof *l->drivers);
    for (unsigned t = 0; t < l->threads; t++) {
        struct driver *d = &l->drivers[t];
        *d = (struct driver){.connections = &l->connections[t], .stride = l->threads, .size = opt->size,
                             .phase = &l->phase, .window_end_ns = &l->window_end, .verify = opt->verify,
                             .count = (l->n - t + l->threads - 1) / l->threads};
        d->rate = (double)opt->rate * d->count / l->n;
        int err = pthread_create(&d->thread, NULL, opt->rate ? drive_open : drive, d);
        if (err)
            die("pthread_create: %s", strerror(err));
    }
}

/* After the warm-up, marks the window's bounds for the server and the perf counters, and takes its measures. */
static struct window measure_load_window(struct load *l, int control_fd, struct perf_control *perf)
{
    struct window w = {.before = calloc_or_die(l->n, sizeof *w.before), .after = calloc_or_die(l->n, sizeof *w.after)};
    struct usage start, end;
    sleep_seconds(l->opt->warmup_s);
    session_mark(control_fd, CONTROL_BEGIN);
    perf_control_send(perf, "enable");
    usage_now(&start);
    snapshot(l->connections, l->n, w.before);
    w.begin_ns = now_ns();
    atomic_store(&l->phase, PHASE_MEASURE);

    sleep_seconds(l->opt->duration_s);
    w.end_ns = now_ns();
    atomic_store(&l->window_end, w.end_ns);
    atomic_store(&l->phase, PHASE_STOP);
    snapshot(l->connections, l->n, w.after);
    usage_now(&end);
    perf_control_send(perf, "disable");
    session_mark(control_fd, CONTROL_END);
    usage_delta(&start, &end, &w.used);
    return w;
}

/* Waits for the drivers (they end once the round trips begun in the window are answered) and gathers theirs. */
static void join_drivers(struct load *l)
{
    struct driver *all = &l->drivers[0];
    for (unsigned t = 0; t < l->threads; t++) {
        int err = pthread_join(l->drivers[t].thread, NULL);
        if (err)
            die("pthread_join: %s", strerror(err));
        if (t > 0) {
            histogram_merge(&all->latency, &l->drivers[t].latency);
            histogram_merge(&all->lag, &l->drivers[t].lag);
            all->unanswered += l->drivers[t].unanswered;
        }
    }
}

static void close_connections(struct load *l)
{
    /* Reset, so a server blocked on a connection sees the end at once. */
    for (unsigned i = 0; i < l->n + l->idle; i++) {
        int fd = i < l->n ? l->connections[i].fd : l->silent[i - l->n];
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0 || close(fd) != 0)
            die_errno("closing a connection");
    }
}

static void print_load_result(const struct load *l, const struct window *w, const char *congestion)
{
    const struct options *opt = l->opt;
    uint64_t requests = 0, served = 0;
    double squares = 0;
    for (unsigned i = 0; i < l->n; i++) {
        uint64_t done = w->after[i] - w->before[i];
        requests += done;
        served += done > 0;
        squares += (double)done * (double)done;
    }
    double seconds = (double)(w->end_ns - w->begin_ns) / 1e9;
    const struct histogram *latency = &l->drivers[0].latency, *lag = &l->drivers[0].lag;
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "client");
    json_u64(&j, "size", opt->size);
    json_u64(&j, "connections", l->n);
    json_u64(&j, "idle_connections", l->idle);
    json_u64(&j, "offered_rate", opt->rate);
    json_u64(&j, "threads", l->threads);
    json_f64(&j, "measured_s", seconds);
    json_u64(&j, "window_begin_ns", w->begin_ns);
    json_u64(&j, "window_end_ns", w->end_ns);
    json_u64(&j, "pid", (uint64_t)getpid());
    json_u64(&j, "requests", requests);
    json_f64(&j, "requests_per_s", (double)requests / seconds);
    json_u64(&j, "bytes", requests * opt->size);
    json_f64(&j, "throughput_gbps", (double)(requests * opt->size) * 8.0 / seconds / 1e9);
    /* NaN prints as null: no round trip started in the window (a starved run). */
    const bool timed = latency->count > 0;
    json_f64(&j, "latency_mean_us", timed ? (double)latency->sum_ns / (double)latency->count / 1e3 : NAN);
    json_f64(&j, "latency_p50_us", timed ? histogram_percentile_ns(latency, 50) / 1e3 : NAN);
    json_f64(&j, "latency_p99_us", timed ? histogram_percentile_ns(latency, 99) / 1e3 : NAN);
    json_f64(&j, "latency_p999_us", timed ? histogram_percentile_ns(latency, 99.9) / 1e3 : NAN);
    json_f64(&j, "latency_max_us", timed ? (double)latency->max_ns / 1e3 : NAN);
    json_f64(&j, "issue_lag_p99_us", lag->count ? histogram_percentile_ns(lag, 99) / 1e3 : NAN);
    json_u64(&j, "connections_served", served);
    json_str(&j, "congestion_control", congestion);
    json_u64(&j, "socket_buffer", socket_buffer_in_use());
    /* Jain's index over the connections' completed requests: 1 when all got the same, 1/n when one got all. */
    json_f64(&j, "fairness", requests ? (double)requests * (double)requests / ((double)l->n * squares) : NAN);
    json_usage(&j, &w->used);
    json_end(&j);
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_LOAD, argc, argv, &opt);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");
    struct load l = {.opt = &opt, .n = opt.connections, .idle = opt.idle_connections, .threads = opt.threads,
                     .phase = PHASE_WARMUP};
    raise_descriptor_limit((uint64_t)l.n + l.idle + 64, "the client's connections");
    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);

    /* The hello's threads field carries the connections the server is to expect: it holds busy and idle alike. */
    struct hello hello = {
        .magic = HELLO_MAGIC, .size = opt.size, .threads = l.n + l.idle, .mode = MODE_RR,
        .window_s = opt.warmup_s + opt.duration_s,
    };
    int control_fd = session_join(&opt, &hello);
    connect_all(&l);
    session_wait_ready(control_fd);
    start_drivers(&l);
    struct window w = measure_load_window(&l, control_fd, &perf);
    join_drivers(&l);
    char congestion[CONGESTION_NAME_BYTES];
    congestion_control_of(l.connections[0].fd, congestion);
    close_connections(&l);
    if (close(control_fd) != 0)
        die_errno("close");
    perf_control_close(&perf);

    if (opt.rate)
        check_client_kept_up(&opt, (double)(w.end_ns - w.begin_ns) / 1e9, &w.used, &l.drivers[0].lag,
                             &l.drivers[0].latency);
    if (l.drivers[0].unanswered)
        die("%u requests sent in the window got no response within %.0f s of its end", l.drivers[0].unanswered,
            DRAIN_S);
    print_load_result(&l, &w, congestion);
    free(w.before);
    free(w.after);
    free(l.silent);
    free(l.drivers);
    free(l.connections);
    return 0;
}
