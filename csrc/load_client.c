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
#include "load.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EVENTS 64
#define POLL_MS 50
/* Under open load, a client whose p99 lateness in sending is this share of the round trips' p99 or more
 * measured its own delay, not the server's (stalled or starved of its CPU).  Over veth a model also makes
 * kernel work on the client's CPU: lateness from that (up to about 0.65 of the tail measured here with
 * select and poll) is the model's, and stays below it. */
#define LAG_SHARE 0.8
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

void verify_response(const char *bytes, size_t count, size_t offset, const struct connection *c)
{
    for (size_t i = 0; i < count; i++)
        if ((uint8_t)bytes[i] != pattern_byte(0, offset + i))
            die("response byte %zu on descriptor %d is 0x%02x, not the pattern's 0x%02x", offset + i, c->fd,
                (uint8_t)bytes[i], pattern_byte(0, offset + i));
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

/* Under open load the rate is the server's to meet only if the client kept up: it had CPU to spare on the
 * CPUs it may run on, and its own lateness in sending (LAG) is not a large share of the tail it measured
 * (LATENCY), as when it was stalled or starved.  Otherwise the run ends here, saying whose limit it was. */
static void check_client_kept_up(const struct options *opt, double seconds, const struct usage *used,
                                 const struct histogram *lag, const struct histogram *latency)
{
    double lag_us = histogram_percentile_ns(lag, 99) / 1e3, tail_us = histogram_percentile_ns(latency, 99) / 1e3;
    if (lag->count && latency->count && lag_us >= LAG_SHARE * tail_us)
        die("the load client sent its requests late (99th percentile %.0f us, against a round-trip p99 of %.0f us): "
            "at %llu requests/s most of the tail would be its own, a limit of the client, not of the server",
            lag_us, tail_us, (unsigned long long)opt->rate);
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        die_errno("sched_getaffinity");
    unsigned cpus = (unsigned)CPU_COUNT(&allowed), usable = cpus < opt->threads ? cpus : opt->threads;
    double busy = (used->user_s + used->sys_s) / seconds;
    if (busy >= SATURATED * usable)
        die("the load client was on its CPU%s %.0f%% of the window: it cannot offer %llu requests/s here without "
            "its own wait entering the latency, a limit of the client, not of the server",
            usable > 1 ? "s" : "", 100.0 * busy / usable, (unsigned long long)opt->rate);
}

static void snapshot(const struct connection *connections, unsigned n, uint64_t *into)
{
    for (unsigned i = 0; i < n; i++)
        into[i] = atomic_load_explicit(&connections[i].completed, memory_order_relaxed);
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_LOAD, argc, argv, &opt);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");
    unsigned n = opt.connections, idle = opt.idle_connections, threads = opt.threads;
    raise_descriptor_limit((uint64_t)n + idle + 64, "the client's connections");
    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);

    /* The hello's threads field carries the connections the server is to expect: it holds busy and idle alike. */
    struct hello hello = {
        .magic = HELLO_MAGIC, .size = opt.size, .threads = n + idle, .mode = MODE_RR,
        .window_s = opt.warmup_s + opt.duration_s,
    };
    int control_fd = session_join(&opt, &hello);
    struct connection *connections = calloc(n, sizeof *connections);
    struct driver *drivers = calloc(threads, sizeof *drivers);
    uint64_t *before = calloc(n, sizeof *before), *after = calloc(n, sizeof *after);
    if (!connections || !drivers || !before || !after)
        die("out of memory");
    int *silent = calloc(idle ? idle : 1, sizeof *silent);
    if (!silent)
        die("out of memory");
    /* The busy ones first: a server that serves one connection (iterative) serves a busy one. */
    for (unsigned i = 0; i < n; i++)
        connections[i].fd = connect_within(opt.address, opt.port, opt.timeout_s);
    for (unsigned i = 0; i < idle; i++)
        silent[i] = connect_within(opt.address, opt.port, opt.timeout_s);
    session_wait_ready(control_fd);

    _Atomic int phase = PHASE_WARMUP;
    _Atomic uint64_t window_end = 0;
    for (unsigned t = 0; t < threads; t++) {
        struct driver *d = &drivers[t];
        *d = (struct driver){.connections = &connections[t], .stride = threads, .size = opt.size, .phase = &phase,
                             .window_end_ns = &window_end,
                             .verify = opt.verify, .count = (n - t + threads - 1) / threads};
        d->rate = (double)opt.rate * d->count / n;
        int err = pthread_create(&d->thread, NULL, opt.rate ? drive_open : drive, d);
        if (err)
            die("pthread_create: %s", strerror(err));
    }

    sleep_seconds(opt.warmup_s);
    session_mark(control_fd, CONTROL_BEGIN);
    perf_control_send(&perf, "enable");
    struct usage start, end, used;
    usage_now(&start);
    snapshot(connections, n, before);
    uint64_t begin_ns = now_ns();
    atomic_store(&phase, PHASE_MEASURE);

    sleep_seconds(opt.duration_s);
    uint64_t end_ns = now_ns();
    atomic_store(&window_end, end_ns);
    atomic_store(&phase, PHASE_STOP);
    snapshot(connections, n, after);
    usage_now(&end);
    perf_control_send(&perf, "disable");
    session_mark(control_fd, CONTROL_END);

    for (unsigned t = 0; t < threads; t++) {
        int err = pthread_join(drivers[t].thread, NULL);
        if (err)
            die("pthread_join: %s", strerror(err));
        if (t > 0) {
            histogram_merge(&drivers[0].latency, &drivers[t].latency);
            histogram_merge(&drivers[0].lag, &drivers[t].lag);
            drivers[0].unanswered += drivers[t].unanswered;
        }
    }
    char congestion[CONGESTION_NAME_BYTES];
    congestion_control_of(connections[0].fd, congestion);
    /* Reset, so a server blocked on a connection sees the end at once. */
    for (unsigned i = 0; i < n + idle; i++) {
        int fd = i < n ? connections[i].fd : silent[i - n];
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0 || close(fd) != 0)
            die_errno("closing a connection");
    }
    free(silent);
    if (close(control_fd) != 0)
        die_errno("close");
    perf_control_close(&perf);

    uint64_t requests = 0, served = 0;
    double squares = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t done = after[i] - before[i];
        requests += done;
        served += done > 0;
        squares += (double)done * (double)done;
    }
    usage_delta(&start, &end, &used);
    double seconds = (double)(end_ns - begin_ns) / 1e9;
    if (opt.rate)
        check_client_kept_up(&opt, seconds, &used, &drivers[0].lag, &drivers[0].latency);
    if (drivers[0].unanswered)
        die("%u requests sent in the window got no response within %.0f s of its end", drivers[0].unanswered,
            DRAIN_S);
    const struct histogram *latency = &drivers[0].latency;
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "client");
    json_u64(&j, "size", opt.size);
    json_u64(&j, "connections", n);
    json_u64(&j, "idle_connections", idle);
    json_u64(&j, "offered_rate", opt.rate);
    json_u64(&j, "threads", threads);
    json_f64(&j, "measured_s", seconds);
    json_u64(&j, "window_begin_ns", begin_ns);
    json_u64(&j, "window_end_ns", end_ns);
    json_u64(&j, "pid", (uint64_t)getpid());
    json_u64(&j, "requests", requests);
    json_f64(&j, "requests_per_s", (double)requests / seconds);
    json_u64(&j, "bytes", requests * opt.size);
    json_f64(&j, "throughput_gbps", (double)(requests * opt.size) * 8.0 / seconds / 1e9);
    /* NaN prints as null: no round trip started in the window (a starved run). */
    const bool timed = latency->count > 0;
    json_f64(&j, "latency_mean_us", timed ? (double)latency->sum_ns / (double)latency->count / 1e3 : NAN);
    json_f64(&j, "latency_p50_us", timed ? histogram_percentile_ns(latency, 50) / 1e3 : NAN);
    json_f64(&j, "latency_p99_us", timed ? histogram_percentile_ns(latency, 99) / 1e3 : NAN);
    json_f64(&j, "latency_p999_us", timed ? histogram_percentile_ns(latency, 99.9) / 1e3 : NAN);
    json_f64(&j, "latency_max_us", timed ? (double)latency->max_ns / 1e3 : NAN);
    const struct histogram *lag = &drivers[0].lag;
    json_f64(&j, "issue_lag_p99_us", lag->count ? histogram_percentile_ns(lag, 99) / 1e3 : NAN);
    json_u64(&j, "connections_served", served);
    json_str(&j, "congestion_control", congestion);
    json_u64(&j, "socket_buffer", socket_buffer_in_use());
    /* Jain's index over the connections' completed requests: 1 when all got the same, 1/n when one got all. */
    json_f64(&j, "fairness", requests ? (double)requests * (double)requests / ((double)n * squares) : NAN);
    json_usage(&j, &used);
    json_end(&j);
    free(before);
    free(after);
    free(drivers);
    free(connections);
    return 0;
}
