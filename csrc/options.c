/* Command-line options of the servers and clients, strictly validated.  One table says which role takes
 * which option; each role's getopt table, its --help and its required options all come from it, so they
 * cannot disagree. */
#include "options.h"

#include "errors.h"
#include "limits.h"
#include "message.h"
#include "socket_options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --timeout's bound: no sweep setting carries the timeout, so it is the programs' own. */
#define MAX_TIMEOUT_S 3600.0

static const char *const MODES[] = {[MODE_STREAM] = "stream", [MODE_RR] = "rr"};

const char *mode_name(enum mode mode)
{
    return MODES[mode];
}

static const char *const RECEIVE_MODES[] = {[RECEIVE_COPY] = "copy", [RECEIVE_TRUNCATE] = "truncate",
                                            [RECEIVE_MMAP] = "mmap"};

const char *receive_mode_name(enum receive_mode mode)
{
    return RECEIVE_MODES[mode];
}

static const char *const LAYOUTS[] = {[LAYOUT_FIELDS] = "fields", [LAYOUT_ALIGNED] = "aligned",
                                      [LAYOUT_CONTIGUOUS] = "contiguous"};

const char *layout_name(enum layout layout)
{
    return LAYOUTS[layout];
}

static const char *const PATHS[] = {"veth", "sink"};

#define CHOICES(names) names, sizeof names / sizeof *names
/* The index of TEXT among the COUNT NAMES that --OPTION takes (LISTED in words). */
static unsigned parse_choice(const char *option, const char *text, const char *const *names, size_t count,
                             const char *listed)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(text, names[i]) == 0)
            return (unsigned)i;
    die_usage("--%s: '%s' is not %s", option, text, listed);
}

enum option_id {
    OPT_BIND = 1, OPT_CONNECT, OPT_PORT, OPT_SIZE, OPT_THREADS, OPT_DURATION,
    OPT_WARMUP, OPT_TIMEOUT, OPT_MODE, OPT_VERIFY, OPT_PERF_CTL, OPT_PERF_ACK, OPT_HELP,
    OPT_RECEIVE, OPT_FILE, OPT_PROBE, OPT_CONNECTIONS, OPT_LAYOUT, OPT_ZC_INFLIGHT, OPT_IDLE_CONNECTIONS, OPT_RATE,
    OPT_CONGESTION, OPT_SOCKET_BUFFER, OPT_PATH, OPT_DISTINCT, OPT_COUNT
};

#define FOR_SERVER (1u << ROLE_SERVER)
#define FOR_CLIENT (1u << ROLE_CLIENT)
#define FOR_LOAD (1u << ROLE_LOAD)
#define FOR_ALL (FOR_SERVER | FOR_CLIENT | FOR_LOAD)

struct option_spec {
    const char *name;
    enum option_id id;
    unsigned roles;    /* the roles that accept it */
    unsigned required; /* the roles that cannot run without it (--probe aside) */
    const char *value; /* its value's placeholder; NULL: a flag, which takes none */
    const char *help;
};

