/* Stands in for <microhttpd.h> when a pure core is compiled (see common/meson.build): cores decide,
 * shells do the I/O, so reaching for this header from a core is a build error. */
#error                                                                                             \
    "a pure core file may not include <microhttpd.h>: do the I/O in the shell and pass the result in"
