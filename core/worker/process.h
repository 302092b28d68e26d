/*
 * process.h - a worker process from start to exit (see process.c).
 */
#ifndef TWICE_PROCESS_H
#define TWICE_PROCESS_H

/* Entry point of a worker process (twiced --worker). Returns the exit code. */
int worker_main(int argc, char **argv);

#endif
