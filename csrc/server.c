/* The sending side: serves one client session (a control connection plus one
 * data connection per client thread) through the variant's send path, then
 * prints its JSON result and exits, so that one process is one trial. */
#include "connection.h"
#include "errors.h"
#include "json.h"
#include "limits.h"
#include "message.h"
#include "message_file.h"
#include "options.h"
#include "perf_control.h"
#include "sender.h"
#include "session.h"
#include "sink.h"
#include "socket_options.h"
#include "transfer.h"
#include "usage.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct worker {
    pthread_t thread;
    struct sender_config sender;
    enum mode mode;
    struct sender_counters counters;
    struct tcp_report tcp;
    bool sink;
};

/* Set once the session is over: a sink's datagrams meet no peer that could close. */
static _Atomic bool session_over;

static void serve_stream(struct sender *s)
{
    for (uint64_t seq = 0; !atomic_load_explicit(&session_over, memory_order_relaxed); seq++)
        if (sender_send(s, seq) == IO_PEER_CLOSED)
            return;
}

static void serve_rr(struct worker *w, struct sender *s)
{
    char request[REQUEST_SIZE];
    for (uint64_t seq = 0;; seq++) {
        if (recv_exact(w->sender.fd, request, sizeof request) == IO_PEER_CLOSED)
            return;
        if (sender_send(s, seq) == IO_PEER_CLOSED)
            return;
    }
}

/* Posted by each worker once its sender holds its messages: their set-up stays out of the window. */
static sem_t senders_created;

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct sender *s = sender_create(&w->sender);
    if (sem_post(&senders_created) != 0)
        die_errno("sem_post");
    if (w->mode == MODE_RR)
        serve_rr(w, s);
    else
        serve_stream(s);
    sender_destroy(s, &w->counters);
    if (!w->sink)
        w->tcp = tcp_report(w->sender.fd);
    return NULL;
}

/* Most sending paths hold the message as --layout says; a variant that always sends one buffer says so. */
__attribute__((weak)) const bool VARIANT_ONE_BUFFER = false;

/* Most sending paths run wherever the programs build; a variant that needs more defines its own. */
__attribute__((weak)) const char *sender_unavailable(void)
{
    return NULL;
}

/* --probe: whether this sending path can run here, said by the exit status (and why not, on stderr). */
static int probe(void)
{
    const char *why = sender_unavailable();
    if (why)
        die("%s is unavailable here: %s", VARIANT_NAME, why);
    return 0;
}

/* Accepts the session's control connection; its hello must ask for what this server serves. */
static int open_session(int listen_fd, const struct options *opt, struct hello *hello)
{
    int control_fd = session_open(listen_fd, opt->timeout_s, hello);
    if (hello->size != opt->size || hello->mode != opt->mode)
        die("the client asked for %llu-byte %s messages, the server serves %llu-byte %s",
            (unsigned long long)hello->size, mode_name((enum mode)hello->mode),
            (unsigned long long)opt->size, mode_name(opt->mode));
    if (hello->threads < 1 || hello->threads > MAX_THREADS)
        die("the client asked for %u connections", hello->threads);
    return control_fd;
}

/* Accepts the client's data connections, a worker sending on each. */
static struct worker *start_workers(int listen_fd, const struct options *opt, const struct hello *hello)
{
    struct worker *workers = calloc_or_die(hello->threads, sizeof *workers);
    if (sem_init(&senders_created, 0, 0) != 0)
        die_errno("sem_init");
    for (unsigned i = 0; i < hello->threads; i++) {
        struct worker *w = &workers[i];
        int fd = opt->sink ? sink_socket(opt->size) : accept_within(listen_fd, 10.0);
        /* A vanished or stalled peer ends the trial instead of hanging it. */
        set_io_timeout(fd, 10.0);
        if (opt->mode == MODE_STREAM && !opt->sink)
            stream_data(fd);
        w->sink = opt->sink;
        w->sender = (struct sender_config){.fd = fd, .size = opt->size, .verify = hello->verify != 0,
                                           .file = opt->file, .layout = opt->layout, .zc_inflight = opt->zc_inflight,
                                           .distinct = opt->distinct};
        w->mode = opt->mode;
        int err = pthread_create(&w->thread, NULL, worker_main, w);
        if (err)
            die("pthread_create: %s", strerror(err));
    }
    for (unsigned i = 0; i < hello->threads; i++)
        while (sem_wait(&senders_created) != 0)
            if (errno != EINTR)
                die_errno("sem_wait");
    return workers;
}

/* What only the sending side sees, over all its connections. */
struct served {
    struct sender_counters zc;
    uint64_t retransmits;
    double srtt_us; /* the connections' mean */
    char congestion[CONGESTION_NAME_BYTES];
    uint64_t send_buffer;
};

