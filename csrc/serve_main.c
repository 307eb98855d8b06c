/* The server of the servers experiment: one session (a control connection plus
 * the client's connections) served by the model's loop on a thread of its own;
 * this file measures the window (the model's forked children included) and
 * prints the one JSON object.  The process ends with the session, whatever the
 * model's loop is doing. */
#include "clock.h"
#include "connection.h"
#include "errors.h"
#include "json.h"
#include "limits.h"
#include "model.h"
#include "options.h"
#include "pattern.h"
#include "perf_control.h"
#include "session.h"
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN_WAIT_S 2.0
/* Within the client's wait for the server to get ready (load_client.c). */
#define SETTLE_WAIT_S 8.0

enum window_phase { BEFORE_WINDOW, IN_WINDOW, AFTER_WINDOW };

/* Shared with forked children: the window's phase, and their share of its usage. */
struct shared_window {
    _Atomic int phase;
    _Atomic uint64_t user_us, sys_us, voluntary, involuntary;
};
static struct shared_window *shared;

/* This process's view of the window when it is a forked child. */
static struct {
    bool active;
    int phase;
    struct usage begin;
} child;

static void child_add(const struct usage *begin)
{
    struct usage now, used;
    usage_now(&now);
    usage_delta(begin, &now, &used);
    atomic_fetch_add(&shared->user_us, (uint64_t)(used.user_s * 1e6));
    atomic_fetch_add(&shared->sys_us, (uint64_t)(used.sys_s * 1e6));
    atomic_fetch_add(&shared->voluntary, (uint64_t)used.voluntary);
    atomic_fetch_add(&shared->involuntary, (uint64_t)used.involuntary);
}

static void window_child_tick(void)
{
    int phase = atomic_load_explicit(&shared->phase, memory_order_relaxed);
    if (phase == child.phase)
        return;
    if (phase == IN_WINDOW)
        usage_now(&child.begin);
    else if (child.phase == IN_WINDOW)
        child_add(&child.begin);
    child.phase = phase;
}

