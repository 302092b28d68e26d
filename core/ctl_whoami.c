/*
 * ctl_whoami.c - PLACEHOLDER for `twicectl whoami`, which another branch
 * writes (issue 11); that file replaces this one at merge. Only here so
 * that twicectl links. Not an implementation.
 */
#include "ctl.h"

#include <stdio.h>

int
ctl_whoami(struct ctl *c, int argc, char **argv)
{
    (void) c;
    (void) argc;
    (void) argv;
    fprintf(stderr, "twicectl: whoami: not implemented yet\n");
    return CTL_FAIL;
}
