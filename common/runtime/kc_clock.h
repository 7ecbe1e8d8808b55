/* The shells' one clock: wall time (CLOCK_REALTIME, for timestamps written to the API and
 * compared with the API's) and monotonic time (CLOCK_MONOTONIC, for durations). A pure core
 * never calls these (kc_core.h poisons the C library's clock and this header lives in the
 * runtime, out of a core's reach): its shell reads the time here and passes it in.
 *
 * Tests stand the clock still with kc_clock_fake and move it with kc_clock_advance, so a
 * shell's use of "now" is checked without sleeping. */
#ifndef KC_CLOCK_H
#define KC_CLOCK_H

#include <stdint.h>

#include "kc_time.h"

/* A wall time split the way RFC 3339 writes it: whole Unix seconds (floor, so a time before
 * the epoch has nsec in [0, 1e9) too) and the nanoseconds within that second. */
typedef struct {
  int64_t sec;
  int32_t nsec;
} kc_walltime;

kc_walltime kc_clock_wall(void);
/* The wall time as Unix nanoseconds, milliseconds (floor) and seconds (floor). */
int64_t kc_clock_wall_ns(void);
int64_t kc_clock_wall_ms(void);
int64_t kc_clock_wall_s(void);
/* Nanoseconds since an arbitrary origin that never moves backwards (not the wall clock). */
uint64_t kc_clock_mono_ns(void);
/* CPU time the calling thread has used, in nanoseconds (never faked: what a stretch of work
 * cost, however long the machine kept the thread waiting). 0 if unknown. */
uint64_t kc_clock_thread_cpu_ns(void);

/* The wall time as metav1.Time ("2026-11-29T16:01:51Z") and metav1.MicroTime
 * ("2026-11-29T16:01:51.123456Z") into buf. */
void kc_clock_rfc3339(char buf[KC_TIME_LEN]);
void kc_clock_rfc3339_micro(char buf[KC_TIME_LEN]);

/* Test hook: from now on both clocks read the given values and stand still until advanced. */
void kc_clock_fake(int64_t wall_ns, uint64_t mono_ns);
/* Moves a fake clock forward by ns (both clocks; the monotonic one never goes back, so a
 * negative ns moves only the wall clock, as a host's clock step would). No-op when real. */
void kc_clock_advance(int64_t ns);
/* Back to the host's clocks. */
void kc_clock_real(void);

#endif
