/*
 * notify.h - telling systemd what the master is doing (Type=notify):
 * READY=1, RELOADING=1, STOPPING=1 and a one-line STATUS=. Without
 * NOTIFY_SOCKET every call does nothing.
 */
#ifndef TWICE_NOTIFY_H
#define TWICE_NOTIFY_H

void notify_ready(const char *status);
void notify_reloading(void);
void notify_stopping(void);

#endif
