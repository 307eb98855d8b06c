/* What the load client's two loops share (load.h): how a response is checked.  Apart from both loops, so that
 * the open loop (load_open.c) and the program that runs either (load_client.c) need nothing of each other but
 * the open loop's entry. */
#include "load.h"

#include "errors.h"
#include "pattern.h"

void verify_response(const char *bytes, size_t count, size_t offset, const struct connection *c)
{
    for (size_t i = 0; i < count; i++)
        if ((uint8_t)bytes[i] != pattern_byte(0, offset + i))
            die("response byte %zu on descriptor %d is 0x%02x, not the pattern's 0x%02x", offset + i, c->fd,
                (uint8_t)bytes[i], pattern_byte(0, offset + i));
}
