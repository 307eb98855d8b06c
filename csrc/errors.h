/* How a program fails: one line on stderr, then an exit status that tells bad usage from a failure while
 * running (errors.c); and memory a program cannot do without. */
#ifndef COPYLAB_ERRORS_H
#define COPYLAB_ERRORS_H

#include <stddef.h>

/* Exit codes: bad usage vs a failure while running. */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1
/* What calloc_or_die() aligns to, so that a member can sit on a cache line of its own. */
#define CACHELINE 64

_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die_errno(const char *what);
/* When the first argument is --help or -h: USAGE on stdout and exit 0 (the programs without an options table). */
void help_if_asked(int argc, char **argv, const char *usage);
/* Zeroed memory for COUNT objects of SIZE bytes on a cache line's boundary, or die saying memory ran out. */
void *calloc_or_die(size_t count, size_t size);
/* Whole pages for a receive buffer, or die saying memory ran out: the kernel's copy into a buffer that starts a
 * few bytes past a page boundary can take a slow path (copylab calibrate's placement finding). */
void *page_alloc_or_die(size_t size);

#endif
