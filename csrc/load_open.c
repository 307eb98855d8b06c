/* Open load (--rate): each driver thread sends its share of the rate on a
 * fixed schedule, round robin over its connections, whether or not earlier
 * requests were answered, as wrk2 offers load.  A round trip is timed from
 * when its request was due, not from when it left, so a server that falls
 * behind is charged the wait its backlog causes (coordinated omission
 * corrected).  A socket that takes no more requests holds back only its own
 * connection, and how late the client itself issued each request is recorded:
 * its own lateness is never silently counted as the server's. */
#include "clock.h"
#include "errors.h"
#include "histogram.h"
#include "limits.h"
#include "load.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EVENTS 64
#define POLL_NS 50000000ULL
/* A connection holds at most this many seconds of its share of the rate outstanding, and never fewer than
 * OUTSTANDING_MIN requests: a server further behind serves far less than it is offered. */
#define OUTSTANDING_S 2.0
#define OUTSTANDING_MIN 64u
/* Requests carry nothing the server reads: they leave from this much zeroed memory at a time. */
#define SEND_BATCH 4096u
/* Under open load, a client whose p99 lateness in sending is this share of the round trips' p99 or more
 * measured its own delay, not the server's (stalled or starved of its CPU).  Over veth a model also makes
 * kernel work on the client's CPU: lateness from that (up to about 0.65 of the tail measured here with
 * select and poll) is the model's, and stays below it. */
#define LAG_SHARE 0.8

static void watch_connection(int epoll_fd, struct connection *c, bool writable)
{
    struct epoll_event event = {.events = EPOLLIN | (writable ? EPOLLOUT : 0u), .data.ptr = c};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &event) != 0)
        die_errno("epoll_ctl");
    c->writing = writable;
}

/* Sends the requests issued and not yet sent, as far as the socket takes them. */
static void send_unsent(int epoll_fd, struct connection *c)
{
    static const char zeros[SEND_BATCH];
    while (c->unsent) {
        ssize_t sent = send(c->fd, zeros, c->unsent < sizeof zeros ? c->unsent : sizeof zeros, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->writing)
                watch_connection(epoll_fd, c, true);
            return;
        }
        if (sent < 0 && (errno == EPIPE || errno == ECONNRESET))
            die("the server closed a connection during the run");
        if (sent < 0)
            die_errno("send");
        c->unsent -= (size_t)sent;
    }
    if (c->writing)
        watch_connection(epoll_fd, c, false);
}

static void issue(struct driver *d, int epoll_fd, struct connection *c, uint64_t due_ns, bool measured)
{
    if (c->waiting == c->capacity)
        die("the server fell %u requests behind on one connection (%.0f s of its share of the offered rate): "
            "it serves far less than it is offered",
            c->capacity, OUTSTANDING_S);
    c->outstanding[(c->first + c->waiting++) % c->capacity] = (struct scheduled){due_ns, measured};
    d->in_window += measured;
    c->unsent += REQUEST_SIZE;
    if (!c->writing)
        send_unsent(epoll_fd, c);
}

/* COUNT response bytes arrived on C: every response completed answers its connection's oldest request. */
static void take_responses(struct driver *d, struct connection *c, const char *bytes, size_t count)
{
    while (count) {
        if (!c->waiting)
            die("a response arrived on descriptor %d with no request outstanding", c->fd);
        size_t part = d->size - c->received < count ? d->size - c->received : count;
        if (d->verify)
            verify_response(bytes, part, c->received, c);
        c->received += part;
        bytes += part;
        count -= part;
        if (c->received < d->size)
            continue;
        c->received = 0;
        struct scheduled done = c->outstanding[c->first];
        c->first = (c->first + 1) % c->capacity;
        c->waiting--;
        if (done.measured) {
            histogram_record(&d->latency, now_ns() - done.at_ns);
            d->in_window--;
        }
        atomic_fetch_add_explicit(&c->completed, 1, memory_order_relaxed);
    }
}

