/* The two-copy sender's user-space packing copy alone, for a cache simulator (valgrind's cachegrind):
 *
 *   pack_copy MESSAGE_BYTES ROUNDS
 *
 * It holds the message as the senders do (8 fields, each allocated with malloc(), together MESSAGE_BYTES) and a
 * packed buffer of MESSAGE_BYTES, touches both once, then copies the fields into the buffer ROUNDS times with
 * memcpy, as send_two_copy.c packs a message before each send().  Under a simulator, the misses of two runs that
 * differ only in ROUNDS, divided by the bytes the extra rounds copied, are the packing copy's misses per byte in
 * steady state: the setup and the first touch cancel.  Nothing else runs: no socket, no kernel copy.
 * It prints nothing: what it is for is what the simulator counts while it runs. */
#include "errors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS 8
#define MAX_MESSAGE (64ul << 20)
#define MAX_ROUNDS 1000000ul

static int read_count(const char *text, unsigned long low, unsigned long high, unsigned long *value)
{
    char *end;
    errno = 0;
    *value = strtoul(text, &end, 10);
    return errno == 0 && *end == '\0' && end != text && *value >= low && *value <= high;
}

static const char USAGE[] =
    "usage: pack_copy MESSAGE_BYTES ROUNDS\n"
    "The two-copy sender's packing copy alone, for a cache simulator: 8 fields of MESSAGE_BYTES together (8 B to\n"
    "64 MiB) copied into one buffer ROUNDS times (0 to 1000000). Prints nothing: run it under valgrind's cachegrind.\n";

int main(int argc, char **argv)
{
    help_if_asked(argc, argv, USAGE);
    unsigned long size, rounds;
    if (argc != 3 || !read_count(argv[1], FIELDS, MAX_MESSAGE, &size) || !read_count(argv[2], 0, MAX_ROUNDS, &rounds))
        die("usage: pack_copy MESSAGE_BYTES ROUNDS (MESSAGE_BYTES %d to %lu, ROUNDS 0 to %lu)", FIELDS, MAX_MESSAGE,
            MAX_ROUNDS);
    size_t field_bytes[FIELDS];
    char *field[FIELDS];
    for (int i = 0; i < FIELDS; i++) {
        /* The last field takes the remainder, as message.c splits a message. */
        field_bytes[i] = size / FIELDS + (i == FIELDS - 1 ? size % FIELDS : 0);
        field[i] = malloc(field_bytes[i]);
        if (!field[i])
            die("out of memory for a field of %zu bytes", field_bytes[i]);
        memset(field[i], 'a' + i, field_bytes[i]);
    }
    char *packed = malloc(size);
    if (!packed)
        die("out of memory for a packed buffer of %lu bytes", size);
    memset(packed, 0, size);
    for (unsigned long round = 0; round < rounds; round++) {
        size_t at = 0;
        for (int i = 0; i < FIELDS; i++) {
            memcpy(packed + at, field[i], field_bytes[i]);
            at += field_bytes[i];
        }
        __asm__ __volatile__("" : : "r"(packed) : "memory"); /* every copy happens */
    }
    for (int i = 0; i < FIELDS; i++)
        free(field[i]);
    free(packed);
    return 0;
}