/* In --help's order; the required ones in the order they are asked for. */
static const struct option_spec OPTIONS[] = {
    {"bind", OPT_BIND, FOR_SERVER, FOR_SERVER, "ADDR",
     "the IPv4 or IPv6 address to listen on"},
    {"connect", OPT_CONNECT, FOR_CLIENT | FOR_LOAD, FOR_CLIENT | FOR_LOAD, "ADDR",
     "the server's IPv4 or IPv6 address"},
    {"port", OPT_PORT, FOR_ALL, FOR_ALL, "P",
     "the TCP port"},
    {"size", OPT_SIZE, FOR_ALL, FOR_ALL, "S",
     "bytes per message or response (K, M suffixes)"},
    {"connections", OPT_CONNECTIONS, FOR_LOAD, FOR_LOAD, "C",
     "connections kept busy, one request each at a time"},
    {"idle-connections", OPT_IDLE_CONNECTIONS, FOR_LOAD, 0, "N", "connections opened besides, silent throughout"},
    {"rate", OPT_RATE, FOR_LOAD, 0, "R", "open load: R requests/s over all connections on a schedule (0: closed)"},
    {"threads", OPT_THREADS, FOR_CLIENT | FOR_LOAD, 0, "T",
     "client: one per data connection; load_client: each drives a share"},
    {"duration", OPT_DURATION, FOR_CLIENT | FOR_LOAD, 0, "SECONDS",
     "the measured window"},
    {"warmup", OPT_WARMUP, FOR_CLIENT | FOR_LOAD, 0, "SECONDS",
     "the warm-up before the window"},
    {"mode", OPT_MODE, FOR_SERVER | FOR_CLIENT, 0, "stream|rr",
     "messages back to back, or request and response"},
    {"receive", OPT_RECEIVE, FOR_CLIENT, 0, "copy|truncate|mmap",
     "how the client takes the bytes in"},
    {"verify", OPT_VERIFY, FOR_CLIENT | FOR_LOAD, 0, NULL,
     "check every byte against the pattern"},
    {"file", OPT_FILE, FOR_SERVER, 0, "PATH",
     "the message file (file-sending variants)"},
    {"layout", OPT_LAYOUT, FOR_SERVER, 0, "fields|aligned|contiguous",
     "the message's 8 fields: each allocated apart, each on a page boundary, or in one buffer"},
    {"zc-inflight", OPT_ZC_INFLIGHT, FOR_SERVER, 0, "BYTES",
     "zero-copy senders: bytes of messages kept in flight (K, M suffixes)"},
    {"congestion-control", OPT_CONGESTION, FOR_ALL, 0, "NAME",
     "TCP congestion control of every connection (default: the kernel's)"},
    {"distinct-messages", OPT_DISTINCT, FOR_SERVER, 0, "N",
     "messages a sender cycles through: 1 hot, many cold (zero-copy senders: at least their ring)"},
    {"socket-buffer", OPT_SOCKET_BUFFER, FOR_ALL, 0, "BYTES",
     "send and receive buffer of every connection, K, M suffixes (default: the kernel sizes them)"},
    {"path", OPT_PATH, FOR_SERVER | FOR_CLIENT, 0, "veth|sink",
     "to the client, or UDP datagrams the sink device drops once built (the client counts them)"},
    {"timeout", OPT_TIMEOUT, FOR_ALL, 0, "SECONDS",
     "server: how long to wait for the client; client: how long to retry connecting"},
    {"perf-ctl", OPT_PERF_CTL, FOR_ALL, 0, "FIFO",
     "perf stat's --control fifo, to count only the window"},
    {"perf-ack", OPT_PERF_ACK, FOR_ALL, 0, "FIFO",
     "perf stat's ack fifo (with --perf-ctl)"},
    {"probe", OPT_PROBE, FOR_SERVER, 0, NULL,
     "only say whether this sending path can run here (no other option needed)"},
    {"help", OPT_HELP, FOR_ALL, 0, NULL,
     "this text"},
};
#define OPTION_COUNT (sizeof OPTIONS / sizeof *OPTIONS)

static bool accepts(const struct option_spec *spec, enum role role)
{
    return (spec->roles & (1u << role)) != 0;
}

/* "--name VALUE" or "--name": how --help and the synopsis show an option. */
static int spell(char *into, size_t size, const struct option_spec *spec)
{
    return snprintf(into, size, "--%s%s%s", spec->name, spec->value ? " " : "",
                    spec->value ? spec->value : "");
}

static _Noreturn void usage(enum role role, const char *program)
{
    const char *slash = strrchr(program, '/');
    printf("usage: %s", slash ? slash + 1 : program);
    int width = 0;
    char text[64];
    for (const struct option_spec *spec = OPTIONS; spec < OPTIONS + OPTION_COUNT; spec++) {
        if (!accepts(spec, role))
            continue;
        int length = spell(text, sizeof text, spec);
        width = length > width ? length : width;
        if (spec->required & (1u << role))
            printf(" %s", text);
    }
    puts(" [OPTION]...");
    for (const struct option_spec *spec = OPTIONS; spec < OPTIONS + OPTION_COUNT; spec++) {
        if (!accepts(spec, role))
            continue;
        spell(text, sizeof text, spec);
        printf("  %-*s  %s\n", width, text, spec->help);
    }
    exit(0);
}

/* The getopt_long() table of the options ROLE takes; its last entry is all zeros. */
static void option_table(enum role role, struct option table[OPTION_COUNT + 1])
{
    size_t count = 0;
    for (const struct option_spec *spec = OPTIONS; spec < OPTIONS + OPTION_COUNT; spec++)
        if (accepts(spec, role))
            table[count++] = (struct option){spec->name, spec->value ? required_argument : no_argument, NULL,
                                             spec->id};
    table[count] = (struct option){0};
}

