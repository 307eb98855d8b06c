/* Time as the window sees it (clock.c). */
#ifndef COPYLAB_CLOCK_H
#define COPYLAB_CLOCK_H

#include <stdint.h>
#include <time.h>

uint64_t now_ns(void);
/* CLOCK's reading in nanoseconds (the calibration programs read the monotonic and the thread's CPU clock). */
double clock_ns(clockid_t clock);
void sleep_seconds(double seconds);

#endif
