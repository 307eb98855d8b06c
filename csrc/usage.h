/* The window's CPU time and context switches (usage.c). */
#ifndef COPYLAB_USAGE_H
#define COPYLAB_USAGE_H

#include "json.h"

struct usage {
    double user_s, sys_s;
    long voluntary, involuntary;
};
void usage_now(struct usage *out);
void usage_delta(const struct usage *a, const struct usage *b, struct usage *out);
/* The window's usage as the keys every program's result carries, in the order of _USAGE in
 * copylab/declarations/contract.py. */
void json_usage(struct json *j, const struct usage *used);

#endif
