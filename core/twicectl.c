/*
 * twicectl.c - the operator CLI's entry point.
 */
#include "version.h"

#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("twicectl %s\n", TWICE_VERSION);
        return 0;
    }
    return 0;
}
