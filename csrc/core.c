/* Core services shared by every copylab binary: errors, time, the message,
 * socket I/O, rusage, perf control, the latency histogram and JSON output. */
#include "copylab.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Noreturn void vdie(int code, const char *fmt, va_list ap)
{
    char line[512], safe[4 * sizeof line];
    vsnprintf(line, sizeof line, fmt, ap);
    /* Values from the command line may hold control characters: the error stays one line. */
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)line; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            k += (size_t)snprintf(safe + k, sizeof safe - k, "\\x%02x", *c);
        else
            safe[k++] = (char)*c;
    }
    safe[k] = '\0';
    fprintf(stderr, "copylab: error: %s\n", safe);
    fflush(stderr);
    /* Other threads may still run: leave without atexit handlers. */
    _exit(code);
}

void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdie(EXIT_USAGE, fmt, ap);
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdie(EXIT_RUNTIME, fmt, ap);
}

void die_errno(const char *what)
{
    die("%s: %s", what, strerror(errno));
}

void *calloc_or_die(size_t count, size_t size)
{
    void *memory = calloc(count, size);
    if (!memory)
        die("out of memory for %zu x %zu bytes", count, size);
    return memory;
}

void *page_alloc_or_die(size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *memory = aligned_alloc(page, (size + page - 1) / page * page);
    if (!memory)
        die("out of memory for a %zu-byte buffer", size);
    return memory;
}

uint64_t now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        die_errno("clock_gettime");
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double now_seconds(void)
{
    return (double)now_ns() / 1e9;
}

/* ---- message ---- */

void message_alloc(struct message *msg, size_t size, bool page_aligned)
{
    size_t share = size / FIELD_COUNT;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    msg->size = size;
    for (int i = 0; i < FIELD_COUNT; i++) {
        msg->len[i] = share + (i == FIELD_COUNT - 1 ? size % FIELD_COUNT : 0);
        size_t bytes = msg->len[i] ? msg->len[i] : 1;
        /* Page-aligned, a field of whole pages pins whole pages: MSG_ZEROCOPY then needs fewer fragments. */
        msg->field[i] = page_aligned ? aligned_alloc(page, (bytes + page - 1) / page * page) : malloc(bytes);
        if (!msg->field[i])
            die("out of memory for a %zu-byte message", size);
    }
    message_fill(msg, 0);
}

void message_free(struct message *msg)
{
    for (int i = 0; i < FIELD_COUNT; i++) {
        free(msg->field[i]);
        msg->field[i] = NULL;
    }
}

void message_fill(struct message *msg, uint64_t seq)
{
    uint64_t offset = 0;
    for (int i = 0; i < FIELD_COUNT; i++)
        for (size_t k = 0; k < msg->len[i]; k++, offset++)
            msg->field[i][k] = (char)pattern_byte(seq, offset);
}

void message_iov(const struct message *msg, struct iovec iov[FIELD_COUNT])
{
    for (int i = 0; i < FIELD_COUNT; i++) {
        iov[i].iov_base = msg->field[i];
        iov[i].iov_len = msg->len[i];
    }
}

void message_pack(const struct message *msg, void *into)
{
    char *cursor = into;
    for (int i = 0; i < FIELD_COUNT; i++) {
        memcpy(cursor, msg->field[i], msg->len[i]);
        cursor += msg->len[i];
    }
}

/* ---- the message file ---- */

uint64_t message_file_messages(uint64_t size)
{
    uint64_t messages = (MESSAGE_FILE_MIN_BYTES + size - 1) / size;
    return messages < 8 ? 8 : messages;
}

/* Writes all of buf, whatever the kernel takes per call; on failure removes the half-written file. */
static void write_all(int fd, const char *buf, size_t len, const char *path)
{
    while (len > 0) {
        ssize_t written = write(fd, buf, len);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            unlink(path);
            die("cannot write the message file %s: %s", path, strerror(err));
        }
        buf += written;
        len -= (size_t)written;
    }
}

