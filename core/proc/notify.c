/*
 * notify.c - sd_notify wrappers (see notify.h). Failures are ignored on
 * purpose: systemd not listening must never stop the worker.
 */
#include "notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

void
notify_ready(const char *status)
{
    sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void
notify_reloading(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* MONOTONIC_USEC lets newer systemd (253+) match RELOADING=1 to the reload. */
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
               (unsigned long long) ts.tv_sec * 1000000ull +
                   (unsigned long long) ts.tv_nsec / 1000);
}

void
notify_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=stopping: draining in-flight jobs");
}
