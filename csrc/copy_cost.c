/* Copy cost by working set, like lmbench's bw_mem, measured so that it means what it says:
 *
 *   copy_cost [--memcpy-only] PASSES WORKING_SET_BYTES...
 *
 * For each working set (source + destination bytes) it times copies of half of it, hot, on
 * whatever CPU the caller pinned it to, along two paths:
 *   memcpy  libc's memcpy as linked (what the senders' user-space copies run);
 *   read    pread() from a page-cache file into the buffer (the kernel's copy to user space,
 *           what read() and recv() run), for copies up to READ_MAX_BYTES;
 * and at two placements of the destination relative to the source, modulo a page:
 *   0       both start on a page boundary;
 *   16      the destination starts 16 bytes past the source, as two consecutive malloc()
 *           blocks lie (glibc puts a 16-byte header before each).
 * Some CPUs copy with string instructions (rep movsb) and take a slow path when the
 * destination lies a few bytes past the source modulo 4 KiB, which looks like an overlap.
 *
 * Sizes are interleaved: each pass measures every point once, starting at a different one,
 * so a disturbance spreads over the points instead of hitting one.  Each sample also says
 * which share of its wall time the thread was on a CPU: below 1, another process took it.
 * Prints JSON: per point, the ns per byte and on-CPU share of every pass. */
#include "clock.h"
#include "errors.h"
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 40
#define MAX_PASSES 25
#define PAGE 4096u
#define ALIASED_OFFSET 16u
/* Bytes copied per sample: enough that the clock's resolution does not matter. */
#define BYTES_PER_SAMPLE (4u << 20)
/* The kernel path reads from a file of the copy's size: kept to sizes a page cache holds cheaply. */
#define READ_MAX_BYTES (1u << 20)

enum path { PATH_MEMCPY, PATH_READ, PATHS };
static const char *const PATH_NAMES[PATHS] = {"memcpy", "read"};
static const unsigned OFFSETS[] = {0, ALIASED_OFFSET};
#define OFFSET_COUNT (sizeof OFFSETS / sizeof OFFSETS[0])

struct point {
    size_t copy_bytes;
    enum path path;
    unsigned offset;
    char *from, *to; /* page-aligned source; destination = to + offset */
    int file;        /* read: a memfd holding copy_bytes, read from offset 0 */
    double ns_per_byte[MAX_PASSES], on_cpu[MAX_PASSES];
};

static int parse(const char *text, unsigned long low, unsigned long high, unsigned long *value)
{
    char *end;
    errno = 0;
    *value = strtoul(text, &end, 10);
    return errno == 0 && *end == '\0' && end != text && *value >= low && *value <= high;
}

static char *pages(size_t bytes)
{
    /* Populated: every page faulted in before any timing. */
    char *memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (memory == MAP_FAILED)
        die("out of memory for a working set: %s", strerror(errno));
    return memory;
}

/* The two placements of one size and path share their buffers (the destination differs by its offset). */
static void prepare(struct point *p, const struct point *previous)
{
    if (previous && previous->copy_bytes == p->copy_bytes && previous->path == p->path) {
        p->from = previous->from;
        p->to = previous->to;
        p->file = previous->file;
        return;
    }
    size_t span = (p->copy_bytes + PAGE - 1) / PAGE * PAGE + PAGE;
    p->from = pages(span);
    p->to = pages(span);
    p->file = -1;
    if (p->path == PATH_READ) {
        p->file = memfd_create("copylab-copy-cost", 0);
        if (p->file < 0)
            die_errno("memfd_create");
        for (size_t done = 0; done < p->copy_bytes;) {
            ssize_t wrote = pwrite(p->file, p->from + done, p->copy_bytes - done, (off_t)done);
            if (wrote < 0 && errno == EINTR)
                continue;
            if (wrote < 0)
                die_errno("pwrite to the page-cache file");
            if (wrote == 0)
                die("pwrite to the page-cache file wrote nothing");
            done += (size_t)wrote;
        }
    }
}

