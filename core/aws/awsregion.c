/*
 * awsregion.c - the region from the environment or the AWS profile, checked
 * and named by its source (awsregion.h).
 */
#include "awsregion.h"

#include "awsconfig.h"
#include "buf.h"
#include "cnum.h"
#include "escape.h"
#include "regionname.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
awsregion_env(const char **name)
{
    const char *v = awsconfig_env(*name = "AWS_REGION");
    return v != NULL ? v : awsconfig_env(*name = "AWS_DEFAULT_REGION");
}

int
awsregion_check(const char *src, const char *region, char *why, size_t whylen)
{
    if (regionname_ok(region)) {
        return 0;
    }
    struct buf shown = BUF_INIT; /* a control character is shown escaped */
    escape_unquoted(&shown, region, strnlen(region, 64));
    snprintf(why, whylen, "%s=%s%s: not a region name (" REGIONNAME_RULE ")", src,
             shown.failed ? "?" : buf_str(&shown), strlen(region) > 64 ? "..." : "");
    buf_free(&shown);
    return -1;
}

/* The shared config file's region for profile: 1, 0 or -1 as
 * awsregion_resolve, why naming the file and section. */
static int
profile_region(const char *profile, char **out, char *why, size_t whylen)
{
    const char *shown = "~/.aws/config", *name = awsconfig_profile_name(profile);
    char *path = awsconfig_path(AWSCONFIG_CONFIG, &shown), src[512];
    free(path); /* only its name, for messages */
    int rc = awsconfig_profile_value(profile, "region", out);
    if (rc < 0) {
        snprintf(why, whylen, "%s: %s", shown, cnum_strerror(errno));
        return -1;
    }
    snprintf(src, sizeof(src), "%.300s, [%s%.150s] region", shown,
             strcmp(name, "default") == 0 ? "" : "profile ", name);
    if (rc == 1 && awsregion_check(src, *out, why, whylen) != 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return rc;
}

int
awsregion_resolve(const char *profile, char **out, char *why, size_t whylen)
{
    const char *name = NULL, *v = awsregion_env(&name);
    *out = NULL;
    if (v == NULL) {
        return profile_region(profile, out, why, whylen);
    }
    if (awsregion_check(name, v, why, whylen) != 0) {
        return -1;
    }
    if ((*out = strdup(v)) == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 1;
}
