/* The receiving side: T threads, each with its own connection, receive for
 * warm-up + duration; only the measured window after the warm-up counts. */
#include "copylab.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STREAM_RECV_BUFFER (256u << 10)

enum phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

struct receiver {
    pthread_t thread;
    int fd;
    const struct options *opt;
    _Atomic int *phase;
    uint64_t verify_errors;
    struct histogram *latency; /* rr only */
    /* Read by the main thread at the window's edges. */
    _Alignas(CACHELINE) _Atomic uint64_t bytes;
    _Alignas(CACHELINE) char pad;
};

/* Checks a received chunk against the pattern; stream_offset is where it starts. */
static uint64_t count_mismatches(const uint8_t *data, size_t len, uint64_t stream_offset, uint64_t size)
{
    uint64_t wrong = 0;
    uint64_t seq = stream_offset / size, offset = stream_offset % size;
    for (size_t i = 0; i < len; i++) {
        wrong += data[i] != pattern_byte(seq, offset);
        if (++offset == size) {
            offset = 0;
            seq++;
        }
    }
    return wrong;
}

static void receive_stream(struct receiver *r)
{
    size_t capacity = STREAM_RECV_BUFFER;
    uint8_t *buffer = malloc(capacity);
    if (!buffer)
        die("out of memory");
    uint64_t total = 0;
    for (;;) {
        ssize_t got = recv(r->fd, buffer, capacity, 0);
        if (got > 0) {
            if (r->opt->verify)
                r->verify_errors += count_mismatches(buffer, (size_t)got, total, r->opt->size);
            total += (uint64_t)got;
            atomic_store_explicit(&r->bytes, total, memory_order_relaxed);
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (atomic_load_explicit(r->phase, memory_order_relaxed) == PHASE_STOP)
            break;
        if (got == 0)
            die("the server closed a connection during the run");
        die_errno("recv");
    }
    free(buffer);
}

static void receive_rr(struct receiver *r)
{
    size_t size = r->opt->size;
    uint8_t *response = malloc(size);
    if (!response)
        die("out of memory");
    uint64_t total = 0;
    for (uint64_t seq = 0;; seq++) {
        int phase = atomic_load_explicit(r->phase, memory_order_relaxed);
        if (phase == PHASE_STOP)
            break;
        uint64_t request = seq, start = now_ns();
        if (send_all(r->fd, &request, sizeof request) != IO_OK ||
            recv_exact(r->fd, response, size) != IO_OK) {
            if (atomic_load_explicit(r->phase, memory_order_relaxed) == PHASE_STOP)
                break;
            die("the server closed a connection during the run");
        }
        uint64_t elapsed = now_ns() - start;
        if (phase == PHASE_MEASURE)
            histogram_record(r->latency, elapsed);
        if (r->opt->verify)
            r->verify_errors += count_mismatches(response, size, seq * size, size);
        total += size;
        atomic_store_explicit(&r->bytes, total, memory_order_relaxed);
    }
    free(response);
}

static void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    if (r->opt->mode == MODE_RR)
        receive_rr(r);
    else
        receive_stream(r);
    return NULL;
}

static uint64_t total_bytes(struct receiver *receivers, unsigned n)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += atomic_load_explicit(&receivers[i].bytes, memory_order_relaxed);
    return sum;
}

static void sleep_seconds(double seconds)
{
    struct timespec left = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&left, &left) != 0)
        if (errno != EINTR)
            die_errno("nanosleep");
}