/* Takes option ID, which getopt_long() just read (its value in optarg), into OUT. */
static void take_option(int id, enum role role, char **argv, struct options *out)
{
    switch (id) {
    case OPT_BIND:
    case OPT_CONNECT:
        out->address = optarg;
        break;
    case OPT_PORT:
        out->port = (uint16_t)parse_count("port", optarg, 1, 65535);
        break;
    case OPT_SIZE:
        out->size = parse_count("size", optarg, MIN_SIZE, MAX_SIZE);
        break;
    case OPT_THREADS:
        out->threads = (unsigned)parse_count("threads", optarg, 1, MAX_THREADS);
        break;
    case OPT_CONNECTIONS:
        out->connections = (unsigned)parse_count("connections", optarg, 1, MAX_CONNECTIONS);
        break;
    case OPT_IDLE_CONNECTIONS:
        out->idle_connections = (unsigned)parse_count("idle-connections", optarg, 0, MAX_CONNECTIONS);
        break;
    case OPT_RATE:
        out->rate = parse_count("rate", optarg, 0, MAX_RATE);
        break;
    case OPT_DURATION:
        out->duration_s = parse_seconds("duration", optarg, 0, MAX_DURATION, false);
        break;
    case OPT_WARMUP:
        out->warmup_s = parse_seconds("warmup", optarg, 0, MAX_WARMUP, true);
        break;
    case OPT_TIMEOUT:
        out->timeout_s = parse_seconds("timeout", optarg, 0, MAX_TIMEOUT_S, false);
        break;
    case OPT_MODE:
        out->mode = parse_choice("mode", optarg, CHOICES(MODES), "stream or rr");
        break;
    case OPT_VERIFY:
        out->verify = true;
        break;
    case OPT_RECEIVE:
        out->receive = parse_choice("receive", optarg, CHOICES(RECEIVE_MODES), "copy, truncate or mmap");
        break;
    case OPT_FILE:
        out->file = optarg;
        break;
    case OPT_LAYOUT:
        out->layout = parse_choice("layout", optarg, CHOICES(LAYOUTS), "fields, aligned, contiguous");
        break;
    case OPT_ZC_INFLIGHT:
        out->zc_inflight = parse_count("zc-inflight", optarg, MIN_ZC_INFLIGHT, MAX_ZC_INFLIGHT);
        break;
    case OPT_PROBE:
        out->probe = true;
        break;
    case OPT_CONGESTION:
        use_congestion_control(optarg);
        break;
    case OPT_DISTINCT:
        out->distinct = (size_t)parse_count("distinct-messages", optarg, MIN_DISTINCT_MESSAGES, MAX_DISTINCT_MESSAGES);
        break;
    case OPT_PATH:
        out->sink = parse_choice("path", optarg, CHOICES(PATHS), "veth or sink") == 1;
        break;
    case OPT_SOCKET_BUFFER:
        use_socket_buffer(parse_count("socket-buffer", optarg, MIN_SOCKET_BUFFER, MAX_SOCKET_BUFFER));
        break;
    case OPT_PERF_CTL:
        out->perf_ctl = optarg;
        break;
    case OPT_PERF_ACK:
        out->perf_ack = optarg;
        break;
    case OPT_HELP:
        usage(role, argv[0]);
    case ':':
        die_usage("%s needs a value", argv[optind - 1]);
    default:
        die_usage("unknown option '%s' (see --help)", argv[optind - 1]);
    }
}

/* What no single option says: the options ROLE requires, and those that only make sense together. */
static void check_options(enum role role, const bool given[OPT_COUNT], const struct options *out)
{
    for (const struct option_spec *spec = OPTIONS; spec < OPTIONS + OPTION_COUNT; spec++)
        if ((spec->required & (1u << role)) && !given[spec->id])
            die_usage("--%s %s is required", spec->name, spec->value);
    if (out->threads > (out->connections ? out->connections : out->threads))
        die_usage("--threads: %u threads for %u connections leaves threads with nothing to do", out->threads,
                  out->connections);
    if (out->connections + (uint64_t)out->idle_connections > MAX_CONNECTIONS)
        die_usage("--idle-connections: %u busy and %u idle connections are more than %llu", out->connections,
                  out->idle_connections, (unsigned long long)MAX_CONNECTIONS);
    if (out->sink && (out->mode != MODE_STREAM || out->receive != RECEIVE_COPY))
        die_usage("--path sink: the sink takes a stream of datagrams, counted, not received (mode stream, receive "
                  "copy)");
    if (out->perf_ack && !out->perf_ctl)
        die_usage("--perf-ack needs --perf-ctl");
}

void parse_options(enum role role, int argc, char **argv, struct options *out)
{
    struct option table[OPTION_COUNT + 1];
    option_table(role, table);
    *out = (struct options){
        .threads = 1, .duration_s = 2.0, .warmup_s = 0.5,
        .timeout_s = role == ROLE_SERVER ? 30.0 : 3.0, .mode = MODE_STREAM, .zc_inflight = DEFAULT_ZC_INFLIGHT,
        .distinct = DEFAULT_DISTINCT_MESSAGES,
    };
    bool given[OPT_COUNT] = {false};
    opterr = 0; /* one line of our own instead of getopt's message */
    int id;
    while ((id = getopt_long(argc, argv, ":", table, NULL)) != -1) {
        take_option(id, role, argv, out);
        given[id] = true;
    }
    if (optind < argc)
        die_usage("unexpected argument '%s' (see --help)", argv[optind]);
    if (!out->probe)
        check_options(role, given, out);
}