static void receive(struct driver *d, struct connection *c, char *scratch, size_t room)
{
    for (;;) {
        ssize_t got = recv(c->fd, scratch, room, MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (got <= 0)
            die("the server closed a connection during the run");
        take_responses(d, c, scratch, (size_t)got);
        if ((size_t)got < room)
            return;
    }
}

static int open_connections(struct driver *d)
{
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        die("cannot set up a load thread: %s", strerror(errno));
    double share = d->rate / d->count * OUTSTANDING_S;
    unsigned capacity = share > OUTSTANDING_MIN ? (unsigned)ceil(share) : OUTSTANDING_MIN;
    for (unsigned i = 0; i < d->count; i++) {
        struct connection *c = driven(d, i);
        int flags = fcntl(c->fd, F_GETFL);
        if (flags < 0 || fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) != 0)
            die_errno("fcntl O_NONBLOCK");
        c->outstanding = calloc(capacity, sizeof *c->outstanding);
        if (!c->outstanding)
            die("out of memory");
        c->capacity = capacity;
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &event) != 0)
            die_errno("epoll_ctl");
    }
    return epoll_fd;
}

/* Where a thread is on its schedule: request k is due at start + k x interval. */
struct schedule {
    double interval_ns;
    uint64_t start, issued;
    unsigned next; /* the connection the next request goes on */
};

/* Sends every request due by UNTIL; returns when the next one is due. */
static uint64_t issue_due(struct driver *d, int epoll_fd, struct schedule *s, int phase, uint64_t until)
{
    uint64_t now = now_ns();
    for (;;) {
        uint64_t due_ns = s->start + (uint64_t)((double)s->issued * s->interval_ns);
        if (due_ns > until)
            return due_ns;
        bool measured = phase != PHASE_WARMUP;
        if (measured)
            histogram_record(&d->lag, now > due_ns ? now - due_ns : 0);
        issue(d, epoll_fd, driven(d, s->next), due_ns, measured);
        s->next = (s->next + 1) % d->count;
        s->issued++;
    }
}

void *drive_open(void *arg)
{
    struct driver *d = arg;
    /* The default slack of a sleeping thread (50 us) would make every request that much late by design. */
    if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0)
        die_errno("prctl PR_SET_TIMERSLACK");
    const size_t room = 65536;
    char *scratch = page_alloc_or_die(room);
    int epoll_fd = open_connections(d);
    struct schedule schedule = {.interval_ns = 1e9 / d->rate, .start = now_ns()};
    uint64_t drain_deadline = 0;
    for (;;) {
        int phase = atomic_load(d->phase);
        uint64_t now = now_ns(), wait_ns = POLL_NS;
        if (!drain_deadline && phase != PHASE_STOP)
            wait_ns = issue_due(d, epoll_fd, &schedule, phase, now) - now;
        if (!drain_deadline && phase == PHASE_STOP) {
            /* What was due in the window and not yet sent (the thread ran late) still goes: it was offered in
             * the window, and its wait is part of the window's latency. */
            issue_due(d, epoll_fd, &schedule, phase, atomic_load(d->window_end_ns));
            drain_deadline = now + (uint64_t)(DRAIN_S * 1e9);
        }
        if (phase == PHASE_STOP && d->in_window == 0)
            break;
        if (drain_deadline && now > drain_deadline) {
            d->unanswered = d->in_window; /* whose limit that was, the client says once it knows its own */
            break;
        }
        struct timespec timeout = {.tv_sec = (time_t)(wait_ns / 1000000000ULL),
                                   .tv_nsec = (long)(wait_ns % 1000000000ULL)};
        struct epoll_event events[EVENTS];
        int ready = epoll_pwait2(epoll_fd, events, EVENTS, &timeout, NULL);
        if (ready < 0 && errno != EINTR)
            die_errno("epoll_pwait2");
        for (int i = 0; i < ready; i++) {
            struct connection *c = events[i].data.ptr;
            if (events[i].events & EPOLLOUT)
                send_unsent(epoll_fd, c);
            if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                receive(d, c, scratch, room);
            /* A burst of responses must not hold back the requests falling due meanwhile. */
            if (!drain_deadline)
                issue_due(d, epoll_fd, &schedule, phase, now_ns());
        }
    }
    for (unsigned i = 0; i < d->count; i++)
        free(driven(d, i)->outstanding);
    free(scratch);
    if (close(epoll_fd) != 0)
        die_errno("close");
    return NULL;
}

/* Under open load the rate is the server's to meet only if the client kept up: it had CPU to spare on the
 * CPUs it may run on, and its own lateness in sending (LAG) is not a large share of the tail it measured
 * (LATENCY), as when it was stalled or starved.  Otherwise the run ends here, saying whose limit it was. */
void check_client_kept_up(const struct options *opt, double seconds, const struct usage *used,
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
