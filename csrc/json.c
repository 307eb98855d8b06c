/* The result: exactly one JSON object on stdout, whose keys copylab/declarations/contract.py declares (the calibration
 * programs nest their samples in it). */
#include "json.h"

#include "errors.h"

#include <math.h>
#include <stdio.h>

static void json_key(struct json *j, const char *key)
{
    bool *first = &j->first[j->depth - 1];
    if (!*first)
        fputs(", ", stdout);
    *first = false;
    if (key)
        printf("\"%s\": ", key);
}

static void json_open(struct json *j, char open, char close)
{
    if (j->depth == JSON_DEPTH)
        die("a JSON result nested deeper than %d", JSON_DEPTH);
    j->first[j->depth] = true;
    j->close[j->depth] = close;
    j->depth++;
    putchar(open);
}

void json_begin(struct json *j)
{
    j->depth = 0;
    json_open(j, '{', '}');
}

void json_object(struct json *j, const char *key)
{
    json_key(j, key);
    json_open(j, '{', '}');
}

void json_array(struct json *j, const char *key)
{
    json_key(j, key);
    json_open(j, '[', ']');
}

void json_close(struct json *j)
{
    putchar(j->close[--j->depth]);
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
    json_close(j);
    putchar('\n');
    /* A result longer than stdout's buffer was partly written before: ferror() says whether all of it went. */
    if (fflush(stdout) != 0 || ferror(stdout))
        die_errno("writing the result");
}
