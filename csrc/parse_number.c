/* Numbers from the command line, strictly: the whole text a number, within its bounds, or a one-line usage
 * error that names the option. */
#include "errors.h"
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An unsigned integer with an optional binary suffix K, M or G. */
uint64_t parse_count(const char *option, const char *text, uint64_t low, uint64_t high)
{
    if (!*text || *text == '-' || *text == '+' || *text == ' ')
        die_usage("--%s: '%s' is not a positive whole number", option, text);
    errno = 0;
    char *end;
    unsigned long long value = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (end != text && *end && !end[1]) {
        const char *suffixes = "KMG";
        const char *found = strchr(suffixes, *end);
        if (found) {
            shift = 10u * (unsigned)(found - suffixes + 1);
            end++;
        }
    }
    if (errno || end == text || *end || (shift && value > (UINT64_MAX >> shift)))
        die_usage("--%s: '%s' is not a positive whole number", option, text);
    value <<= shift;
    if (value < low || value > high)
        die_usage("--%s: %s is out of range (%llu to %llu)", option, text,
                  (unsigned long long)low, (unsigned long long)high);
    return value;
}

double parse_seconds(const char *option, const char *text, double low, double high, bool allow_zero)
{
    errno = 0;
    char *end;
    double value = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(value))
        die_usage("--%s: '%s' is not a number of seconds", option, text);
    if ((value == 0 && !allow_zero) || value < low || value > high)
        die_usage("--%s: %s is out of range (%s%g to %g s)", option, text,
                  allow_zero ? "" : "above ", low, high);
    return value;
}