void window_child_start(void)
{
    /* The child ends with its parent, whatever ends the parent. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        die_errno("prctl PR_SET_PDEATHSIG");
    child.active = true;
    child.phase = BEFORE_WINDOW;
    window_child_tick();
}

_Noreturn void window_child_exit(void)
{
    if (child.phase == IN_WINDOW)
        child_add(&child.begin);
    _exit(0);
}

bool answer_request(int fd, const struct model_config *config)
{
    char request[REQUEST_SIZE];
    if (recv_exact(fd, request, sizeof request) != IO_OK)
        return false;
    if (child.active)
        window_child_tick();
    return send_all(fd, config->response, config->size) == IO_OK;
}

/* Posted once the model holds its connections; the session waits for it before the warm-up. */
static sem_t settled;

void model_settled(void)
{
    static bool posted;
    if (!posted && sem_post(&settled) != 0)
        die_errno("sem_post");
    posted = true;
}

void connection_taken(const struct model_config *config)
{
    static unsigned accepted;
    if (++accepted == config->connections)
        model_settled();
}

int accept_connection(const struct model_config *config)
{
    /* Every connection is opened at the start; the session's end ends a wait for more. */
    int fd = accept_within(config->listen_fd, 24 * 3600.0);
    connection_taken(config);
    return fd;
}

__attribute__((weak)) const char *model_unavailable(void)
{
    return NULL;
}

static void *model_main(void *arg)
{
    model_serve(arg);
    /* The thread that forked a model's children must outlive them: their parent-death
     * signal fires when it ends, not when the process does. */
    while (pause() < 0 && errno == EINTR)
        continue;
    die_errno("pause");
}

/* Waits, bounded, until the model holds its connections. */
static void wait_settled(double timeout_s)
{
    struct timespec deadline;
    if (clock_gettime(CLOCK_REALTIME, &deadline) != 0)
        die_errno("clock_gettime");
    deadline.tv_sec += (time_t)timeout_s + 1;
    while (sem_timedwait(&settled, &deadline) != 0) {
        if (errno == ETIMEDOUT)
            die("the server did not take its connections within %.0f s", timeout_s);
        if (errno != EINTR)
            die_errno("sem_timedwait");
    }
}

/* Tells forked children where the window stands (they snapshot their own usage at its edges). */
static void mark_phase(enum control edge)
{
    atomic_store(&shared->phase, edge == CONTROL_BEGIN ? IN_WINDOW : AFTER_WINDOW);
}

/* Waits, bounded, for the forked children, which end when their connections close and add their share
 * of the window's CPU as they do: a child still running after the wait would leave its share out. */
static void wait_children(void)
{
    uint64_t deadline = now_ns() + (uint64_t)(CHILDREN_WAIT_S * 1e9);
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno == ECHILD)
            return;
        if (pid < 0 && errno != EINTR)
            die_errno("waitpid");
        if (pid == 0 && now_ns() >= deadline)
            die("forked children still ran %.0f s after the window: their share of its CPU is unknown",
                CHILDREN_WAIT_S);
        if (pid == 0) {
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
}

/* The window's usage: this process's, and the share its forked children added as they ended. */
static struct usage with_children(const struct usage *own)
{
    return (struct usage){
        .user_s = own->user_s + (double)atomic_load(&shared->user_us) / 1e6,
        .sys_s = own->sys_s + (double)atomic_load(&shared->sys_us) / 1e6,
        .voluntary = own->voluntary + (long)atomic_load(&shared->voluntary),
        .involuntary = own->involuntary + (long)atomic_load(&shared->involuntary),
    };
}

/* Accepts the session's control connection; its hello must ask for what this server answers, on as many
 * connections as the model and the descriptor limit allow. */
static int open_model_session(int listen_fd, const struct options *opt, struct hello *hello)
{
    int control_fd = session_open(listen_fd, opt->timeout_s, hello);
    if (hello->size != opt->size || hello->mode != MODE_RR)
        die("the client asked for %llu-byte %s requests, the server answers %llu-byte rr",
            (unsigned long long)hello->size, mode_name((enum mode)hello->mode), (unsigned long long)opt->size);
    unsigned connections = hello->threads;
    if (connections < 1 || connections > MAX_CONNECTIONS)
        die("the client asked for %u connections", connections);
    if (MODEL_MAX_CONNECTIONS && connections > MODEL_MAX_CONNECTIONS)
        die_usage("a %s server holds at most %u connections, the client asked for %u", MODEL_NAME,
                  MODEL_MAX_CONNECTIONS, connections);
    raise_descriptor_limit(connections + 64ULL, "the server's connections");
    return control_fd;
}

/* Starts the model's loop on CONFIG, which must outlive it, with the response every request gets. */
static void start_model(struct model_config *config)
{
    char *response = malloc(config->size);
    if (!response)
        die("out of memory for a %llu-byte response", (unsigned long long)config->size);
    for (uint64_t i = 0; i < config->size; i++)
        response[i] = (char)pattern_byte(0, i);
    config->response = response;
    if (sem_init(&settled, 0, 0) != 0)
        die_errno("sem_init");
    pthread_t model;
    int err = pthread_create(&model, NULL, model_main, config);
    if (err)
        die("pthread_create: %s", strerror(err));
}

static void print_model_result(const struct options *opt, unsigned connections, const char *congestion,
                               const struct usage *used)
{
    struct json j;
    json_begin(&j);
    json_str(&j, "role", "server");
    json_str(&j, "model", MODEL_NAME);
    json_u64(&j, "size", opt->size);
    json_u64(&j, "connections", connections);
    json_str(&j, "congestion_control", congestion);
    json_u64(&j, "socket_buffer", socket_buffer_in_use());
    struct usage total = with_children(used);
    json_usage(&j, &total);
    json_end(&j);
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_options(ROLE_SERVER, argc, argv, &opt);
    if (opt.probe) {
        const char *why = model_unavailable();
        if (why)
            die("the %s server is unavailable here: %s", MODEL_NAME, why);
        return 0;
    }
    if (opt.file)
        die_usage("--file: the %s server answers requests from memory", MODEL_NAME);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        die_errno("signal");
    shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        die_errno("mmap");

    struct perf_control perf;
    perf_control_open(&perf, opt.perf_ctl, opt.perf_ack);
    int listen_fd = listen_on(opt.address, opt.port, MAX_CONNECTIONS + 8);
    /* What every connection the model accepts inherits. */
    char congestion[CONGESTION_NAME_BYTES];
    congestion_control_of(listen_fd, congestion);
    struct hello hello;
    int control_fd = open_model_session(listen_fd, &opt, &hello);
    struct model_config config = {.listen_fd = listen_fd, .connections = hello.threads, .size = opt.size};
    start_model(&config);
    wait_settled(SETTLE_WAIT_S);
    session_ready(control_fd);
    struct usage used = session_window(control_fd, &hello, &perf, mark_phase);
    wait_children();
    perf_control_close(&perf);
    print_model_result(&opt, hello.threads, congestion, &used);
    /* The model's loop may be blocked in accept() or recv(): the session is over, so is the process. */
    _exit(0);
}