static void copy_once(const struct point *p)
{
    char *to = p->to + p->offset;
    if (p->path == PATH_MEMCPY) {
        memcpy(to, p->from, p->copy_bytes);
        __asm__ __volatile__("" : : "r"(to) : "memory"); /* every copy happens, in order */
        return;
    }
    for (size_t done = 0; done < p->copy_bytes;) {
        ssize_t got = pread(p->file, to + done, p->copy_bytes - done, (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            die_errno("pread from the page-cache file");
        if (got == 0)
            die("the page-cache file ended %zu bytes early", p->copy_bytes - done);
        done += (size_t)got;
    }
}

static void sample(struct point *p, int pass)
{
    size_t rounds = BYTES_PER_SAMPLE / p->copy_bytes ? BYTES_PER_SAMPLE / p->copy_bytes : 1;
    copy_once(p); /* hot: the buffers are where this copy left them */
    double wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (size_t i = 0; i < rounds; i++)
        copy_once(p);
    double wall_ns = clock_ns(CLOCK_MONOTONIC) - wall, cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    p->ns_per_byte[pass] = wall_ns / ((double)rounds * (double)p->copy_bytes);
    p->on_cpu[pass] = cpu_ns / wall_ns;
}

/* The working sets in ARGS (after any --memcpy-only), which name the passes first; returns their count. */
static int parse_arguments(int argc, char **args, unsigned long *passes, unsigned long sizes[MAX_SIZES])
{
    int count = argc - 2;
    if (count < 1 || count > MAX_SIZES || !parse(args[1], 1, MAX_PASSES, passes))
        die_usage("usage: copy_cost [--memcpy-only] PASSES(1..%d) WORKING_SET_BYTES... (at most %d)", MAX_PASSES,
                  MAX_SIZES);
    for (int i = 0; i < count; i++)
        if (!parse(args[i + 2], 256, 4ul << 30, &sizes[i]))
            die_usage("working set %s is not a byte count from 256 to 4 GiB", args[i + 2]);
    return count;
}

/* Every point to measure, in the order they are printed; returns how many. */
static size_t plan(const unsigned long *sizes, int count, bool memcpy_only, struct point *points)
{
    size_t n = 0;
    for (int i = 0; i < count; i++)
        for (int path = 0; path < PATHS; path++)
            for (size_t k = 0; k < OFFSET_COUNT; k++)
                if (path == PATH_MEMCPY || (!memcpy_only && sizes[i] / 2 <= READ_MAX_BYTES))
                    points[n++] = (struct point){.copy_bytes = sizes[i] / 2, .path = path, .offset = OFFSETS[k]};
    return n;
}

static void print_points(const struct point *points, size_t n, unsigned long passes)
{
    struct json j;
    json_begin(&j);
    json_u64(&j, "passes", passes);
    json_array(&j, "points");
    for (size_t i = 0; i < n; i++) {
        const struct point *p = &points[i];
        json_object(&j, NULL);
        json_u64(&j, "working_set_bytes", 2 * p->copy_bytes);
        json_str(&j, "path", PATH_NAMES[p->path]);
        json_u64(&j, "offset", p->offset);
        json_array(&j, "ns_per_byte");
        for (unsigned long pass = 0; pass < passes; pass++)
            json_f64(&j, NULL, p->ns_per_byte[pass]);
        json_close(&j);
        json_array(&j, "on_cpu");
        for (unsigned long pass = 0; pass < passes; pass++)
            json_f64(&j, NULL, p->on_cpu[pass]);
        json_close(&j);
        json_close(&j);
    }
    json_close(&j);
    json_end(&j);
}

static const char USAGE[] =
    "usage: copy_cost [--memcpy-only] PASSES WORKING_SET_BYTES...\n"
    "Copy cost by working set: for each working set (256 B to 4 GiB, at most 40), the time per byte of copying\n"
    "half of it with memcpy and with pread() from a page-cache file, destination at offset 0 and 16 modulo a\n"
    "page, PASSES times (1 to 25). --memcpy-only leaves out pread(). Prints one JSON object: passes, and points,\n"
    "one per working set, path and offset with ns_per_byte and on_cpu per pass.\n"
    "docs/reference/programs.md lists the keys.\n";

int main(int argc, char **argv)
{
    help_if_asked(argc, argv, USAGE);
    /* --memcpy-only: a run whose environment changes only libc (GLIBC_TUNABLES) has nothing to add to read. */
    const bool memcpy_only = argc > 1 && strcmp(argv[1], "--memcpy-only") == 0;
    unsigned long passes, sizes[MAX_SIZES];
    int count = parse_arguments(argc - memcpy_only, argv + memcpy_only, &passes, sizes);
    static struct point points[MAX_SIZES * PATHS * OFFSET_COUNT];
    size_t n = plan(sizes, count, memcpy_only, points);
    for (size_t i = 0; i < n; i++)
        prepare(&points[i], i ? &points[i - 1] : NULL);
    for (unsigned long pass = 0; pass < passes; pass++)
        for (size_t i = 0; i < n; i++)
            sample(&points[(i + pass * n / passes) % n], (int)pass);
    print_points(points, n, passes);
    return 0;
}