/* Waits for the workers to end (the client closed their connections, or the session ended) and closes the
 * connections; TCP_FD says which congestion control they used (a sink's datagrams: the control connection's). */
static struct served join_workers(struct worker *workers, unsigned n, int tcp_fd)
{
    struct served s = {.zc = {0}};
    congestion_control_of(tcp_fd, s.congestion);
    s.send_buffer = socket_buffers_of(workers[0].sender.fd).send;
    for (unsigned i = 0; i < n; i++) {
        int err = pthread_join(workers[i].thread, NULL);
        if (err)
            die("pthread_join: %s", strerror(err));
        const struct sender_counters *c = &workers[i].counters;
        s.zc.zero_copy = c->zero_copy;
        s.zc.zc_sends += c->zc_sends;
        s.zc.zc_completed += c->zc_completed;
        s.zc.zc_copied += c->zc_copied;
        s.zc.zc_notifications += c->zc_notifications;
        s.zc.zc_enobufs += c->zc_enobufs;
        s.zc.zc_messages += c->zc_messages;
        s.zc.zc_page_pins += c->zc_page_pins;
        s.retransmits += workers[i].tcp.retransmits;
        s.srtt_us += workers[i].tcp.srtt_us / (double)n;
        if (close(workers[i].sender.fd) != 0)
            die_errno("close");
    }
    return s;
}

/* The client counts the window's bytes; the server reports what only the sending side sees. */
static void print_result(const struct options *opt, unsigned n, const struct usage *used, const struct served *s)
{
    const struct sender_counters *zc = &s->zc;
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "server");
    json_str(&j, "variant", VARIANT_NAME);
    json_str(&j, "mode", mode_name(opt->mode));
    json_u64(&j, "size", opt->size);
    json_u64(&j, "threads", n);
    json_str(&j, "layout", layout_name(opt->layout));
    json_usage(&j, used);
    json_u64(&j, "retransmits", s->retransmits);
    json_f64(&j, "srtt_us", s->srtt_us);
    json_str(&j, "congestion_control", s->congestion);
    json_u64(&j, "socket_buffer", socket_buffer_in_use());
    json_u64(&j, "send_buffer_bytes", s->send_buffer);
    json_u64_or_null(&j, "zc_sends", zc->zero_copy, zc->zc_sends);
    json_u64_or_null(&j, "zc_completed", zc->zero_copy, zc->zc_completed);
    json_u64_or_null(&j, "zc_copied", zc->zero_copy, zc->zc_copied);
    json_u64_or_null(&j, "zc_notifications", zc->zero_copy, zc->zc_notifications);
    json_u64_or_null(&j, "zc_enobufs", zc->zero_copy, zc->zc_enobufs);
    json_f64_or_null(&j, "zc_pages_per_message", zc->zero_copy && zc->zc_messages > 0,
                     zc->zc_messages ? (double)zc->zc_page_pins / (double)zc->zc_messages : 0.0);
    json_u64_or_null(&j, "sink_segment_bytes", opt->sink, sink_segment_bytes());
    json_end(&j);
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_SERVER, argc, argv, &opt);
    if (VARIANT_ONE_BUFFER)
        opt.layout = LAYOUT_CONTIGUOUS;
    if (opt.probe)
        return probe();
    if (SENDS_FROM_FILE && !opt.file)
        die_usage("%s sends a message file: --file PATH is required", VARIANT_NAME);
    if (!SENDS_FROM_FILE && opt.file)
        die_usage("--file: %s sends messages from memory, not a file", VARIANT_NAME);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");

    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);
    int listen_fd = listen_on(opt.address, opt.port, MAX_THREADS + 4);
    /* After the address is known good, before the client: the file's cost stays out of every window. */
    if (SENDS_FROM_FILE)
        message_file_prepare(opt.file, opt.size);

    struct hello hello;
    int control_fd = open_session(listen_fd, &opt, &hello);
    struct worker *workers = start_workers(listen_fd, &opt, &hello);
    if (close(listen_fd) != 0)
        die_errno("close");
    session_ready(control_fd);
    struct usage used = session_window(control_fd, &hello, &perf, NULL);
    atomic_store(&session_over, true);
    struct served served = join_workers(workers, hello.threads, opt.sink ? control_fd : workers[0].sender.fd);
    /* The sink delivers nothing: a copied completion means the path copied what it exists not to. */
    if (opt.sink && served.zc.zc_copied)
        die("the sink copied %llu of %llu zero-copy sends (SO_EE_CODE_ZEROCOPY_COPIED): its datagrams were "
            "delivered or fragmented, not dropped once built",
            (unsigned long long)served.zc.zc_copied, (unsigned long long)served.zc.zc_completed);
    if (close(control_fd) != 0)
        die_errno("close");
    perf_control_close(&perf);
    print_result(&opt, hello.threads, &used, &served);
    free(workers);
    return 0;
}
