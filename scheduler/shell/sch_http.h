/* The shell's HTTP client for sessions (sch_http.c). */
#ifndef SCH_HTTP_H
#define SCH_HTTP_H

#include "sch_framework.h"

/* Blocking POSTs with libcurl; for a session on a worker thread. */
extern const sch_http sch_shell_http;

#endif
