/* perf stat --control fifo: enable/disable the counters around the window (perf_control.c). */
#ifndef COPYLAB_PERF_CONTROL_H
#define COPYLAB_PERF_CONTROL_H

struct perf_control {
    int ctl_fd, ack_fd;
};
void perf_control_open(struct perf_control *pc, const char *ctl, const char *ack);
void perf_control_send(struct perf_control *pc, const char *command);
void perf_control_close(struct perf_control *pc);

#endif
