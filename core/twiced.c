/*
 * twiced.c - the daemon's entry point: command line only. What runs is in
 * master.c (supervision), worker.c (jobs) and probe.c (config checks).
 */
#include "version.h"

#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("twiced %s\n", TWICE_VERSION);
        return 0;
    }
    return 0;
}
