/*
 * twice-config-doc.c - a build tool, not installed: writes twice.conf(5)
 * from its template and the settings table (config_doc.c), so the manual
 * lists exactly the settings, ranges and defaults the code has.
 *
 *   twice-config-doc TEMPLATE OUTPUT
 */
#include "cnum.h"
#include "config_doc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    char err[512] = "";
    if (argc != 3) {
        fprintf(stderr, "usage: twice-config-doc TEMPLATE OUTPUT\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (in == NULL) {
        fprintf(stderr, "twice-config-doc: %s: %s\n", argv[1], cnum_strerror(errno));
        return 1;
    }
    FILE *out = fopen(argv[2], "w");
    if (out == NULL) {
        fprintf(stderr, "twice-config-doc: %s: %s\n", argv[2], cnum_strerror(errno));
        fclose(in);
        return 1;
    }
    int rc = config_doc_man(in, out, err, sizeof(err));
    fclose(in);
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof(err), "%s: %s", argv[2], cnum_strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "twice-config-doc: %s: %s\n", argv[1], err);
        remove(argv[2]); /* no half page for the build to install */
        return 1;
    }
    return 0;
}
