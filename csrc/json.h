/* JSON output: exactly one object on stdout, whose keys copylab/contract.py declares (json.c).  Kept apart
 * from copylab.h's sockets and threads so that the calibration programs print through it as well. */
#ifndef COPYLAB_JSON_H
#define COPYLAB_JSON_H

#include <stdbool.h>
#include <stdint.h>

struct json {
    bool first;
};
void json_begin(struct json *j);
void json_str(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_f64(struct json *j, const char *key, double value);
void json_null(struct json *j, const char *key);
void json_u64_or_null(struct json *j, const char *key, bool present, uint64_t value);
void json_f64_or_null(struct json *j, const char *key, bool present, double value);
void json_end(struct json *j);

#endif
