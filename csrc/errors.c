/* How a copylab program fails: one line on stderr, then the exit status that tells bad usage (2) from a
 * failure while running (1), so the sweep can report the line as the trial's reason. */
#include "errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void help_if_asked(int argc, char **argv, const char *usage)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        exit(0);
    }
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
    /* calloc() aligns to 16 bytes only: a type whose members sit on lines of their own (_Alignas(CACHELINE))
     * would not be laid out as declared, which UBSan reports at every access. */
    if (size && count > (SIZE_MAX - CACHELINE) / size)
        die("out of memory for %zu x %zu bytes", count, size);
    size_t bytes = (count * size + CACHELINE - 1) / CACHELINE * CACHELINE;
    void *memory = aligned_alloc(CACHELINE, bytes ? bytes : CACHELINE);
    if (!memory)
        die("out of memory for %zu x %zu bytes", count, size);
    return memset(memory, 0, bytes);
}

void *page_alloc_or_die(size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *memory = aligned_alloc(page, (size + page - 1) / page * page);
    if (!memory)
        die("out of memory for a %zu-byte buffer", size);
    return memory;
}