static void message_file_write(const char *path, uint64_t size, uint64_t bytes)
{
    char temporary[4096];
    if (snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof temporary)
        die_usage("--file: the path is too long");
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die("cannot create the message file %s: %s", temporary, strerror(errno));
    enum { CHUNK = 1 << 20 };
    char *chunk = malloc(CHUNK);
    if (!chunk)
        die("out of memory");
    uint64_t seq = 0, offset = 0;
    for (uint64_t done = 0; done < bytes;) {
        size_t len = bytes - done < CHUNK ? (size_t)(bytes - done) : CHUNK;
        for (size_t i = 0; i < len; i++) {
            chunk[i] = (char)pattern_byte(seq, offset);
            if (++offset == size) {
                offset = 0;
                seq++;
            }
        }
        write_all(fd, chunk, len, temporary);
        done += len;
    }
    free(chunk);
    if (close(fd) != 0) {
        int err = errno;
        unlink(temporary);
        die("cannot write the message file %s: %s", temporary, strerror(err));
    }
    /* Whole or not at all: a concurrent or interrupted writer never leaves a short file under path. */
    if (rename(temporary, path) != 0)
        die("cannot create the message file %s: %s", path, strerror(errno));
}

int message_file_open(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open the message file %s: %s", path, strerror(errno));
    return fd;
}

void message_file_prepare(const char *path, uint64_t size)
{
    uint64_t bytes = message_file_messages(size) * size;
    struct stat st;
    if (stat(path, &st) != 0 || (uint64_t)st.st_size != bytes)
        message_file_write(path, size, bytes);
    /* Read it once, so the window measures the page cache, never the disk. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open the message file %s: %s", path, strerror(errno));
    char *chunk = malloc(1 << 20);
    if (!chunk)
        die("out of memory");
    ssize_t got;
    while ((got = read(fd, chunk, 1 << 20)) != 0)
        if (got < 0 && errno != EINTR)
            die("cannot read the message file %s: %s", path, strerror(errno));
    free(chunk);
    if (close(fd) != 0)
        die_errno("close");
}

/* Most sending paths run wherever the programs build; those that need more override this. */
__attribute__((weak)) const char *sender_unavailable(void)
{
    return NULL;
}

/* ---- socket I/O ---- */

bool peer_gone(int err)
{
    return err == EPIPE || err == ECONNRESET || err == ENOTCONN;
}

enum io_status send_failure(int err, const char *call)
{
    if (err == EINTR)
        return IO_OK;
    if (peer_gone(err))
        return IO_PEER_CLOSED;
    if (err == EAGAIN || err == EWOULDBLOCK)
        die("send timed out: the peer stopped reading");
    die("%s: %s", call, strerror(err));
}

void iov_advance(struct msghdr *mh, size_t sent)
{
    while (mh->msg_iovlen > 0 && sent >= mh->msg_iov->iov_len) {
        sent -= mh->msg_iov->iov_len;
        mh->msg_iov++;
        mh->msg_iovlen--;
    }
    if (mh->msg_iovlen > 0) {
        mh->msg_iov->iov_base = (char *)mh->msg_iov->iov_base + sent;
        mh->msg_iov->iov_len -= sent;
    }
}

enum io_status sendmsg_all(int fd, struct iovec *iov, int iovcnt, int flags,
                           void (*on_enobufs)(void *ctx), void *ctx, uint64_t *calls)
{
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
    while (mh.msg_iovlen > 0) {
        ssize_t sent = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == ENOBUFS && on_enobufs) {
                on_enobufs(ctx);
                continue;
            }
            if (send_failure(errno, "sendmsg") == IO_PEER_CLOSED)
                return IO_PEER_CLOSED;
            continue;
        }
        if (calls)
            (*calls)++;
        /* A short send: skip what went out, continue with the rest. */
        iov_advance(&mh, (size_t)sent);
    }
    return IO_OK;
}

enum io_status send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t sent = send(fd, p, len, MSG_NOSIGNAL);
        if (sent < 0) {
            if (send_failure(errno, "send") == IO_PEER_CLOSED)
                return IO_PEER_CLOSED;
            continue;
        }
        p += sent;
        len -= (size_t)sent;
    }
    return IO_OK;
}

enum io_status recv_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t got = recv(fd, p, len, 0);
        if (got == 0)
            return IO_PEER_CLOSED;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return IO_PEER_CLOSED;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                die("receive timed out: the peer stopped sending");
            die_errno("recv");
        }
        p += got;
        len -= (size_t)got;
    }
    return IO_OK;
}

struct endpoint {
    struct sockaddr_storage addr;
    socklen_t len;
};

static void resolve(const char *address, uint16_t port, struct endpoint *ep)
{
    memset(ep, 0, sizeof *ep);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ep->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ep->addr;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        ep->len = sizeof *v4;
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        ep->len = sizeof *v6;
    } else {
        die_usage("'%s' is not an IPv4 or IPv6 address", address);
    }
}

