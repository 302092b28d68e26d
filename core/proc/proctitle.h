/*
 * proctitle.h - the title ps and top show for each process of twiced:
 * "twiced: master", "twiced: worker (generation 3)", "twiced: probe", so an
 * operator can tell whom to signal. Not for logging (log_set_role).
 */
#ifndef TWICE_PROCTITLE_H
#define TWICE_PROCTITLE_H

/*
 * Once, first thing in main: moves the environment and the argument strings
 * to the heap (argv[i] and environ then point there, so they stay valid),
 * making their original memory - what /proc/PID/cmdline shows - free for a
 * title. Without it, proctitle_set only sets the thread name.
 */
void proctitle_init(int argc, char **argv);

/* Set the title (cut to the space there is) and the command name ("twiced"). */
void proctitle_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
