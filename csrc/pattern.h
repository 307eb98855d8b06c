/* The verification pattern: what byte a message carries where, which every sender writes and every receiver
 * checks (the load client and the models too). */
#ifndef COPYLAB_PATTERN_H
#define COPYLAB_PATTERN_H

#include <stdint.h>

/* The byte the receiver expects at offset within message number seq. */
static inline uint8_t pattern_byte(uint64_t seq, uint64_t offset)
{
    return (uint8_t)(offset * 131u + (offset >> 8) * 7u + seq * 29u + (seq >> 8));
}

#endif
