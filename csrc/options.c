/* Command-line options of the server and the client, strictly validated. */
#include "copylab.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mode_name(enum mode mode)
{
    return mode == MODE_RR ? "rr" : "stream";
}

static const char *const RECEIVE_MODES[] = {[RECEIVE_COPY] = "copy", [RECEIVE_TRUNCATE] = "truncate",
                                            [RECEIVE_MMAP] = "mmap"};

const char *receive_mode_name(enum receive_mode mode)
{
    return RECEIVE_MODES[mode];
}

/* An unsigned integer with an optional binary suffix K, M or G. */
static uint64_t parse_count(const char *option, const char *text, uint64_t low, uint64_t high)
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

static double parse_seconds(const char *option, const char *text, double low, double high,
                            bool allow_zero)
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

static enum mode parse_mode(const char *text)
{
    if (strcmp(text, "stream") == 0)
        return MODE_STREAM;
    if (strcmp(text, "rr") == 0)
        return MODE_RR;
    die_usage("--mode: '%s' is neither stream nor rr", text);
}

static enum receive_mode parse_receive(const char *text)
{
    for (size_t i = 0; i < sizeof RECEIVE_MODES / sizeof *RECEIVE_MODES; i++)
        if (strcmp(text, RECEIVE_MODES[i]) == 0)
            return (enum receive_mode)i;
    die_usage("--receive: '%s' is not copy, truncate or mmap", text);
}

enum option_id {
    OPT_BIND = 1, OPT_CONNECT, OPT_PORT, OPT_SIZE, OPT_THREADS, OPT_DURATION,
    OPT_WARMUP, OPT_TIMEOUT, OPT_MODE, OPT_VERIFY, OPT_PERF_CTL, OPT_PERF_ACK, OPT_HELP,
    OPT_RECEIVE, OPT_FILE, OPT_PROBE, OPT_CONNECTIONS, OPT_ALIGN_FIELDS,
};

static _Noreturn void usage(enum role role)
{
    if (role == ROLE_LOAD)
        puts("usage: load_client --connect ADDR --port P --size S --connections C [--threads T]\n"
             "                   [--duration SECONDS] [--warmup SECONDS] [--timeout SECONDS]\n"
             "                   [--perf-ctl FIFO --perf-ack FIFO]");
    else if (role == ROLE_SERVER)
        puts("usage: VARIANT_server --bind ADDR --port P --size S [--mode stream|rr] [--file PATH]\n"
             "                      [--timeout SECONDS] [--perf-ctl FIFO --perf-ack FIFO] [--align-fields]\n"
             "       VARIANT_server --probe");
    else
        puts("usage: VARIANT_client --connect ADDR --port P --size S [--threads T]\n"
             "                      [--duration SECONDS] [--warmup SECONDS] [--mode stream|rr]\n"
             "                      [--receive copy|truncate|mmap] [--verify] [--timeout SECONDS]\n"
             "                      [--perf-ctl FIFO --perf-ack FIFO]");
    exit(0);
}

