/* A process's CPU time and context switches (getrusage), snapshotted at the window's edges, and how a
 * result reports them. */
#include "usage.h"

#include "errors.h"
#include "json.h"

#include <sys/resource.h>

static double timeval_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void usage_now(struct usage *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        die_errno("getrusage");
    out->user_s = timeval_seconds(ru.ru_utime);
    out->sys_s = timeval_seconds(ru.ru_stime);
    out->voluntary = ru.ru_nvcsw;
    out->involuntary = ru.ru_nivcsw;
}

void usage_delta(const struct usage *a, const struct usage *b, struct usage *out)
{
    out->user_s = b->user_s - a->user_s;
    out->sys_s = b->sys_s - a->sys_s;
    out->voluntary = b->voluntary - a->voluntary;
    out->involuntary = b->involuntary - a->involuntary;
}

void json_usage(struct json *j, const struct usage *used)
{
    json_f64(j, "cpu_user_s", used->user_s);
    json_f64(j, "cpu_sys_s", used->sys_s);
    json_u64(j, "ctx_voluntary", (uint64_t)used->voluntary);
    json_u64(j, "ctx_involuntary", (uint64_t)used->involuntary);
}
