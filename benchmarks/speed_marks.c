/* Callgrind client requests for benchmarks/speed_check.py, called through ctypes: the counted
 * region of each path lies between speed_zero() and speed_dump(name). Outside valgrind each
 * request is a few no-op instructions. */
#include <valgrind/callgrind.h>

void speed_start(void) { CALLGRIND_START_INSTRUMENTATION; }

void speed_zero(void) { CALLGRIND_ZERO_STATS; }

void speed_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