void parse_options(enum role role, int argc, char **argv, struct options *out)
{
    const bool server = role == ROLE_SERVER;
    const struct option server_options[] = {
        {"bind", required_argument, NULL, OPT_BIND},
        {"port", required_argument, NULL, OPT_PORT},
        {"size", required_argument, NULL, OPT_SIZE},
        {"mode", required_argument, NULL, OPT_MODE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"perf-ctl", required_argument, NULL, OPT_PERF_CTL},
        {"perf-ack", required_argument, NULL, OPT_PERF_ACK},
        {"file", required_argument, NULL, OPT_FILE},
        {"probe", no_argument, NULL, OPT_PROBE},
        {"align-fields", no_argument, NULL, OPT_ALIGN_FIELDS},
        {"help", no_argument, NULL, OPT_HELP},
        {0, 0, 0, 0},
    };
    const struct option client_options[] = {
        {"connect", required_argument, NULL, OPT_CONNECT},
        {"port", required_argument, NULL, OPT_PORT},
        {"size", required_argument, NULL, OPT_SIZE},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"mode", required_argument, NULL, OPT_MODE},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"receive", required_argument, NULL, OPT_RECEIVE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"perf-ctl", required_argument, NULL, OPT_PERF_CTL},
        {"perf-ack", required_argument, NULL, OPT_PERF_ACK},
        {"help", no_argument, NULL, OPT_HELP},
        {0, 0, 0, 0},
    };
    const struct option load_options[] = {
        {"connect", required_argument, NULL, OPT_CONNECT},
        {"port", required_argument, NULL, OPT_PORT},
        {"size", required_argument, NULL, OPT_SIZE},
        {"connections", required_argument, NULL, OPT_CONNECTIONS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"perf-ctl", required_argument, NULL, OPT_PERF_CTL},
        {"perf-ack", required_argument, NULL, OPT_PERF_ACK},
        {"help", no_argument, NULL, OPT_HELP},
        {0, 0, 0, 0},
    };
    const struct option *table = server ? server_options : role == ROLE_LOAD ? load_options : client_options;
    *out = (struct options){
        .threads = 1, .duration_s = 2.0, .warmup_s = 0.5,
        .timeout_s = server ? 30.0 : 3.0, .mode = MODE_STREAM,
    };
    bool have_port = false, have_size = false;
    opterr = 0; /* one line of our own instead of getopt's message */
    int id;
    while ((id = getopt_long(argc, argv, ":", table, NULL)) != -1) {
        switch (id) {
        case OPT_BIND:
        case OPT_CONNECT:
            out->address = optarg;
            break;
        case OPT_PORT:
            out->port = (uint16_t)parse_count("port", optarg, 1, 65535);
            have_port = true;
            break;
        case OPT_SIZE:
            out->size = parse_count("size", optarg, MIN_SIZE, MAX_SIZE);
            have_size = true;
            break;
        case OPT_THREADS:
            out->threads = (unsigned)parse_count("threads", optarg, 1, MAX_THREADS);
            break;
        case OPT_CONNECTIONS:
            out->connections = (unsigned)parse_count("connections", optarg, 1, MAX_CONNECTIONS);
            break;
        case OPT_DURATION:
            out->duration_s = parse_seconds("duration", optarg, 0, 3600, false);
            break;
        case OPT_WARMUP:
            out->warmup_s = parse_seconds("warmup", optarg, 0, 600, true);
            break;
        case OPT_TIMEOUT:
            out->timeout_s = parse_seconds("timeout", optarg, 0, 3600, false);
            break;
        case OPT_MODE:
            out->mode = parse_mode(optarg);
            break;
        case OPT_VERIFY:
            out->verify = true;
            break;
        case OPT_RECEIVE:
            out->receive = parse_receive(optarg);
            break;
        case OPT_FILE:
            out->file = optarg;
            break;
        case OPT_ALIGN_FIELDS:
            out->align_fields = true;
            break;
        case OPT_PROBE:
            out->probe = true;
            break;
        case OPT_PERF_CTL:
            out->perf_ctl = optarg;
            break;
        case OPT_PERF_ACK:
            out->perf_ack = optarg;
            break;
        case OPT_HELP:
            usage(role);
        case ':':
            die_usage("%s needs a value", argv[optind - 1]);
        default:
            die_usage("unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_usage("unexpected argument '%s' (see --help)", argv[optind]);
    if (out->probe)
        return;
    if (!out->address)
        die_usage("--%s ADDR is required", server ? "bind" : "connect");
    if (!have_port)
        die_usage("--port P is required");
    if (!have_size)
        die_usage("--size S is required");
    if (role == ROLE_LOAD && !out->connections)
        die_usage("--connections C is required");
    if (out->threads > (out->connections ? out->connections : out->threads))
        die_usage("--threads: %u threads for %u connections leaves threads with nothing to do", out->threads,
                  out->connections);
    if (out->perf_ack && !out->perf_ctl)
        die_usage("--perf-ack needs --perf-ctl");
}