static int tcp_socket(int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die_errno("socket");
    int one = 1;
    /* Requests and small messages must not wait for Nagle in rr mode. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die_errno("setsockopt TCP_NODELAY");
    return fd;
}

int listen_on(const char *address, uint16_t port, unsigned backlog)
{
    struct endpoint ep;
    resolve(address, port, &ep);
    int fd = tcp_socket(ep.addr.ss_family);
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        die_errno("setsockopt SO_REUSEADDR");
    if (bind(fd, (struct sockaddr *)&ep.addr, ep.len) != 0)
        die("cannot bind %s port %u: %s", address, port, strerror(errno));
    if (listen(fd, (int)backlog) != 0)
        die_errno("listen");
    return fd;
}

void wait_fd(int fd, short events, double timeout_s, const char *what)
{
    struct pollfd p = {.fd = fd, .events = events};
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            die("%s timed out after %.1f s", what, timeout_s);
        int ms = (int)((deadline - now) / 1000000ULL) + 1;
        int ready = poll(&p, 1, ms);
        if (ready > 0)
            return;
        if (ready < 0 && errno != EINTR)
            die_errno("poll");
    }
}

int accept_within(int listen_fd, double timeout_s)
{
    for (;;) {
        wait_fd(listen_fd, POLLIN, timeout_s, "waiting for the client");
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno != EINTR && errno != ECONNABORTED)
            die_errno("accept");
    }
}

int connect_within(const char *address, uint16_t port, double timeout_s)
{
    struct endpoint ep;
    resolve(address, port, &ep);
    uint64_t deadline = now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        int fd = tcp_socket(ep.addr.ss_family);
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
            die_errno("fcntl");
        int err = 0;
        if (connect(fd, (struct sockaddr *)&ep.addr, ep.len) != 0) {
            err = errno;
            if (err == EINPROGRESS || err == EINTR) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                uint64_t now = now_ns();
                int ms = now < deadline ? (int)((deadline - now) / 1000000ULL) + 1 : 0;
                int ready;
                do
                    ready = poll(&p, 1, ms);
                while (ready < 0 && errno == EINTR);
                socklen_t len = sizeof err;
                if (ready < 0)
                    die_errno("poll");
                err = ETIMEDOUT;
                if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                    die_errno("getsockopt SO_ERROR");
            }
        }
        if (err == 0) {
            if (fcntl(fd, F_SETFL, flags) != 0)
                die_errno("fcntl");
            return fd;
        }
        close(fd);
        /* The server may be a moment from listen(): retry refusals until the deadline. */
        if (err != ECONNREFUSED || now_ns() >= deadline)
            die("cannot connect to %s port %u: %s", address, port, strerror(err));
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

void raise_descriptor_limit(uint64_t needed, const char *why)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        die_errno("getrlimit");
    if (limit.rlim_cur >= needed)
        return;
    rlim_t hard = limit.rlim_max;
    limit.rlim_cur = needed;
    /* Raising the hard limit too needs CAP_SYS_RESOURCE (root has it). */
    if (hard != RLIM_INFINITY && hard < needed)
        limit.rlim_max = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
        die_usage("%s needs %llu descriptors and the limit (hard %llu) cannot be raised: %s "
                  "(raise it with ulimit -Hn or in limits.conf)",
                  why, (unsigned long long)needed, (unsigned long long)hard, strerror(errno));
}

