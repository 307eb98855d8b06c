/* JSON output: exactly one object on stdout, whose keys copylab/declarations/contract.py declares (json.c).  It needs
 * no socket or thread, so that the calibration programs print through it as well. */
#ifndef COPYLAB_JSON_H
#define COPYLAB_JSON_H

#include <stdbool.h>
#include <stdint.h>

/* copy_cost's points, each with its samples, are as deep as a result goes. */
#define JSON_DEPTH 4

struct json {
    unsigned depth;          /* objects and arrays open, the top-level object included */
    bool first[JSON_DEPTH];  /* nothing written in it yet */
    char close[JSON_DEPTH];  /* '}' or ']' */
};
void json_begin(struct json *j);
/* KEY NULL: the value is the next element of the array opened last. */
void json_str(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_f64(struct json *j, const char *key, double value);
void json_null(struct json *j, const char *key);
void json_u64_or_null(struct json *j, const char *key, bool present, uint64_t value);
void json_f64_or_null(struct json *j, const char *key, bool present, double value);
/* Nested values: json_object() or json_array(), the members or elements, json_close(). */
void json_object(struct json *j, const char *key);
void json_array(struct json *j, const char *key);
void json_close(struct json *j);
/* Closes the top-level object; dies when stdout could not take the result. */
void json_end(struct json *j);

#endif
