/* The result: exactly one JSON object on stdout, whose keys copylab/contract.py declares. */
#include "copylab.h"

#include <math.h>
#include <stdio.h>

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

void json_f64_or_null(struct json *j, const char *key, bool present, double value)
{
    if (present)
        json_f64(j, key, value);
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
