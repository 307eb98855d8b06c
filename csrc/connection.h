/* Connections, set up within a bound (connection.c). */
#ifndef COPYLAB_CONNECTION_H
#define COPYLAB_CONNECTION_H

#include <stdint.h>

int listen_on(const char *address, uint16_t port, unsigned backlog);
/* Raises the soft RLIMIT_NOFILE to needed; one line naming WHY when the hard limit is lower. */
void raise_descriptor_limit(uint64_t needed, const char *why);
int accept_within(int listen_fd, double timeout_s);
int connect_within(const char *address, uint16_t port, double timeout_s);
/* Waits until fd is ready for events; dies with "WHAT timed out after N s" otherwise. */
void wait_fd(int fd, short events, double timeout_s, const char *what);

#endif