static void send_control(int fd, enum control control)
{
    char byte = (char)control;
    if (send_all(fd, &byte, 1) != IO_OK)
        die("the server closed the session early");
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_CLIENT, argc, argv, &opt);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");
    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);

    int control_fd = connect_within(opt.address, opt.port, opt.timeout_s);
    set_io_timeout(control_fd, 10.0);
    struct hello hello = {
        .magic = HELLO_MAGIC, .size = opt.size, .threads = opt.threads, .mode = opt.mode,
        .verify = opt.verify, .window_s = opt.warmup_s + opt.duration_s,
    };
    if (send_all(control_fd, &hello, sizeof hello) != IO_OK)
        die("the server closed the session at once");

    unsigned n = opt.threads;
    _Atomic int phase = PHASE_WARMUP;
    struct receiver *receivers = calloc(n, sizeof *receivers);
    struct histogram *latency = opt.mode == MODE_RR ? calloc(n + 1, sizeof *latency) : NULL;
    if (!receivers || (opt.mode == MODE_RR && !latency))
        die("out of memory");
    for (unsigned i = 0; i < n; i++) {
        struct receiver *r = &receivers[i];
        r->fd = connect_within(opt.address, opt.port, opt.timeout_s);
        set_io_timeout(r->fd, 10.0);
        r->opt = &opt;
        r->phase = &phase;
        r->latency = latency ? &latency[i + 1] : NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        int err = pthread_create(&receivers[i].thread, NULL, receiver_main, &receivers[i]);
        if (err)
            die("pthread_create: %s", strerror(err));
    }

    sleep_seconds(opt.warmup_s);
    send_control(control_fd, CONTROL_BEGIN);
    perf_control_send(&perf, "enable");
    struct usage before, after, used;
    usage_now(&before);
    uint64_t bytes_before = total_bytes(receivers, n);
    double begin_s = now_seconds();
    atomic_store(&phase, PHASE_MEASURE);

    sleep_seconds(opt.duration_s);
    atomic_store(&phase, PHASE_STOP);
    double end_s = now_seconds();
    uint64_t bytes_after = total_bytes(receivers, n);
    usage_now(&after);
    perf_control_send(&perf, "disable");
    send_control(control_fd, CONTROL_END);

    /* Wake blocked receivers, then reset the connections so the server's
     * senders see the end at once instead of filling a dead window. */
    uint64_t verify_errors = 0;
    for (unsigned i = 0; i < n; i++)
        if (shutdown(receivers[i].fd, SHUT_RDWR) != 0 && errno != ENOTCONN)
            die_errno("shutdown");
    for (unsigned i = 0; i < n; i++) {
        int err = pthread_join(receivers[i].thread, NULL);
        if (err)
            die("pthread_join: %s", strerror(err));
        verify_errors += receivers[i].verify_errors;
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        if (setsockopt(receivers[i].fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0)
            die_errno("setsockopt SO_LINGER");
        if (close(receivers[i].fd) != 0)
            die_errno("close");
        if (latency)
            histogram_merge(&latency[0], &latency[i + 1]);
    }
    if (close(control_fd) != 0)
        die_errno("close");
    perf_control_close(&perf);
    if (verify_errors)
        die("verification failed: %llu bytes differ from the pattern",
            (unsigned long long)verify_errors);

    usage_delta(&before, &after, &used);
    double seconds = end_s - begin_s;
    /* rr counts the round trips that started inside the window, stream the bytes that arrived in it. */
    uint64_t bytes = opt.mode == MODE_RR ? latency[0].count * opt.size : bytes_after - bytes_before;
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "client");
    json_str(&j, "variant", VARIANT_NAME);
    json_str(&j, "mode", mode_name(opt.mode));
    json_u64(&j, "size", opt.size);
    json_u64(&j, "threads", n);
    json_f64(&j, "measured_s", seconds);
    json_u64(&j, "bytes", bytes);
    json_u64(&j, "messages", bytes / opt.size);
    json_f64(&j, "throughput_gbps", (double)bytes * 8.0 / seconds / 1e9);
    /* NaN prints as null: stream mode measures no round trips. */
    const bool rr = latency && latency[0].count;
    json_f64(&j, "latency_mean_us", rr ? (double)latency[0].sum_ns / (double)latency[0].count / 1e3 : NAN);
    json_f64(&j, "latency_p50_us", rr ? histogram_percentile_ns(&latency[0], 50) / 1e3 : NAN);
    json_f64(&j, "latency_p99_us", rr ? histogram_percentile_ns(&latency[0], 99) / 1e3 : NAN);
    json_f64(&j, "latency_max_us", rr ? (double)latency[0].max_ns / 1e3 : NAN);
    json_f64(&j, "cpu_user_s", used.user_s);
    json_f64(&j, "cpu_sys_s", used.sys_s);
    json_u64(&j, "ctx_voluntary", (uint64_t)used.voluntary);
    json_u64(&j, "ctx_involuntary", (uint64_t)used.involuntary);
    json_end(&j);
    free(latency);
    free(receivers);
    return 0;
}