void set_io_timeout(int fd, double seconds)
{
    struct timeval tv = {.tv_sec = (time_t)seconds,
                         .tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
        die_errno("setsockopt SO_SNDTIMEO/SO_RCVTIMEO");
}

uint64_t tcp_retransmits(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
        die_errno("getsockopt TCP_INFO");
    return info.tcpi_total_retrans;
}

/* ---- rusage ---- */

static double timeval_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void usage_now(struct usage *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        die_errno("getrusage");
    out->user_s = timeval_seconds(ru.ru_utime);
    out->sys_s = timeval_seconds(ru.ru_stime);
    out->voluntary = ru.ru_nvcsw;
    out->involuntary = ru.ru_nivcsw;
}

void usage_delta(const struct usage *a, const struct usage *b, struct usage *out)
{
    out->user_s = b->user_s - a->user_s;
    out->sys_s = b->sys_s - a->sys_s;
    out->voluntary = b->voluntary - a->voluntary;
    out->involuntary = b->involuntary - a->involuntary;
}

/* ---- perf control ---- */

void perf_control_open(struct perf_control *pc, const char *ctl, const char *ack)
{
    pc->ctl_fd = pc->ack_fd = -1;
    if (!ctl)
        return;
    /* perf holds both fifos open read-write, so neither open blocks. */
    pc->ctl_fd = open(ctl, O_WRONLY | O_CLOEXEC);
    if (pc->ctl_fd < 0)
        die("cannot open perf control fifo %s: %s", ctl, strerror(errno));
    if (ack) {
        pc->ack_fd = open(ack, O_RDONLY | O_CLOEXEC);
        if (pc->ack_fd < 0)
            die("cannot open perf ack fifo %s: %s", ack, strerror(errno));
    }
}

void perf_control_send(struct perf_control *pc, const char *command)
{
    if (pc->ctl_fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "%s\n", command);
    if (write(pc->ctl_fd, line, (size_t)n) != n)
        die("cannot write to the perf control fifo: %s", strerror(errno));
    if (pc->ack_fd < 0)
        return;
    /* Wait for perf's "ack" so the counters really cover the window. */
    wait_fd(pc->ack_fd, POLLIN, 5.0, "waiting for perf to acknowledge");
    char ack[16];
    ssize_t got;
    do
        got = read(pc->ack_fd, ack, sizeof ack);
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        die("perf closed its ack fifo");
}

void perf_control_close(struct perf_control *pc)
{
    if (pc->ctl_fd >= 0)
        close(pc->ctl_fd);
    if (pc->ack_fd >= 0)
        close(pc->ack_fd);
    pc->ctl_fd = pc->ack_fd = -1;
}

/* ---- histogram ---- */

static unsigned bucket_of(uint64_t ns)
{
    if (ns < (1ULL << HIST_SUB_BITS))
        return (unsigned)ns;
    unsigned exponent = 63u - (unsigned)__builtin_clzll(ns);
    unsigned shift = exponent - HIST_SUB_BITS;
    unsigned sub = (unsigned)(ns >> shift) - (1u << HIST_SUB_BITS);
    return ((shift + 1) << HIST_SUB_BITS) + sub;
}

static double bucket_midpoint(unsigned index)
{
    if (index < (1u << HIST_SUB_BITS))
        return (double)index;
    unsigned shift = (index >> HIST_SUB_BITS) - 1;
    uint64_t sub = index & ((1u << HIST_SUB_BITS) - 1);
    double low = (double)((sub + (1u << HIST_SUB_BITS)) << shift);
    return low + (double)(1ULL << shift) / 2.0;
}

void histogram_record(struct histogram *h, uint64_t ns)
{
    h->count++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
    h->bucket[bucket_of(ns)]++;
}

void histogram_merge(struct histogram *into, const struct histogram *from)
{
    into->count += from->count;
    into->sum_ns += from->sum_ns;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
}

double histogram_percentile_ns(const struct histogram *h, double percentile)
{
    if (h->count == 0)
        return NAN;
    uint64_t rank = (uint64_t)ceil(percentile / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            double mid = bucket_midpoint(i);
            return mid > (double)h->max_ns ? (double)h->max_ns : mid;
        }
    }
    return (double)h->max_ns;
}

/* ---- JSON ---- */

static void json_key(struct json *j, const char *key)
{
    printf("%s\"%s\": ", j->first ? "" : ", ", key);
    j->first = false;
}

void json_begin(struct json *j)
{
    j->first = true;
    putchar('{');
}

void json_str(struct json *j, const char *key, const char *value)
{
    json_key(j, key);
    putchar('"');
    for (const char *c = value; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if ((unsigned char)*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
    json_key(j, key);
    printf("%llu", (unsigned long long)value);
}

void json_f64(struct json *j, const char *key, double value)
{
    if (!isfinite(value)) {
        json_null(j, key);
        return;
    }
    json_key(j, key);
    printf("%.9g", value);
}

void json_null(struct json *j, const char *key)
{
    json_key(j, key);
    fputs("null", stdout);
}

void json_u64_or_null(struct json *j, const char *key, bool present, uint64_t value)
{
    if (present)
        json_u64(j, key, value);
    else
        json_null(j, key);
}

void json_end(struct json *j)
{
    (void)j;
    puts("}");
    if (fflush(stdout) != 0)
        die_errno("writing the result");
}
