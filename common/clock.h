/* The one monotonic clock helper of every Cove binary.  Deadlines and
 * durations use CLOCK_MONOTONIC: the wall clock can jump (and a restored
 * guest's host sets it). */
#ifndef COVE_CLOCK_H
#define COVE_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds and in milliseconds. */
int64_t mono_ns(void);
int64_t mono_ms(void);

#endif
